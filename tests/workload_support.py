"""Shared by the workload tests: a CPU device, a real Context, and what a case recorded."""

from __future__ import annotations

import math

from collector.context import Context
from collector.suites import SUITES
from collector.workloads import DeviceInfo

INFO = DeviceInfo(
    type="cpu", name="cpu", cpu_count=2, bf16=True, extras={"torchvision": True, "transformers": True, "pynvml": False}
)


def make_ctx(suite: str = "smoke", data_dir: str | None = None) -> Context:
    """A real Context on the CPU with the suite's timing policy."""
    return Context(info=INFO, suite=suite, policy=SUITES[suite].policy, data_dir=data_dir)


def recorded(ctx: Context) -> dict[str, list[float]]:
    """The case's samples by metric; every value finite, over at least one iteration."""
    out: dict[str, list[float]] = {}
    for name, value, iterations in ctx.recorded.samples:
        assert math.isfinite(value)
        assert iterations >= 1
        out.setdefault(name, []).append(value)
    return out
