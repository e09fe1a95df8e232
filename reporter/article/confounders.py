"""Confounders of a comparison: precision settings and GPU state that differ between its sides.

Pure functions of two sides' case rows (their ``settings``) and ``gpu_state`` rows: no
I/O, no rendering. ``compute_case_confounders`` gives, per case compared, the notes that
warn of something other than the stack that could explain a difference:

* ``PRECISION_DIFFERS``: the case's *effective* float32 precision differs (TF32 for
  cuBLAS or cuDNN, after ``NVIDIA_TF32_OVERRIDE`` and ``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE``
  are applied), or its matmul precision setting does, in a library the case runs in
  (a matmul: cuBLAS; a convolution: cuDNN; a model: both);
* ``GPU_THROTTLED``: a side ran while the GPU reported a power, thermal or hardware
  slowdown reason;
* ``GPU_SHARED``: a side ran with other compute processes on the GPU;
* ``CLOCKS_DIFFER``: the sides' median SM clocks differ by more than ``CLOCK_TOLERANCE``;
* ``METHOD_DIFFERS``: a setting of the case's method differs (``cudnn_benchmark`` for a
  convolution: imagebench 0.1's conv2d ran cuDNN's autotuner, later versions the stack's
  default heuristics).

``compute_confounder_summary`` says which of these are widespread enough for the
article's headline, and ``compute_precision_changes`` gives the what-changed rows for
the stacks' precision defaults.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from runformat.vocabulary import THROTTLE_REASONS, Note, NoteCode

CLOCK_TOLERANCE = 0.02  # SM clocks differing by more than 2% between sides
# A confounder is widespread (named in the headline) when it touches at least this share
# of the cases compared, and at least WIDESPREAD_MIN_CASES of them.
WIDESPREAD_FRACTION = 0.25
WIDESPREAD_MIN_CASES = 2
# Settings shown in the what-changed table, in this order (the effective TF32 values first).
PRECISION_KEYS = (
    "tf32_matmul_effective",
    "tf32_cudnn_effective",
    "matmul_allow_tf32",
    "cudnn_allow_tf32",
    "float32_matmul_precision",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
)
# Case ids whose regime is named by the case (not the stack's defaults).
_REGIME_MARKERS = ("dtype=fp32-strict", "dtype=tf32")
_PINNED_WORKLOADS = ("cpu_vs_gpu",)  # pins strict float32 whatever the stack's defaults
# The precision settings a workload's figures depend on: a matmul runs in cuBLAS, a
# convolution in cuDNN; any other workload (a model) in both.
PRECISION_NOTE_KEYS = ("tf32_matmul_effective", "tf32_cudnn_effective", "float32_matmul_precision")
# Settings of a workload's method (not of the stack) its figures depend on.
_METHOD_KEYS = {"conv2d": ("cudnn_benchmark",)}
_SETTING_KEYS = PRECISION_KEYS + tuple(k for keys in _METHOD_KEYS.values() for k in keys)
_RELEVANT_KEYS = {
    "matmul": ("tf32_matmul_effective", "float32_matmul_precision"),
    "conv2d": ("tf32_cudnn_effective",),
}


def effective_tf32(settings: Mapping[str, Any]) -> dict[str, bool | None]:
    """Whether TF32 is in effect for cuBLAS matmuls and for cuDNN, from recorded settings.

    ``NVIDIA_TF32_OVERRIDE=0`` turns TF32 off in both libraries whatever torch's flags say;
    ``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1`` turns it on for cuBLAS; otherwise torch's
    ``allow_tf32`` flags (and a matmul precision of ``high`` or ``medium``) decide.
    ``None`` where the settings do not say.
    """
    off = str(settings.get("NVIDIA_TF32_OVERRIDE")) == "0"
    matmul_flag = settings.get("matmul_allow_tf32")
    precision = settings.get("float32_matmul_precision")
    cudnn_flag = settings.get("cudnn_allow_tf32")
    if matmul_flag is None and precision is None:
        matmul = None
    else:
        matmul = bool(matmul_flag) or precision in ("high", "medium") or str(settings.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")) == "1"
        matmul = matmul and not off
    cudnn = None if cudnn_flag is None else bool(cudnn_flag) and not off
    return {"tf32_matmul_effective": matmul, "tf32_cudnn_effective": cudnn}


def _parse(settings: Any) -> dict[str, Any] | None:
    if settings is None or (isinstance(settings, float) and np.isnan(settings)):
        return None
    try:
        value = json.loads(settings)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    return {**value, **effective_tf32(value)}


def _mode(values: Iterable[Any]) -> Any:
    counts = Counter(json.dumps(v, sort_keys=True) for v in values)
    return json.loads(counts.most_common(1)[0][0]) if counts else None


def _case_settings(cases: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per case id: each precision key's most common value over the side's ok attempts."""
    out: dict[str, dict[str, Any]] = {}
    if cases.empty or "settings" not in cases:
        return out
    ok = cases[cases["status"].astype(str) == "ok"] if "status" in cases else cases
    parsed_of: dict[Any, dict[str, Any] | None] = {}  # each distinct settings text parsed once
    per_case: dict[str, list[dict[str, Any]]] = {}
    for case_id, text in zip(ok["case_id"].astype(str), ok["settings"]):
        if isinstance(text, str):
            if text not in parsed_of:
                parsed_of[text] = _parse(text)
            parsed = parsed_of[text]
        else:
            parsed = _parse(text)
        if parsed is not None:
            per_case.setdefault(case_id, []).append(parsed)
    for case_id in sorted(per_case):
        parsed_list = per_case[case_id]
        out[case_id] = {k: _mode(p.get(k) for p in parsed_list) for k in _SETTING_KEYS}
    return out


@dataclass(frozen=True)
class GpuSide:
    """One side's GPU state for one case, over its processes."""

    throttle_reasons: tuple[str, ...]
    other_processes: int
    sm_clock_mhz: float | None


def _gpu_sides(gpu_state: pd.DataFrame, idle_siblings: int = 0) -> dict[str, GpuSide]:
    out: dict[str, GpuSide] = {}
    if gpu_state is None or gpu_state.empty:
        return out
    for case_id, g in gpu_state.groupby(gpu_state["case_id"].astype(str)):
        reasons = sorted({r for text in g["reasons"].astype(str) for r in text.split(",") if r in THROTTLE_REASONS})
        others = pd.to_numeric(g["other_processes_max"], errors="coerce").max() - idle_siblings
        clocks = pd.to_numeric(g["sm_clock_mhz_median"], errors="coerce").dropna()
        out[case_id] = GpuSide(
            throttle_reasons=tuple(reasons),
            other_processes=max(0, int(others)) if pd.notna(others) else 0,
            sm_clock_mhz=float(clocks.median()) if len(clocks) else None,
        )
    return out


def compute_case_confounders(
    baseline_cases: pd.DataFrame,
    candidate_cases: pd.DataFrame,
    baseline_gpu: pd.DataFrame | None = None,
    candidate_gpu: pd.DataFrame | None = None,
    *,
    case_ids: Iterable[str] | None = None,
    idle_siblings: Mapping[str, int] | None = None,
) -> dict[str, list[Note]]:
    """The confounder notes of every case compared (default: the case ids on both sides).

    Args:
        baseline_cases, candidate_cases: case rows (``case_id``, ``status``, ``settings``).
        baseline_gpu, candidate_gpu: ``gpu_state`` rows (``case_id``, ``reasons``,
            ``other_processes_max``, ``sm_clock_mhz_median``), or ``None``/empty.
        case_ids: the cases to examine.
        idle_siblings: per side, how many of the GPU's other processes were the
            recording's own idle workers: in an interleaved recording of S stacks, the
            other S - 1 stacks' workers hold a CUDA context while they wait for their
            next case (``interleaved_siblings``); they are not counted as sharing.

    Returns:
        ``{case_id: [Note, ...]}`` with an entry only for cases that have a note. Sides
        are named ``baseline`` and ``candidate`` in the notes' parameters.
    """
    settings = {"baseline": _case_settings(baseline_cases), "candidate": _case_settings(candidate_cases)}
    idle = dict(idle_siblings or {})
    gpu = {"baseline": _gpu_sides(baseline_gpu, idle.get("baseline", 0)),
           "candidate": _gpu_sides(candidate_gpu, idle.get("candidate", 0))}
    if case_ids is None:
        a = set(baseline_cases["case_id"].astype(str)) if not baseline_cases.empty else set()
        b = set(candidate_cases["case_id"].astype(str)) if not candidate_cases.empty else set()
        case_ids = sorted(a & b)
    workloads = {}
    for frame in (baseline_cases, candidate_cases):
        if not frame.empty and "workload" in frame:
            workloads.update(zip(frame["case_id"].astype(str), frame["workload"].astype(str)))
    out: dict[str, list[Note]] = {}
    for cid in case_ids:
        notes: list[Note] = []
        sa, sb = settings["baseline"].get(cid), settings["candidate"].get(cid)
        if sa is not None and sb is not None:
            for key in _RELEVANT_KEYS.get(workloads.get(cid, ""), PRECISION_NOTE_KEYS):
                if sa.get(key) is not None and sb.get(key) is not None and sa[key] != sb[key]:
                    notes.append(Note.of(NoteCode.PRECISION_DIFFERS, setting=key, baseline=sa[key], candidate=sb[key]))
            for key in _METHOD_KEYS.get(workloads.get(cid, ""), ()):
                if sa.get(key) is not None and sb.get(key) is not None and sa[key] != sb[key]:
                    notes.append(Note.of(NoteCode.METHOD_DIFFERS, setting=key, baseline=sa[key], candidate=sb[key]))
        for side in ("baseline", "candidate"):
            g = gpu[side].get(cid)
            if g is None:
                continue
            if g.throttle_reasons:
                notes.append(Note.of(NoteCode.GPU_THROTTLED, side=side, reasons=",".join(g.throttle_reasons)))
            if g.other_processes > 0:
                notes.append(Note.of(NoteCode.GPU_SHARED, side=side, count=g.other_processes))
        ga, gb = gpu["baseline"].get(cid), gpu["candidate"].get(cid)
        if ga and gb and ga.sm_clock_mhz and gb.sm_clock_mhz:
            if abs(gb.sm_clock_mhz / ga.sm_clock_mhz - 1) > CLOCK_TOLERANCE:
                notes.append(Note.of(NoteCode.CLOCKS_DIFFER, baseline_mhz=round(ga.sm_clock_mhz), candidate_mhz=round(gb.sm_clock_mhz)))
        if notes:
            out[cid] = notes
    return out


@dataclass(frozen=True)
class ConfounderSummary:
    """How many of the compared cases carry a confounder code, and whether that is widespread."""

    code: NoteCode
    cases: int
    total: int
    widespread: bool
    sides: tuple[str, ...]  # the sides the notes name (empty for codes about both)

    @property
    def fraction(self) -> float:
        return self.cases / self.total if self.total else 0.0

    def note(self) -> Note:
        """The article-level note for the headline (cases, total, sides)."""
        return Note.of(self.code, cases=self.cases, total=self.total, sides=",".join(self.sides))


def compute_confounder_summary(per_case: Mapping[str, list[Note]], total: int) -> list[ConfounderSummary]:
    """Per confounder code: the cases it touches out of ``total`` compared, widespread or not.

    Widespread: at least ``WIDESPREAD_FRACTION`` of the cases and at least
    ``WIDESPREAD_MIN_CASES`` of them. Codes in ``NoteCode`` order; codes absent are left out.
    """
    codes = (
        NoteCode.PRECISION_DIFFERS, NoteCode.GPU_THROTTLED, NoteCode.GPU_SHARED, NoteCode.CLOCKS_DIFFER,
        NoteCode.METHOD_DIFFERS,
    )
    out = []
    for code in codes:
        hit = [notes for notes in per_case.values() if any(n.code == code for n in notes)]
        if not hit:
            continue
        sides = sorted({str(n.values.get("side")) for notes in hit for n in notes if n.code == code and "side" in n.values})
        widespread = len(hit) >= WIDESPREAD_MIN_CASES and total > 0 and len(hit) / total >= WIDESPREAD_FRACTION
        out.append(ConfounderSummary(code, len(hit), total, widespread, tuple(sides)))
    return out


@dataclass(frozen=True)
class PrecisionChange:
    """A what-changed row: a precision default that differs between the two stacks."""

    setting: str
    baseline: Any
    candidate: Any


def compute_precision_defaults(cases: pd.DataFrame) -> dict[str, Any]:
    """A side's precision defaults: each key's most common value over its stack-default cases.

    Stack-default cases are those whose id names no regime (not ``fp32-strict`` or
    ``tf32``) of workloads that do not pin one; ``{}`` when no case recorded settings.
    """
    if cases.empty or "settings" not in cases:
        return {}
    ids = cases["case_id"].astype(str)
    mask = ~ids.str.contains("|".join(_REGIME_MARKERS), regex=True)
    if "workload" in cases:
        mask &= ~cases["workload"].astype(str).isin(_PINNED_WORKLOADS)
    parsed = [p for p in (_parse(s) for s in cases.loc[mask, "settings"]) if p is not None]
    if not parsed:
        return {}
    return {k: _mode(p.get(k) for p in parsed) for k in PRECISION_KEYS}


def compute_precision_changes(baseline_cases: pd.DataFrame, candidate_cases: pd.DataFrame) -> list[PrecisionChange]:
    """What-changed rows for the precision defaults that differ between the two sides.

    A side with no recorded settings (a run from before settings were recorded) gives
    no rows: what it ran with is not known, only that its ``fp32`` cases were strict.
    """
    a, b = compute_precision_defaults(baseline_cases), compute_precision_defaults(candidate_cases)
    if not a or not b:
        return []
    return [PrecisionChange(k, a.get(k), b.get(k)) for k in PRECISION_KEYS if a.get(k) != b.get(k)]


def interleaved_siblings(runs: Iterable[str], environment: pd.DataFrame) -> int:
    """How many workers of other stacks ran beside a side's cases: for runs recorded with
    ``--interleave``, the number of other runs of their ``interleave_group`` (schema 2) or,
    for schema 1, of runs marked interleaved that started within a minute of them (at least
    one); 0 for runs recorded alone."""
    run_ids = {str(r) for r in runs}
    if environment is None or environment.empty or not run_ids:
        return 0
    env = environment[environment["section"].astype(str) == "run"]
    info = {(str(r), str(k)): str(v) for r, k, v in zip(env["run_id"], env["key"], env["value"])}
    most = 0
    for run in run_ids:
        if info.get((run, "interleaved")) != "True":
            continue
        group = info.get((run, "interleave_group"))
        if group:
            others = {r for (r, k), v in info.items() if k == "interleave_group" and v == group and r != run}
            most = max(most, len(others))
        else:
            most = max(most, 1)
    return most

