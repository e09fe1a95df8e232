"""Suites: which workloads a run measures, and the timing policy it measures them with.

Each workload scales its own sizes by the suite name (``smoke`` is the tiny scale tests
use). ``default_suite`` picks what ``collector run`` with no ``--suite`` runs. The policies
are part of the run format (``runformat.policy``): the reporter reads a suite's policy too.
"""

from __future__ import annotations

from dataclasses import dataclass

from runformat.policy import SUITE_POLICIES, TimingPolicy

MICRO = ("matmul", "conv2d", "memory", "cpu_vs_gpu")
END_TO_END = (
    "resnet50_train",
    "bert_train",
    "compile",
    "amp",
    "dataloader",
    "inference",
    "concurrent_inference",
    "allocator",
    "multigpu",
    "max_batch",
    "checkpointing",
    "numerics",
)


@dataclass(frozen=True)
class Suite:
    """A named selection of workloads and how hard to measure them."""

    name: str
    description: str
    workloads: tuple[str, ...]
    policy: TimingPolicy
    timeout_scale: float = 1.0


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite(
            "smoke",
            "tiny sizes, few samples: checks that every workload runs (used by the tests)",
            MICRO + END_TO_END,
            SUITE_POLICIES["smoke"],
            timeout_scale=0.5,
        ),
        Suite(
            "cpu",
            "the CPU default: small sizes, sized to finish in about two minutes on 2 cores",
            MICRO + END_TO_END,
            SUITE_POLICIES["cpu"],
            timeout_scale=0.5,
        ),
        Suite(
            "quick",
            "the published write-ups' headline cases at full size on one GPU, a few minutes",
            MICRO + END_TO_END,
            SUITE_POLICIES["quick"],
        ),
        Suite(
            "standard",
            "every size of the microbenchmarks and the main end-to-end cases",
            MICRO + END_TO_END,
            SUITE_POLICIES["standard"],
        ),
        Suite(
            "full",
            "every case of every workload",
            MICRO + END_TO_END,
            SUITE_POLICIES["full"],
            timeout_scale=1.5,
        ),
    )
}


def default_suite(device_type: str) -> str:
    """``cpu`` without a GPU, ``standard`` with one."""
    return "standard" if device_type == "cuda" else "cpu"
