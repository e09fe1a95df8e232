"""The bulk read of many runs (``reporter.data.scan`` and ``reporter.data.load._read_scanned``): it gives
the load that reading each run file by file gives, and a damaged run met on the way is still
named and skipped (or loaded without its samples), as the file-by-file read names it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import reporter.data.load as load
from runformat import schema as s
from runformat.archive import read_table
from reporter.data.load import load_archive
from reporter.data.scan import scan_tables
from test_bad_input import BAD_INPUTS, BAD_LABEL, bad_run, runs  # noqa: F401  (runs: a fixture)

GOLDEN = Path(__file__).parent / "data" / "golden_runs"


def _same(a: load.Archive, b: load.Archive) -> None:
    for name in ("runs", "environment", "cases", "samples", "gpu_state"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_categorical=False)
    assert a.problems == b.problems


def _file_by_file(monkeypatch: pytest.MonkeyPatch, root: Path) -> load.Archive:
    with monkeypatch.context() as m:
        m.setattr(load, "scan_tables", lambda kind, paths, run_ids, dictionary=(): {})
        return load_archive(root, cache=False)


def test_the_scan_reads_what_read_table_reads(tmp_path: Path) -> None:
    folders = sorted(p for p in GOLDEN.glob("[!.]*/*") if p.is_dir())
    for kind in (s.ENVIRONMENT_FILE, s.CASES_FILE, s.SAMPLES_FILE):
        got = scan_tables(kind, [f / kind for f in folders], [f.name for f in folders])
        assert sorted(got) == list(range(len(folders)))
        for i, folder in enumerate(folders):
            want = read_table(folder / kind, kind)[0].select(s.SCHEMAS[kind].names).replace_schema_metadata(None)
            assert got[i].equals(want.cast(s.SCHEMAS[kind]))


def test_the_scan_leaves_out_a_damaged_or_foreign_file(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(GOLDEN, root)
    folders = sorted(p for p in root.glob("[!.]*/*") if p.is_dir())
    (folders[0] / s.SAMPLES_FILE).write_bytes(b"PAR1 not really")
    paths = [f / s.SAMPLES_FILE for f in folders] + [tmp_path / "missing.parquet"]
    ids = [f.name for f in folders] + ["20260101T000000Z-000000"]
    ids[1] = "20260101T000000Z-ffffff"  # a file of another run than its folder says
    got = scan_tables(s.SAMPLES_FILE, paths, ids)
    assert sorted(got) == list(range(2, len(folders)))


def test_golden_runs_load_alike_in_bulk_and_file_by_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "runs"
    shutil.copytree(GOLDEN, root)
    _same(_file_by_file(monkeypatch, root), load_archive(root, cache=False))


@pytest.mark.parametrize("breakage", BAD_INPUTS, ids=lambda f: f.__name__)
def test_a_damaged_run_is_named_alike_in_bulk_and_file_by_file(runs: Path, breakage, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    where, reason = breakage(runs)
    bulk = load_archive(runs, cache=False)
    assert any(p.path.endswith(where) or where in p.path for p in bulk.problems), bulk.problems
    assert any(reason in p.reason for p in bulk.problems), bulk.problems
    _same(_file_by_file(monkeypatch, runs), bulk)


def test_a_run_missing_samples_of_an_ok_attempt_leaves_the_bulk_path_named(runs: Path) -> None:  # noqa: F811
    folder = bad_run(runs)
    table = pq.read_table(folder / s.SAMPLES_FILE)
    keep = [c != "conv[k=3]" for c in table["case_id"].to_pylist()]
    pq.write_table(table.filter(keep), folder / s.SAMPLES_FILE)
    archive = load_archive(runs, cache=False)
    assert BAD_LABEL in archive.labels()
    (problem,) = archive.problems
    assert problem.path == str(folder / s.SAMPLES_FILE) and "recorded ok in cases.parquet but have no samples" in problem.reason


def test_the_scan_reads_repeated_strings_as_dictionaries(tmp_path: Path) -> None:
    import pyarrow as pa

    folders = sorted(p for p in GOLDEN.glob("[!.]*/*") if p.is_dir())
    got = scan_tables(s.SAMPLES_FILE, [f / s.SAMPLES_FILE for f in folders], [f.name for f in folders],
                      dictionary=("case_id", "metric"))
    assert pa.types.is_dictionary(got[0].schema.field("case_id").type)
    plain = scan_tables(s.SAMPLES_FILE, [f / s.SAMPLES_FILE for f in folders], [f.name for f in folders])
    assert got[0].cast(plain[0].schema.remove_metadata()).to_pylist() == plain[0].to_pylist()
