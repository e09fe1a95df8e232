"""Names the collector and the reporter share beyond the table layouts of ``schema``.

Verdicts, the codes of the notes a comparison row can carry, the analyses a row can be
computed by, the workload families, the fingerprint keys a reader is shown and the GPU's
throttle reasons. Like ``schema`` this module imports only the standard library, so an old
run is read by what it recorded and every reader agrees on what a word means.

A note is a code plus parameters, never prose: the reporter's en/zh message catalogues
render it (``[notes]`` tables, one message per ``NoteCode`` value, formatted with the
note's parameters).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping


class Verdict(str, enum.Enum):
    """What a comparison row (or a geomean) concludes.

    ``BETTER``/``WORSE``: significant after the article's false-discovery-rate control
    *and* the ratio's CI lies wholly outside the noise band. ``EQUIVALENT``: not a call,
    and the CI lies wholly inside the equivalence band (two one-sided tests: a change
    beyond the band is ruled out). ``INCONCLUSIVE``: neither a call nor inside the band
    (the CI reaches beyond the band: these runs cannot tell).
    ``TOO_FEW``: fewer than two replicate units on a side, so no between-unit variation
    can be estimated: an estimate is shown, never a verdict. ``CHANGED``/``UNCHANGED``:
    deterministic metrics (counts, checksums, sizes in bytes that every unit reports
    identically), compared for equality with no CI. ``NO_RATIO``: values with no ratio
    (zero or negative) that differ between the sides.

    Before equivalence testing, ``EQUIVALENT`` and ``INCONCLUSIVE`` were one verdict, "no
    significant difference"; what was "inconclusive" then is ``NO_RATIO`` now.
    """

    BETTER = "better"
    WORSE = "worse"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"
    TOO_FEW = "not enough replicates"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NO_RATIO = "no ratio"

    @property
    def is_call(self) -> bool:
        """True for the verdicts that claim a difference in performance."""
        return self in (Verdict.BETTER, Verdict.WORSE)


VERDICTS = tuple(v.value for v in Verdict)
# The verdicts of rows these runs cannot settle: counted together as "inconclusive".
UNSETTLED = (Verdict.INCONCLUSIVE, Verdict.NO_RATIO, Verdict.TOO_FEW)


class Analysis(str, enum.Enum):
    """How a row's ratio and CI were computed.

    ``PAIRED``: both sides come from one interleaved recording; processes are paired by
    round and the paired log differences are analysed. ``HIERARCHICAL``: independent
    sides; per-process log medians with variance at every level present (runs, then
    processes within runs). ``DETERMINISTIC``: every unit recorded the same value on each
    side; compared for equality. ``ESTIMATE``: too few units for a test; the ratio of the
    estimates only.
    """

    PAIRED = "paired"
    HIERARCHICAL = "hierarchical"
    DETERMINISTIC = "deterministic"
    ESTIMATE = "estimate"


class NoteCode(str, enum.Enum):
    """Why a row reads as it does; each code's parameters are listed beside it."""

    # too few replicate units: n_baseline, n_candidate, needed (processes per side)
    TOO_FEW_UNITS = "too_few_units"
    # one run a side: run-to-run variation is not in the CI (n_baseline_runs, n_candidate_runs)
    RUN_LEVEL_NOT_COVERED = "run_level_not_covered"
    # significant, but the CI reaches into the noise band: noise (fraction)
    WITHIN_NOISE = "within_noise"
    # zero or negative values: no ratio is defined
    NONPOSITIVE = "nonpositive"
    # deterministic values differ: baseline, candidate
    VALUE_CHANGED = "value_changed"
    # paired by round: n_pairs
    PAIRED_ROUNDS = "paired_rounds"
    # the effective precision settings differ between the sides: setting, baseline, candidate
    PRECISION_DIFFERS = "precision_differs"
    # a side ran throttled: side, reasons (comma-separated)
    GPU_THROTTLED = "gpu_throttled"
    # a side shared the GPU with other processes: side, count
    GPU_SHARED = "gpu_shared"
    # SM clocks differ between the sides by more than 2%: baseline_mhz, candidate_mhz
    CLOCKS_DIFFER = "clocks_differ"
    # one run a side, run-to-run variation borrowed from other runs of the case on the same
    # device: runs (how many runs the borrowed component rests on)
    RUN_LEVEL_BORROWED = "run_level_borrowed"
    # inconclusive, and the CI reaches beyond the wide band: band (fraction)
    TOO_NOISY = "too_noisy"
    # the CI shown is at the article's false-coverage-rate-adjusted level (Benjamini &
    # Yekutieli 2005), not 95%, so that it agrees with the corrected test: level (fraction)
    ADJUSTED_INTERVAL = "adjusted_interval"
    # the same setting measured by another workload of the article reads otherwise (one of the
    # two is a call): other (that row's label), verdict (its verdict's key), ratio (its ratio)
    DISAGREES = "disagrees"
    # a setting of the case's method differs between the sides (cuDNN's autotuner for a
    # convolution, changed by an imagebench version): setting, baseline, candidate
    METHOD_DIFFERS = "method_differs"


@dataclass(frozen=True)
class Note:
    """A note on a row: a code and its parameters (rendered by the message catalogues)."""

    code: NoteCode
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, code: NoteCode, **params: Any) -> "Note":
        return cls(NoteCode(code), tuple(sorted(params.items())))

    @property
    def values(self) -> Mapping[str, Any]:
        return dict(self.params)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "params": dict(self.params)}


# ---- workload families and article sections ---------------------------------------------------

# The family a workload belongs to, in the order articles present them. A run records its
# cases' family (schema 2), so an old run is grouped by what it recorded.
FAMILIES = (
    "basic",  # matmul, conv, memory ops
    "training",  # end-to-end training steps
    "compile",  # torch.compile
    "amp",  # mixed precision
    "data",  # data loading
    "multigpu",  # DataParallel, DDP
    "inference",  # latency, concurrency
    "memory",  # allocator, largest batch, checkpointing
    "numerics",  # numerical drift
)
# The family of a workload no registry knows (recorded by another imagebench version).
OTHER_FAMILY = "other"

# The sections of an article after "environment and method", and the families in each.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("basic", ("basic",)),
    ("training", ("training", "memory")),
    ("more", ("compile", "amp", "data", "multigpu")),
    ("inference", ("inference",)),
    ("numerics", ("numerics",)),
    (OTHER_FAMILY, (OTHER_FAMILY,)),
)


def section_of(family: str) -> str:
    """The article section a family is shown in (``other`` for an unknown family)."""
    for key, families in SECTIONS:
        if family in families:
            return key
    return OTHER_FAMILY


# ---- the fingerprint keys a reader is shown ----------------------------------------------------


class ValueFormat(str, enum.Enum):
    """How a fingerprint value is shown: as recorded, or decoded."""

    TEXT = "text"
    CUDNN_VERSION = "cudnn_version"  # torch.backends.cudnn.version(): 92400 -> 9.24.0
    BYTES = "bytes"  # a size in bytes


@dataclass(frozen=True)
class FingerprintKey:
    """A fingerprint entry articles show: where it is recorded and how it is read.

    ``name`` is the key of its label in the reporter's message catalogues
    (``[stack] <name>``); ``confounder`` marks entries that are not part of the software
    stack, whose difference between two sides makes an article more than a comparison
    of stacks.
    """

    name: str
    section: str
    key: str
    format: ValueFormat = ValueFormat.TEXT
    confounder: bool = False


FINGERPRINT_KEYS: tuple[FingerprintKey, ...] = (
    FingerprintKey("torch", "torch", "version"),
    FingerprintKey("cuda", "cuda", "runtime"),
    FingerprintKey("cudnn", "cuda", "cudnn", ValueFormat.CUDNN_VERSION),
    FingerprintKey("nccl", "cuda", "nccl"),
    FingerprintKey("driver", "driver", "version", confounder=True),
    FingerprintKey("gpu", "gpu0", "name", confounder=True),
    FingerprintKey("gpu_count", "gpu", "count", confounder=True),
    FingerprintKey("cpu", "cpu", "model", confounder=True),
    FingerprintKey("cpu_cores", "cpu", "logical_cores", confounder=True),
    FingerprintKey("memory", "memory", "total_bytes", ValueFormat.BYTES),
    FingerprintKey("host", "host", "hostname"),
    FingerprintKey("image", "container", "image"),
    FingerprintKey("python", "python", "version"),
    FingerprintKey("os", "os", "distribution"),
    FingerprintKey("kernel", "os", "kernel"),
    FingerprintKey("suite", "run", "suite"),
    FingerprintKey("processes", "run", "processes"),
)
FINGERPRINT: Mapping[str, FingerprintKey] = {k.name: k for k in FINGERPRINT_KEYS}

# Fingerprint entries that differ between any two runs and say nothing about the stack.
VOLATILE_SECTIONS = ("run",)
VOLATILE_KEYS = frozenset({
    ("command", "argv"),
    ("collect_env", "nvidia_gpu_models"),
    # The collector's own bookkeeping for its workers, recorded by earlier runs.
    ("env", "IMAGEBENCH_PARENT_PID"),
    ("env", "IMAGEBENCH_PRELOAD"),
    ("env", "IMAGEBENCH_FORK_SERVER"),
    ("imagebench", "git_commit"),
})
VOLATILE_KEY_SUFFIXES = ("temperature_c", "clock_sm_mhz", "clock_mem_mhz", "uuid", "serial_sha256", "pci_bus_id")


def is_volatile(section: str, key: str) -> bool:
    """True for fingerprint entries that differ between any two runs of one stack."""
    return section in VOLATILE_SECTIONS or (section, key) in VOLATILE_KEYS or key.endswith(VOLATILE_KEY_SUFFIXES)


def format_cudnn_version(value: str) -> str:
    """``torch.backends.cudnn.version()`` as a dotted version: 92400 -> 9.24.0, 8902 -> 8.9.2.

    cuDNN 9 encodes major * 10000 + minor * 100 + patch; earlier releases major * 1000 +
    minor * 100 + patch. Anything else is returned as recorded.
    """
    text = str(value).strip()
    if not text.isdigit():
        return text
    v = int(text)
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


# ---- the GPU's state -----------------------------------------------------------------------------

# The clock-event ("throttle") reasons, as nvml.h names them, that mean the GPU ran slower than
# it could (power, thermal, HW slowdown). ``gpu_state.parquet`` records every reason seen during a
# case (``reasons``, comma-separated); a case recorded under one of these is flagged throttled by
# the collector and named as a confounder by the reporter.
THROTTLE_REASONS = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
