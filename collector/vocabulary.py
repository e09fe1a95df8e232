"""Names the collector and the reporter share beyond the table layouts of ``schema``.

Verdicts, the codes of the notes a comparison row can carry, and the analyses a row can
be computed by. Like ``schema`` this module imports only the standard library, so an old
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
    *and* the ratio's CI lies wholly outside the noise band. ``SAME``: neither holds.
    ``TOO_FEW``: fewer than two replicate units on a side, so no between-unit variation
    can be estimated: an estimate is shown, never a verdict. ``CHANGED``/``UNCHANGED``:
    deterministic metrics (counts, checksums, sizes in bytes that every unit reports
    identically), compared for equality with no CI. ``NO_RATIO``: values with no ratio
    (zero or negative) that differ between the sides.
    """

    BETTER = "better"
    WORSE = "worse"
    SAME = "no significant difference"
    TOO_FEW = "not enough replicates"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NO_RATIO = "inconclusive"

    @property
    def is_call(self) -> bool:
        """True for the verdicts that claim a difference in performance."""
        return self in (Verdict.BETTER, Verdict.WORSE)


VERDICTS = tuple(v.value for v in Verdict)


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
    # no significant difference, but the CI reaches beyond the wide band: band (fraction)
    TOO_NOISY = "too_noisy"


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
