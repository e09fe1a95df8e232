"""reporter.data.load: reading, validating and selecting runs of a synthetic archive."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runformat.archive import RunWriter, read_table
from runformat.schema import CASES_FILE, SAMPLES_FILE, SampleRecord
from reporter.errors import ReporterError
from reporter.data.load import RUN_COLUMNS, load_archive
from test_reporter_support import run_id, write_run

CASES = {"mm[n=1024]": [[1.0e-5, 1.1e-5, 1.05e-5]] * 3, "conv[k=3]": [[2.0e-3, 2.1e-3]] * 3}


@pytest.fixture
def archive_dir(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "stack-a", CASES, run_id=run_id(0), failed={"oom[n=9]": "CUDA out of memory"},
              environment={("container", "image"): "pytorch:2.11"})
    write_run(root, "stack-a", CASES, run_id=run_id(1, "123456"))
    write_run(root, "stack-b", CASES, run_id=run_id(2), device="cpu",
              environment={("gpu0", "name"): "", ("cpu", "model"): "Synthetic CPU"})
    return root


def test_loads_every_valid_run(archive_dir):
    a = load_archive(archive_dir)
    assert a.problems == []
    assert a.labels() == ["stack-a", "stack-b"]
    assert list(a.runs.columns) == list(RUN_COLUMNS)
    r = a.runs.set_index(a.runs["run_id"].astype(str))
    first = r.loc[run_id(0)]
    assert (first.label, first.status, first.suite, first.device_type, first.device_name) == (
        "stack-a", "complete", "synthetic", "cuda", "Synthetic GPU")
    assert (first.torch, first.cuda, first.cudnn, first.driver, first.hostname, first.image) == (
        "2.11.0+cu130", "13.0", "91000", "580.00", "test-host", "pytorch:2.11")
    assert (first.cases_ok, first.cases_failed, first.cases_total) == (2, 1, 3)
    assert first.started_at == pd.Timestamp("2026-12-02T14:05:12Z")
    other = r.loc[run_id(2)]
    assert (other.device_type, other.device_name, other.image) == ("cpu", "Synthetic CPU", None)
    assert len(a.samples) == 3 * (3 * 3 + 3 * 2)
    for col in ("label", "run_id", "case_id", "metric", "unit", "better"):
        assert isinstance(a.samples[col].dtype, pd.CategoricalDtype), col
    assert list(a.samples.columns[:2]) == ["label", "run_id"]
    assert set(a.environment.columns) == {"label", "run_id", "section", "key", "value"}
    assert {"label", "run_id", "case_id", "workload", "params", "process", "status", "flops"} <= set(a.cases.columns)


def test_select_label_and_run(archive_dir):
    a = load_archive(archive_dir)
    assert set(a.select("stack-a").runs["run_id"].astype(str)) == {run_id(0), run_id(1, "123456")}
    one = a.select(f"stack-a@{run_id(1, '123456')[:-3]}")  # a unique prefix
    assert list(one.runs["run_id"].astype(str)) == [run_id(1, "123456")]
    assert set(one.samples["run_id"].astype(str)) == {run_id(1, "123456")}
    assert one.selector.startswith("stack-a@")
    with pytest.raises(ReporterError, match=r"no label 'stack-c'.*labels: stack-a, stack-b"):
        a.select("stack-c")
    with pytest.raises(ReporterError, match="ambiguous"):
        a.select("stack-a@2026")
    with pytest.raises(ReporterError, match=r"no run 'nope' under label 'stack-a'; its runs: "):
        a.select("stack-a@nope")
    with pytest.raises(ReporterError, match="no label"):
        a.select("@x")


def _append(folder, kind, records):
    table, meta = read_table(folder / kind, kind)
    rows = table.to_pylist()
    if kind == CASES_FILE:
        for row in rows:
            row["started_at"] = row["started_at"].timestamp()
    RunWriter(folder=folder, run_id=meta["run_id"], label=meta["label"]).write(kind, rows + [r.__dict__ for r in records])


def test_ok_samples_leave_out_failed_and_unrecorded_attempts(archive_dir):
    folder = archive_dir / "stack-a" / run_id(0)
    _append(folder, SAMPLES_FILE, [
        SampleRecord("oom[n=9]", 0, "time", "s", "lower", 0, 1.0, 1),  # the attempt failed
        SampleRecord("late[n=1]", 0, "time", "s", "lower", 0, 1.0, 1),  # no case row yet (killed between writes)
    ])
    a = load_archive(archive_dir)
    assert {"oom[n=9]", "late[n=1]"} <= set(a.samples["case_id"].astype(str))
    ok = a.ok_samples()
    assert not {"oom[n=9]", "late[n=1]"} & set(ok["case_id"].astype(str))
    assert len(ok) == len(a.samples) - 2


@pytest.mark.parametrize(
    "values, reason",
    [
        ([[1.0, float("nan")]], "non-finite"),
        ([[1.0, float("inf")]], "non-finite"),
        ([[1.0, -2.0]], "must be positive"),
        ([[0.0, 1.0]], "must be positive"),
    ],
)
def test_invalid_values_are_reported_with_the_file_and_skipped(archive_dir, values, reason):
    write_run(archive_dir, "stack-bad", {"mm[n=1]": values}, run_id=run_id(5))
    a = load_archive(archive_dir)
    assert a.labels() == ["stack-a", "stack-b", "stack-bad"]  # listed, its samples skipped
    assert a.select("stack-bad").samples.empty and a.select("stack-bad").cases.empty
    (p,) = a.problems
    assert p.path.endswith("stack-bad/" + run_id(5) + "/samples.parquet")
    assert reason in p.reason
    with pytest.raises(ReporterError, match=f"--strict: 1 invalid run.*samples.parquet.*{reason}"):
        load_archive(archive_dir, strict=True)


def test_broken_runs_are_reported_and_the_rest_load(archive_dir):
    (archive_dir / "stack-x" / "not-a-run-id").mkdir(parents=True)
    missing = write_run(archive_dir, "stack-x", CASES, run_id=run_id(6))
    (missing / "cases.parquet").unlink()
    corrupt = write_run(archive_dir, "stack-x", CASES, run_id=run_id(7))
    (corrupt / "samples.parquet").write_bytes(b"not parquet at all")
    moved = write_run(archive_dir, "stack-x", CASES, run_id=run_id(8))
    moved.rename(moved.parent / run_id(9))  # metadata says run_id(8), the folder run_id(9)
    (archive_dir / ".probe-123.log").write_text("collector scratch file")
    (archive_dir / "README.md").write_text("notes")
    a = load_archive(archive_dir)
    reasons = {p.path.split("runs/", 1)[1]: p.reason for p in a.problems}
    assert reasons["stack-x/not-a-run-id"].startswith("folder name is not a run id")
    assert reasons[f"stack-x/{run_id(6)}/cases.parquet"] == "file missing"
    assert "not a readable Parquet file" in reasons[f"stack-x/{run_id(7)}/samples.parquet"]
    assert "does not match the folder name" in reasons[f"stack-x/{run_id(9)}/environment.parquet"]
    assert len(a.problems) == 4
    assert a.labels() == ["stack-a", "stack-b", "stack-x"]  # the run with corrupt samples is listed without them
    assert list(a.select("stack-x").runs["run_id"].astype(str)) == [run_id(7)]


def test_duplicate_run_ids_are_all_skipped(archive_dir):
    import shutil

    shutil.copytree(archive_dir / "stack-a" / run_id(0), archive_dir / "stack-copy" / run_id(0))
    a = load_archive(archive_dir)
    assert run_id(0) not in set(a.runs["run_id"].astype(str))
    assert sum("recorded 2 times" in p.reason for p in a.problems) == 2


def test_empty_and_missing_archives(tmp_path):
    empty = load_archive(tmp_path)
    assert empty.labels() == [] and empty.problems == []
    assert list(empty.runs.columns) == list(RUN_COLUMNS)
    assert {"label", "run_id", "value", "case_id"} <= set(empty.samples.columns)
    with pytest.raises(ReporterError, match="labels: none"):
        empty.select("anything")
    with pytest.raises(ReporterError, match="does not exist"):
        load_archive(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReporterError, match="is not a folder"):
        load_archive(tmp_path / "file")


def test_many_runs_keep_their_order_and_codes(tmp_path):
    root = tmp_path / "runs"
    rng = np.random.default_rng(3)
    for i in range(30):
        write_run(root, f"s{i % 3}", {"c[x=1]": [list(rng.lognormal(0, 0.1, 4))]}, run_id=run_id(i))
    a = load_archive(root)
    assert len(a.runs) == 30 and a.problems == []
    per_run = a.samples.groupby("run_id", observed=True).size()
    assert (per_run == 4).all()
    label_of = dict(zip(a.runs["run_id"].astype(str), a.runs["label"].astype(str)))
    pairs = a.samples[["run_id", "label"]].astype(str).drop_duplicates()
    assert all(label_of[r] == lab for r, lab in pairs.itertuples(index=False))


@pytest.mark.parametrize("dense", [True, False])
def test_bulk_attempt_checks_flag_exactly_the_runs_at_fault(monkeypatch, dense):
    """Two rows for one attempt, samples without their row, an ok attempt without samples:
    each flags its own run and no other, with the lookup table and with sorted keys."""
    import numpy as np
    import pyarrow as pa

    from reporter.data import load

    monkeypatch.setattr(load, "DENSE_SLACK", 1_000_000 if dense else -10**12)

    def run(attempts, sampled):
        cases = pa.table({"case_id": pa.array([c for c, _, _ in attempts]).dictionary_encode(),
                          "process": pa.array([p for _, p, _ in attempts], pa.int32()),
                          "status": pa.array([s for _, _, s in attempts])})
        samples = pa.table({"case_id": pa.array([c for c, _ in sampled for _ in range(3)], pa.string()).dictionary_encode(),
                            "process": pa.array([p for _, p in sampled for _ in range(3)], pa.int32())})
        return cases, samples

    good = run([("a", 0, "ok"), ("a", 1, "ok"), ("b", 0, "failed")], [("a", 0), ("a", 1)])
    runs = [
        good,
        run([("a", 0, "ok"), ("a", 0, "ok")], [("a", 0)]),  # an attempt with two rows
        run([("a", 0, "ok")], [("a", 0), ("c", 0)]),  # samples of a case without a row
        run([("a", 0, "ok")], [("a", 0), ("a", 2)]),  # samples of a process without a row
        run([("a", 0, "ok"), ("a", 1, "ok")], [("a", 0)]),  # an ok attempt without samples
        good,
    ]
    cases = pa.concat_tables([c for c, _ in runs], promote_options="permissive")
    samples = pa.concat_tables([s for _, s in runs], promote_options="permissive")
    bad = load._bad_attempts(cases, np.array([c.num_rows for c, _ in runs]), samples,
                             np.array([s.num_rows for _, s in runs]))
    assert bad.tolist() == [False, True, True, True, True, False]
