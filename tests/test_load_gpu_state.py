"""The reader: gpu_state.parquet when present, and old strict fp32 case ids read as fp32-strict."""

from __future__ import annotations

import json
from dataclasses import replace

from runformat import schema as s
from runformat.archive import RunWriter
from reporter.data.load import load_archive
from tests.test_partfiles import case, gpu, samples

OLD = "matmul[dtype=fp32,n=64]"


def _run(tmp_path, label, settings, with_gpu):
    w = RunWriter.create(tmp_path / "runs", label)
    w.write_environment([s.EnvironmentEntry("run", "status", "complete")])
    c = replace(case(OLD), workload="matmul", params='{"dtype":"fp32","n":64}', settings=settings)
    w.write_cases([c], samples(OLD))
    if with_gpu:
        w.write(s.GPU_STATE_FILE, [gpu(OLD)])
    return w


def test_old_fp32_is_read_as_strict_and_new_fp32_as_the_default(tmp_path):
    _run(tmp_path, "old", None, with_gpu=True)
    _run(tmp_path, "new", json.dumps({"matmul_allow_tf32": False}), with_gpu=False)
    archive = load_archive(tmp_path / "runs")
    assert archive.problems == []
    ids = {(str(r.label), str(r.case_id), r.params) for r in archive.cases.itertuples()}
    assert ids == {("old", "matmul[dtype=fp32-strict,n=64]", '{"dtype":"fp32-strict","n":64}'),
                   ("new", OLD, '{"dtype":"fp32","n":64}')}
    old = archive.select("old")
    assert set(old.samples["case_id"].astype(str)) == {"matmul[dtype=fp32-strict,n=64]"}
    assert list(old.gpu_state["case_id"].astype(str)) == ["matmul[dtype=fp32-strict,n=64]"]
    assert old.gpu_state["sm_clock_mhz_median"].tolist() == [1980.0]
    assert archive.select("new").gpu_state.empty
