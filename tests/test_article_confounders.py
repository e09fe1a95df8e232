"""compute_article wires reporter.article.confounders in: per-case precision and GPU-state notes, the headline warning, what changed."""

from __future__ import annotations

import json
from dataclasses import replace

from runformat import schema as s
from runformat.archive import RunWriter
from runformat.vocabulary import NoteCode, Verdict
from reporter.article.compute import compute_article
from reporter.article.config import ComparisonSpec
from reporter.data.load import load_archive
from reporter.present.notes import note_text
from reporter.present.wording import in_language
from tests.test_partfiles import case, gpu, samples

DEFAULTS = {"matmul_allow_tf32": False, "cudnn_allow_tf32": True, "float32_matmul_precision": "highest",
            "NVIDIA_TF32_OVERRIDE": None, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": None}
STRICT = {**DEFAULTS, "cudnn_allow_tf32": False}
CASES = {  # case id: (params, settings, seconds at defaults, seconds with NVIDIA_TF32_OVERRIDE=0)
    "conv2d[dtype=fp32,layout=nchw]": ({"dtype": "fp32", "layout": "nchw"}, DEFAULTS, 0.5e-3, 1.4e-3),
    "conv2d[dtype=fp32,layout=channels_last]": ({"dtype": "fp32", "layout": "channels_last"}, DEFAULTS, 0.25e-3, 1.6e-3),
    "conv2d[dtype=fp32-strict,layout=nchw]": ({"dtype": "fp32-strict", "layout": "nchw"}, STRICT, 1.4e-3, 1.4e-3),
}
SPREAD = (1.0, 1.004, 0.996)  # per-process factors: three worker processes a side


def _run(root, label: str, override: bool, throttled: str | None = None) -> None:
    w = RunWriter.create(root, label)
    w.write_environment([s.EnvironmentEntry("run", "status", "complete"),
                         s.EnvironmentEntry("gpu", "name", "Test GPU")])
    cases, rows, states = [], [], []
    for cid, (params, settings, t_default, t_override) in CASES.items():
        recorded = {**settings, "NVIDIA_TF32_OVERRIDE": "0"} if override else settings
        for p, f in enumerate(SPREAD):
            cases.append(replace(case(cid, process=p), workload="conv2d", params=json.dumps(params),
                                 settings=json.dumps(recorded), device="cuda", timing="cuda_event"))
            rows += samples(cid, process=p, n=5, value=(t_override if override else t_default) * f)
            state = gpu(cid, process=p)
            if cid == throttled:
                state = {**state, "reasons": "hw_slowdown", "throttled": True}
            states.append(state)
    w.write_cases(cases, rows)
    w.write(s.GPU_STATE_FILE, states)


def test_precision_and_gpu_state_reach_the_rows_the_headline_and_what_changed(tmp_path) -> None:
    _run(tmp_path / "runs", "defaults", override=False)
    _run(tmp_path / "runs", "override-0", override=True, throttled="conv2d[dtype=fp32-strict,layout=nchw]")
    data = in_language(compute_article(load_archive(tmp_path / "runs"), ComparisonSpec("defaults", "override-0"),
                                       families={"conv2d": "basic"}), "en")
    rows = {r.case_id: r for sec in data.sections for b in sec.blocks for r in b.rows}
    codes = {cid: {n.code for n in r.notes} for cid, r in rows.items()}
    for cid in ("conv2d[dtype=fp32,layout=nchw]", "conv2d[dtype=fp32,layout=channels_last]"):
        assert rows[cid].verdict is Verdict.WORSE
        assert NoteCode.PRECISION_DIFFERS in codes[cid]
        note = next(n for n in rows[cid].notes if n.code is NoteCode.PRECISION_DIFFERS)
        assert note_text(note, "en") == "the precision setting TF32 in effect for convolutions (cuDNN) differs: on vs off"
        assert "baseline" not in note_text(note, "zh") and "on" not in note_text(note, "zh")
    strict = "conv2d[dtype=fp32-strict,layout=nchw]"
    assert not rows[strict].verdict.is_call
    assert NoteCode.PRECISION_DIFFERS not in codes[strict]
    assert NoteCode.GPU_THROTTLED in codes[strict]
    throttled = next(n for n in rows[strict].notes if n.code is NoteCode.GPU_THROTTLED)
    assert note_text(throttled, "zh").startswith("候选")
    # two of three cases ran at another precision: widespread, so the headline says so
    warnings = {n.code: n.values for n in data.headline.warnings}
    assert warnings[NoteCode.PRECISION_DIFFERS]["cases"] == 2 and warnings[NoteCode.PRECISION_DIFFERS]["total"] == 3
    assert NoteCode.GPU_THROTTLED not in warnings  # one case of three is not widespread
    changes = {key: (b, c) for key, b, c in data.changes}
    assert changes["settings.tf32_cudnn_effective"] == ("true", "false")
    assert changes["settings.NVIDIA_TF32_OVERRIDE"] == (None, "0")


def test_a_matmul_is_not_flagged_for_the_cudnn_setting() -> None:
    import pandas as pd

    from reporter.article.confounders import compute_case_confounders

    def side(settings):
        return pd.DataFrame([{"case_id": cid, "workload": w, "status": "ok", "settings": json.dumps(settings)}
                             for cid, w in (("matmul[dtype=fp32]", "matmul"), ("conv2d[dtype=fp32]", "conv2d"),
                                            ("train[dtype=fp32]", "train"))])

    notes = compute_case_confounders(side(DEFAULTS), side({**DEFAULTS, "NVIDIA_TF32_OVERRIDE": "0"}))
    assert set(notes) == {"conv2d[dtype=fp32]", "train[dtype=fp32]"}  # cuBLAS TF32 was off on both sides
