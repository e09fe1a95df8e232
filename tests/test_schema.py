"""The schema: round trips, validation errors, labels and case ids."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from runformat import schema as s


def _case(**changes):
    base = dict(
        case_id="matmul[dtype=fp32,n=64]", workload="matmul", params='{"dtype":"fp32","n":64}', process=0,
        status="ok", error=None, timing="perf_counter", device="cpu", started_at=1_764_683_000.25,
        duration_s=1.5, flops=2 * 64**3, bytes=None, items=None, items_unit=None,
    )
    base.update(changes)
    return s.CaseRecord(**base)


def _sample(**changes):
    base = dict(case_id="matmul[dtype=fp32,n=64]", process=0, metric="time", unit="s", better="lower", index=0, value=1e-5, iterations=100)
    base.update(changes)
    return s.SampleRecord(**base)


def test_round_trip_keeps_every_field():
    cases = s.records_to_table(s.CASES_FILE, [_case(), _case(process=1, status="failed", error="boom")], run_id="20261202T140512Z-3fa9c1", label="x")
    meta = s.validate_table(s.CASES_FILE, cases)
    assert meta == {"schema_version": str(s.SCHEMA_VERSION), "run_id": "20261202T140512Z-3fa9c1", "label": "x"}
    rows = cases.to_pylist()
    assert rows[0]["started_at"].timestamp() == pytest.approx(1_764_683_000.25)
    assert rows[1]["error"] == "boom" and rows[0]["flops"] == 2 * 64**3 and rows[0]["bytes"] is None
    samples = s.records_to_table(s.SAMPLES_FILE, [_sample(), _sample(index=1, value=2e-5)], run_id="r", label="x")
    s.validate_table(s.SAMPLES_FILE, samples)
    assert [r["value"] for r in samples.to_pylist()] == [1e-5, 2e-5]
    env = s.records_to_table(s.ENVIRONMENT_FILE, [s.EnvironmentEntry("torch", "version", "2.9.0")], run_id="r", label="x")
    assert s.validate_table(s.ENVIRONMENT_FILE, env)["run_id"] == "r"


def test_rejects_other_schema_versions_with_a_clear_message():
    table = s.records_to_table(s.SAMPLES_FILE, [_sample()], run_id="r", label="x")
    future = table.replace_schema_metadata({b"schema_version": b"99", b"run_id": b"r"})
    with pytest.raises(s.SchemaError, match=r"f\.parquet: schema_version 99 is newer"):
        s.validate_table(s.SAMPLES_FILE, future, where="f.parquet")
    with pytest.raises(s.SchemaError, match="no schema_version"):
        s.validate_table(s.SAMPLES_FILE, table.replace_schema_metadata({}))


@pytest.mark.parametrize(
    "sample, message",
    [
        (dict(value=math.nan), "non-finite"),
        (dict(value=math.inf), "non-finite"),
        (dict(value=0.0), "must be positive"),
        (dict(value=-1.0), "must be positive"),
        (dict(metric="bogus"), "unknown value"),
        (dict(unit="furlongs"), "unknown value"),
        (dict(iterations=0), "fewer than 1 iteration"),
    ],
)
def test_rejects_bad_sample_values(sample, message):
    table = s.records_to_table(s.SAMPLES_FILE, [_sample(**sample)], run_id="r", label="x")
    with pytest.raises(s.SchemaError, match=message):
        s.validate_table(s.SAMPLES_FILE, table)


def test_counts_may_be_zero():
    table = s.records_to_table(s.SAMPLES_FILE, [_sample(metric="graph_breaks", unit="count", value=0.0)], run_id="r", label="x")
    s.validate_table(s.SAMPLES_FILE, table)


def test_rejects_missing_and_mistyped_columns():
    table = s.records_to_table(s.CASES_FILE, [_case()], run_id="r", label="x")
    with pytest.raises(s.SchemaError, match="missing column 'status'"):
        s.validate_table(s.CASES_FILE, table.drop(["status"]))
    bad = table.set_column(table.schema.get_field_index("process"), "process", pa.array(["0"]))
    with pytest.raises(s.SchemaError, match="column 'process' has type string"):
        s.validate_table(s.CASES_FILE, bad)
    with pytest.raises(s.SchemaError, match="unknown value"):
        s.validate_table(s.CASES_FILE, s.records_to_table(s.CASES_FILE, [_case(status="great")], run_id="r", label="x"))


@pytest.mark.parametrize(
    "label, slug",
    [
        ("pytorch-2.9-cu124", "pytorch-2.9-cu124"),
        ("PyTorch 2.9 + CUDA 12.4", "PyTorch-2.9-CUDA-12.4"),
        ("../../etc/passwd", "etc-passwd"),
        ("/abs/path", "abs-path"),
        ("a\x00b", "a-b"),
        ("x" * 500, "x" * s.MAX_LABEL_LENGTH),
    ],
)
def test_sanitize_label(label, slug):
    assert s.sanitize_label(label) == slug


@pytest.mark.parametrize("label", ["", "...", "../..", "!!!", " "])
def test_sanitize_label_rejects_labels_without_a_name(label):
    with pytest.raises(s.SchemaError):
        s.sanitize_label(label)


def test_case_ids_are_stable_and_sorted():
    assert s.case_id_for("matmul", {"n": 4096, "dtype": "bf16"}) == "matmul[dtype=bf16,n=4096]"
    assert s.case_id_for("x", {"flag": True}) == "x[flag=true]"
    assert s.case_id_for("x", {}) == "x"
    assert s.params_to_json({"b": 1, "a": "z"}) == '{"a":"z","b":1}'


def test_every_metric_has_a_known_direction_and_unit():
    for m in s.METRICS.values():
        assert m.better in (s.BETTER_LOWER, s.BETTER_HIGHER, s.BETTER_NONE)
        assert m.unit in s.UNITS
    with pytest.raises(s.SchemaError, match="unknown metric"):
        s.metric("speed")


def test_schema_module_imports_neither_torch_nor_pandas():
    import subprocess
    import sys

    code = "import sys, runformat.schema; print('torch' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
