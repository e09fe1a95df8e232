"""Confounder notes: precision settings and GPU state that differ between a comparison's sides."""

from __future__ import annotations

import json

import pandas as pd

from runformat.vocabulary import NoteCode
from reporter.article.confounders import (
    compute_case_confounders,
    compute_confounder_summary,
    compute_precision_changes,
    effective_tf32,
)

DEFAULTS = {"matmul_allow_tf32": False, "cudnn_allow_tf32": True, "float32_matmul_precision": "highest",
            "NVIDIA_TF32_OVERRIDE": None, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": None}
STRICT = {**DEFAULTS, "cudnn_allow_tf32": False}


def cases(rows: dict[str, dict | None], processes: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        [{"case_id": cid, "workload": cid.split("[")[0], "status": "ok", "process": p,
          "settings": None if st is None else json.dumps(st)} for cid, st in rows.items() for p in range(processes)]
    )


def gpu(rows: dict[str, dict]) -> pd.DataFrame:
    base = {"reasons": "", "other_processes_max": 0, "sm_clock_mhz_median": 1980.0}
    return pd.DataFrame([{"case_id": cid, "process": p, **base, **r} for cid, r in rows.items() for p in range(3)])


CONV = "conv2d[dtype=fp32,pass=forward]"
CONV_STRICT = "conv2d[dtype=fp32-strict,pass=forward]"


def test_tf32_override_zero_turns_tf32_off_whatever_the_flags():
    assert effective_tf32(DEFAULTS) == {"tf32_matmul_effective": False, "tf32_cudnn_effective": True}
    assert effective_tf32({**DEFAULTS, "NVIDIA_TF32_OVERRIDE": "0"}) == {"tf32_matmul_effective": False, "tf32_cudnn_effective": False}
    assert effective_tf32({**DEFAULTS, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})["tf32_matmul_effective"] is True
    assert effective_tf32({**DEFAULTS, "float32_matmul_precision": "high"})["tf32_matmul_effective"] is True
    assert effective_tf32({}) == {"tf32_matmul_effective": None, "tf32_cudnn_effective": None}


def test_the_override_flags_the_default_conv_and_not_the_strict_one():
    override = {**DEFAULTS, "NVIDIA_TF32_OVERRIDE": "0"}
    strict_override = {**STRICT, "NVIDIA_TF32_OVERRIDE": "0"}
    notes = compute_case_confounders(cases({CONV: DEFAULTS, CONV_STRICT: STRICT}),
                                     cases({CONV: override, CONV_STRICT: strict_override}))
    assert list(notes) == [CONV]  # strict is strict on both sides: the env value alone is no warning
    (note,) = notes[CONV]
    assert note.code == NoteCode.PRECISION_DIFFERS
    assert note.values == {"setting": "tf32_cudnn_effective", "baseline": True, "candidate": False}


def test_a_convolution_measured_with_and_without_cudnns_autotuner_is_flagged():
    """imagebench 0.1's conv2d turned cudnn.benchmark on; later versions keep the stack's default."""
    old = {**DEFAULTS, "cudnn_benchmark": True}
    new = {**DEFAULTS, "cudnn_benchmark": False}
    matmul = "matmul[dtype=fp32,n=1024]"
    notes = compute_case_confounders(cases({CONV: old, matmul: old}), cases({CONV: new, matmul: new}))
    assert list(notes) == [CONV]  # a matmul does not run in cuDNN: its autotuner is no part of it
    (note,) = notes[CONV]
    assert note.code == NoteCode.METHOD_DIFFERS
    assert note.values == {"setting": "cudnn_benchmark", "baseline": True, "candidate": False}
    assert compute_case_confounders(cases({CONV: old}), cases({CONV: old})) == {}
    (summary,) = compute_confounder_summary(notes, total=2)
    assert summary.code == NoteCode.METHOD_DIFFERS and summary.widespread is False


def test_an_old_run_without_settings_gives_no_precision_note():
    assert compute_case_confounders(cases({CONV: None}), cases({CONV: DEFAULTS})) == {}


def test_gpu_state_notes_throttled_shared_and_clocks():
    a = gpu({"m1": {}, "m2": {"reasons": "gpu_idle,sw_power_cap"}, "m3": {}})
    b = gpu({"m1": {"sm_clock_mhz_median": 1900.0}, "m2": {}, "m3": {"other_processes_max": 2, "reasons": "gpu_idle"}})
    c = cases({"m1": DEFAULTS, "m2": DEFAULTS, "m3": DEFAULTS})
    notes = compute_case_confounders(c, c, a, b)
    assert [n.code for n in notes["m1"]] == [NoteCode.CLOCKS_DIFFER]
    assert notes["m1"][0].values == {"baseline_mhz": 1980, "candidate_mhz": 1900}
    assert [(n.code, n.values) for n in notes["m2"]] == [(NoteCode.GPU_THROTTLED, {"side": "baseline", "reasons": "sw_power_cap"})]
    assert [(n.code, n.values) for n in notes["m3"]] == [(NoteCode.GPU_SHARED, {"side": "candidate", "count": 2})]
    # 1.5% apart is within the tolerance
    close = gpu({"m1": {"sm_clock_mhz_median": 1950.0}})
    assert compute_case_confounders(c, c, gpu({"m1": {}}), close, case_ids=["m1"]) == {}


def test_summary_marks_a_confounder_widespread_from_a_quarter_of_the_cases():
    c = cases({f"m{i}": DEFAULTS for i in range(8)})
    throttled = gpu({f"m{i}": {"reasons": "hw_slowdown"} if i < 2 else {} for i in range(8)})
    notes = compute_case_confounders(c, c, throttled, gpu({f"m{i}": {} for i in range(8)}))
    (summary,) = compute_confounder_summary(notes, total=8)
    assert (summary.code, summary.cases, summary.total, summary.widespread, summary.sides) == (
        NoteCode.GPU_THROTTLED, 2, 8, True, ("baseline",))
    (rare,) = compute_confounder_summary({"m0": notes["m0"]}, total=8)
    assert not rare.widespread
    assert summary.note().values == {"cases": 2, "total": 8, "sides": "baseline"}


def test_what_changed_lists_the_precision_defaults_that_differ():
    a = cases({CONV: DEFAULTS, CONV_STRICT: STRICT})
    b = cases({CONV: {**DEFAULTS, "NVIDIA_TF32_OVERRIDE": "0"}, CONV_STRICT: {**STRICT, "NVIDIA_TF32_OVERRIDE": "0"}})
    rows = compute_precision_changes(a, b)
    assert [(r.setting, r.baseline, r.candidate) for r in rows] == [
        ("tf32_cudnn_effective", True, False), ("NVIDIA_TF32_OVERRIDE", None, "0")]
    assert compute_precision_changes(a, a) == []
    assert compute_precision_changes(cases({CONV: None}), b) == []


def test_the_idle_workers_of_an_interleaved_recording_are_not_sharing():
    """In an interleaved recording the other stack's worker holds a CUDA context while it
    waits: one other process a side is the recording's own, two means a real neighbour."""
    from reporter.article.confounders import interleaved_siblings

    env = pd.DataFrame([
        {"run_id": run, "section": "run", "key": k, "value": v}
        for run in ("a1", "b1") for k, v in (("interleaved", "True"), ("interleave_group", "g"))
    ] + [{"run_id": "solo", "section": "run", "key": "interleaved", "value": "False"}])
    assert interleaved_siblings(["a1"], env) == 1
    assert interleaved_siblings(["solo"], env) == 0
    c = cases({"m1": DEFAULTS, "m2": DEFAULTS})
    one, two = gpu({"m1": {"other_processes_max": 1}, "m2": {"other_processes_max": 2}}), gpu({"m1": {}, "m2": {}})
    notes = compute_case_confounders(c, c, one, two, idle_siblings={"baseline": 1, "candidate": 1})
    assert "m1" not in notes
    assert [(n.code, n.values) for n in notes["m2"]] == [(NoteCode.GPU_SHARED, {"side": "baseline", "count": 1})]
    # recorded alone, the same reading is a neighbour
    assert [n.code for n in compute_case_confounders(c, c, one, two)["m1"]] == [NoteCode.GPU_SHARED]
