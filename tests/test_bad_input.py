"""The reporter against bad input: one table of broken archives, each met with a clear message.

Every row breaks one run of an otherwise good archive (two good labels) in one way and
checks that loading it

* names the broken file (or folder) and says what is wrong,
* skips that run and loads the rest (``reporter runs`` exits 0 and lists the problem;
  ``reporter compare`` of the good labels still answers), and
* fails with exit code 2 under ``--strict`` — never with a traceback.

"Unreadable file" is simulated in two ways that hold for root too (the tests run as root
in CI, where permission bits do not stop a read): a folder where the file should be,
and ``pyarrow.parquet.read_table`` monkeypatched to raise ``PermissionError``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runformat import schema as s
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from test_reporter_support import lognormal_processes, run_id, write_run

BAD_LABEL = "stack-bad"
BAD_ID = run_id(40, "bad000")
GOOD_CASES = ("mm[n=1024]", "conv[k=3]")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    rng = np.random.default_rng(11)
    for i, label in enumerate(("stack-a", "stack-b")):
        write_run(root, label, {c: lognormal_processes(rng, 3, 6, 1e-3, 0.02, 0.005) for c in GOOD_CASES},
                  run_id=run_id(i, f"{i:06x}"))
    return root


def bad_run(root: Path, **kwargs) -> Path:
    """A valid run of BAD_LABEL, about to be broken by the test."""
    rng = np.random.default_rng(12)
    return write_run(root, kwargs.pop("label", BAD_LABEL), {c: lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0) for c in GOOD_CASES},
                     run_id=kwargs.pop("run_id", BAD_ID), **kwargs)


def rewrite(path: Path, change: Callable[[pa.Table], pa.Table], *, keep_meta: bool = True) -> None:
    """Read ``path`` without validation, change the table, write it back (metadata kept)."""
    table = pq.read_table(path)
    meta = table.schema.metadata
    table = change(table)
    if keep_meta:
        table = table.replace_schema_metadata(meta)
    pq.write_table(table, path)


def set_column(table: pa.Table, name: str, values: list, type: pa.DataType | None = None) -> pa.Table:
    i = table.schema.get_field_index(name)
    field = table.schema.field(name)
    array = pa.array(values, type=type or field.type)
    return table.set_column(i, pa.field(name, array.type, nullable=field.nullable if type is None else True), array)


def replace_value(path: Path, column: str, row: int, value: object) -> None:
    def change(t: pa.Table) -> pa.Table:
        values = t.column(column).to_pylist()
        values[row] = value
        return set_column(t, column, values)

    rewrite(path, change)


def invalid_utf8_strings(n: int, bad_row: int) -> pa.Array:
    """A string array whose row ``bad_row`` holds bytes that are not UTF-8 (Arrow builds it unchecked)."""
    items = [b"ok"] * n
    items[bad_row] = b"bad \xff\xfe bytes"
    offsets = np.cumsum([0] + [len(b) for b in items]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))])


# Each case: (id, break the archive -> (file or folder it names, relative to runs/; text the reason holds)).
Case = Callable[[Path], tuple[str, str]]
RUN = f"{BAD_LABEL}/{BAD_ID}"


def zero_byte_file(root: Path) -> tuple[str, str]:
    (bad_run(root) / s.SAMPLES_FILE).write_bytes(b"")
    return f"{RUN}/samples.parquet", "not a readable Parquet file"


def truncated_parquet(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.CASES_FILE
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return f"{RUN}/cases.parquet", "not a readable Parquet file"


def truncated_footer(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.SAMPLES_FILE
    path.write_bytes(path.read_bytes()[:-3])  # only the closing magic bytes lost
    return f"{RUN}/samples.parquet", "not a readable Parquet file"


def not_parquet_at_all(root: Path) -> tuple[str, str]:
    (bad_run(root) / s.ENVIRONMENT_FILE).write_text("<html><body>404 Not Found</body></html>\n")
    return f"{RUN}/environment.parquet", "not a readable Parquet file"


def schema_version_from_the_future(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.SAMPLES_FILE
    rewrite(path, lambda t: t.replace_schema_metadata({**t.schema.metadata, b"schema_version": b"99"}), keep_meta=False)
    return f"{RUN}/samples.parquet", f"schema_version 99 is newer than this imagebench's {s.SCHEMA_VERSION}"


def schema_version_not_a_number(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.CASES_FILE
    rewrite(path, lambda t: t.replace_schema_metadata({**t.schema.metadata, b"schema_version": b"v2"}), keep_meta=False)
    return f"{RUN}/cases.parquet", "schema_version 'v2' is not a number"


def no_imagebench_metadata(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.ENVIRONMENT_FILE, lambda t: t.replace_schema_metadata(None), keep_meta=False)
    return f"{RUN}/environment.parquet", "no schema_version in the file's metadata"


def missing_column(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.SAMPLES_FILE, lambda t: t.drop_columns(["value"]))
    return f"{RUN}/samples.parquet", "missing column 'value'"


def wrong_column_type(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.SAMPLES_FILE, lambda t: set_column(t, "value", [str(v) for v in t.column("value").to_pylist()], pa.string()))
    return f"{RUN}/samples.parquet", "column 'value' has type string, expected double"


def null_in_a_required_column(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.CASES_FILE, lambda t: set_column(t, "status", [None] + t.column("status").to_pylist()[1:], pa.string()))
    return f"{RUN}/cases.parquet", "column 'status' holds nulls"


def nan_value(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "value", 2, float("nan"))
    return f"{RUN}/samples.parquet", "sample 2 has a non-finite value (nan)"


def inf_value(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "value", 3, float("inf"))
    return f"{RUN}/samples.parquet", "sample 3 has a non-finite value (inf)"


def zero_value(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "value", 0, 0.0)
    return f"{RUN}/samples.parquet", "sample 0 has value 0.0 s, which must be positive"


def negative_value(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "value", 1, -1e-3)
    return f"{RUN}/samples.parquet", "sample 1 has value -0.001 s, which must be positive"


def zero_iterations(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "iterations", 0, 0)
    return f"{RUN}/samples.parquet", "fewer than 1 iteration"


def duplicate_run_ids(root: Path) -> tuple[str, str]:
    folder = bad_run(root)
    shutil.copytree(folder, root / "stack-copy" / BAD_ID)  # the same run filed under two labels
    return RUN, f"run id {BAD_ID} is recorded 2 times"


def cases_but_no_samples(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.SAMPLES_FILE, lambda t: t.slice(0, 0))
    return f"{RUN}/samples.parquet", "recorded ok in cases.parquet but have no samples (first: 'conv[k=3]' process 0)"


def samples_for_unknown_cases(root: Path) -> tuple[str, str]:
    """Loaded without them (a run killed between its two writes holds such samples), but named."""
    path = bad_run(root) / s.SAMPLES_FILE
    ghost = lambda t: set_column(t.slice(0, 2), "case_id", ["ghost[n=1]"] * 2)  # noqa: E731
    rewrite(path, lambda t: pa.concat_tables([t, ghost(t)]))
    return f"{RUN}/samples.parquet", "2 sample(s) of 1 attempt(s) have no row in cases.parquet (first: 'ghost[n=1]' process 0)"


def duplicate_case_rows(root: Path) -> tuple[str, str]:
    rewrite(bad_run(root) / s.CASES_FILE, lambda t: pa.concat_tables([t, t.slice(0, 1)]))
    return f"{RUN}/cases.parquet", "'mm[n=1024]' process 0 has 2 rows"


def unknown_metric(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "metric", 0, "speed")
    return f"{RUN}/samples.parquet", "column 'metric' holds unknown value(s) ['speed']"


def unknown_unit(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "unit", 0, "furlongs")
    return f"{RUN}/samples.parquet", "column 'unit' holds unknown value(s) ['furlongs']"


def metric_in_the_wrong_unit(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.SAMPLES_FILE, "unit", 0, "bytes")
    return f"{RUN}/samples.parquet", "metric 'time' is recorded in 'bytes'; its unit is 's'"


def unknown_status(root: Path) -> tuple[str, str]:
    replace_value(bad_run(root) / s.CASES_FILE, "status", 0, "exploded")
    return f"{RUN}/cases.parquet", "column 'status' holds unknown value(s) ['exploded']"


def folder_name_disagrees_with_run_id(root: Path) -> tuple[str, str]:
    folder = bad_run(root)
    other = run_id(41, "bad001")
    folder.rename(folder.parent / other)
    return f"{BAD_LABEL}/{other}/environment.parquet", f"run_id '{BAD_ID}' in the file's metadata does not match the folder name"


def folder_name_not_a_run_id(root: Path) -> tuple[str, str]:
    folder = bad_run(root)
    folder.rename(folder.parent / "latest")
    return f"{BAD_LABEL}/latest", "folder name is not a run id"


def a_folder_where_a_file_should_be(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.CASES_FILE
    path.unlink()
    path.mkdir()
    return f"{RUN}/cases.parquet", "is not a regular file"


def run_missing_one_of_its_files(root: Path) -> tuple[str, str]:
    (bad_run(root) / s.SAMPLES_FILE).unlink()
    return f"{RUN}/samples.parquet", "file missing"


def empty_run_folder(root: Path) -> tuple[str, str]:
    (root / BAD_LABEL / BAD_ID).mkdir(parents=True)
    return f"{RUN}/environment.parquet", "file missing"


def non_utf8_bytes_in_strings(root: Path) -> tuple[str, str]:
    path = bad_run(root) / s.CASES_FILE
    rewrite(path, lambda t: set_column(t, "error", invalid_utf8_strings(t.num_rows, 1)))
    return f"{RUN}/cases.parquet", "column 'error' holds text that is not valid UTF-8"


def non_utf8_folder_name(root: Path) -> tuple[str, str]:
    bad_run(root)
    os.rename(os.fsencode(root / BAD_LABEL), os.fsencode(root) + b"/stack-\xff")  # a label folder named in Latin-1
    return "stack-\\xff", "folder name is not valid UTF-8"


def ten_megabyte_string(root: Path) -> tuple[str, str]:
    bad_run(root, environment={("env", "TORCH_HUGE"): "x" * (10 * 2**20)})
    return f"{RUN}/environment.parquet", "column 'value' holds a string of 10,485,760 bytes"


def symlink_loop_in_runs(root: Path) -> tuple[str, str]:
    os.symlink("loop", root / "loop")  # runs/loop -> runs/loop
    return "loop", "symlink that does not resolve"


def symlink_loop_as_a_run(root: Path) -> tuple[str, str]:
    (root / BAD_LABEL).mkdir()
    os.symlink(BAD_ID, root / BAD_LABEL / BAD_ID)
    return RUN, "symlink that does not resolve"


BAD_INPUTS: list[Case] = [
    zero_byte_file, truncated_parquet, truncated_footer, not_parquet_at_all, schema_version_from_the_future,
    schema_version_not_a_number, no_imagebench_metadata, missing_column, wrong_column_type,
    null_in_a_required_column, nan_value, inf_value, zero_value, negative_value, zero_iterations, duplicate_run_ids,
    cases_but_no_samples, samples_for_unknown_cases, duplicate_case_rows, unknown_metric, unknown_unit,
    metric_in_the_wrong_unit, unknown_status, folder_name_disagrees_with_run_id, folder_name_not_a_run_id,
    a_folder_where_a_file_should_be, run_missing_one_of_its_files, empty_run_folder, non_utf8_bytes_in_strings,
    non_utf8_folder_name, ten_megabyte_string, symlink_loop_in_runs, symlink_loop_as_a_run,
]


# Breakages after which the run is still used (and the problem still named): damaged samples
# cost the run its samples (or the attempts without them), not its listing.
KEPT = {
    samples_for_unknown_cases, zero_byte_file, truncated_footer, schema_version_from_the_future, missing_column,
    wrong_column_type, nan_value, inf_value, zero_value, negative_value, zero_iterations, cases_but_no_samples,
    unknown_metric, unknown_unit, metric_in_the_wrong_unit, run_missing_one_of_its_files,
}


def _invoke(*args: str):
    from click.testing import CliRunner

    from reporter.cli import cli

    return CliRunner().invoke(cli, list(args), prog_name="reporter")


def _no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("breakage", BAD_INPUTS, ids=lambda f: f.__name__)
def test_bad_input_is_named_skipped_and_fails_only_under_strict(runs: Path, breakage: Case) -> None:
    where, reason = breakage(runs)
    archive = load_archive(runs)
    # the good runs still load, whole; the broken one is skipped (or, for stray samples, used without them)
    kept = breakage in KEPT
    assert archive.labels() == ["stack-a", "stack-b"] + ([BAD_LABEL] if kept else [])
    assert set(archive.runs["run_id"].astype(str)) == {run_id(0, "000000"), run_id(1, "000001")} | ({BAD_ID} if kept else set())
    good = archive.ok_samples()
    good = good[good["label"].astype(str) != BAD_LABEL]
    assert len(good) == 2 * len(GOOD_CASES) * 3 * 6
    if kept:
        assert "ghost[n=1]" not in set(archive.ok_samples()["case_id"].astype(str))
        bad = archive.select(BAD_LABEL)  # what is left of it is consistent: no ok attempt without samples
        ok = bad.cases[bad.cases["status"].astype(str) == "ok"]
        sampled = set(zip(bad.samples["case_id"].astype(str), bad.samples["process"]))
        assert all(key in sampled for key in zip(ok["case_id"].astype(str), ok["process"]))
    # one message names the broken file and says what is wrong
    shown = [(os.fsencode(p.path).decode("utf-8", "backslashreplace"), p.reason) for p in archive.problems]
    assert any(path == str(runs / where) and reason in why for path, why in shown), shown
    assert all(p.reason and p.path for p in archive.problems)

    # the CLI: listed and skipped; compare of the good labels still answers; --strict exits 2
    result = _invoke("runs", "--runs", str(runs), "--format", "json")
    _no_traceback(result)
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output[result.output.index("{"):])
    assert {r["label"] for r in listed["runs"]} == {"stack-a", "stack-b"} | ({BAD_LABEL} if kept else set())
    assert any(reason in p["reason"] for p in listed["problems"])
    result = _invoke("compare", "stack-a", "stack-b", "--runs", str(runs), "--format", "json")
    _no_traceback(result)
    assert result.exit_code == 0, result.output
    for command in (["runs"], ["compare", "stack-a", "stack-b"]):
        result = _invoke(*command, "--runs", str(runs), "--strict")
        _no_traceback(result)
        assert result.exit_code == 2, result.output
        assert "--strict:" in result.output and reason.split("(")[0].strip()[:30] in result.output
    with pytest.raises(ReporterError, match="--strict"):
        load_archive(runs, strict=True)


def test_unreadable_file_via_permission_error(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits do not stop root, so the read itself is made to fail as for another user."""
    folder = bad_run(runs)
    real = pq.read_table
    target = str(folder / s.SAMPLES_FILE)

    def read_table(path, *args, **kwargs):
        if str(path) == target:
            raise PermissionError(13, "Permission denied", target)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", read_table)
    # The bulk scan (reporter.data.scan) opens files itself; one it cannot open is left to the
    # file-by-file read above, as a permission error would leave it.
    import reporter.data.scan as scan

    real_fragments = scan._good_fragments
    monkeypatch.setattr(scan, "_good_fragments", lambda expected, added, paths, ids: {
        i: f for i, f in real_fragments(expected, added, paths, ids).items() if str(paths[i]) != target})
    archive = load_archive(runs)
    assert archive.labels() == ["stack-a", "stack-b", BAD_LABEL]  # listed, without its samples
    assert [p.path for p in archive.problems] == [target]
    assert archive.problems[0].reason.startswith("cannot read (Permission denied); the run is loaded without its samples")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through permission bits; see the monkeypatched test")
def test_unreadable_file_via_permission_bits(runs: Path) -> None:
    path = bad_run(runs) / s.SAMPLES_FILE
    path.chmod(0)
    archive = load_archive(runs)
    assert archive.labels() == ["stack-a", "stack-b", BAD_LABEL]
    assert [p.reason.split(";")[0] for p in archive.problems] == ["cannot read (Permission denied)"]


@pytest.mark.parametrize("command", [["runs"], ["compare", "stack-a", "stack-b"]])
def test_nothing_to_answer_is_exit_2(tmp_path: Path, command: list[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for runs_dir, message in ((tmp_path / "missing", "does not exist"), (a_file, "is a file")):
        result = _invoke(*command, "--runs", str(runs_dir))
        _no_traceback(result)
        assert result.exit_code == 2 and message in result.output and str(runs_dir) in result.output


def test_compare_with_every_run_broken_is_exit_2(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for i, label in enumerate(("stack-a", "stack-b")):
        folder = write_run(root, label, {"mm[n=1]": [[1e-3, 2e-3]]}, run_id=run_id(i, f"{i:06x}"))
        (folder / s.SAMPLES_FILE).write_bytes(b"")
    result = _invoke("compare", "stack-a", "stack-b", "--runs", str(root))
    _no_traceback(result)
    assert result.exit_code == 2
    assert "no case measured on both 'stack-a' and 'stack-b'" in result.output  # listed, but nothing measured
    assert "samples.parquet" in result.output  # the damaged files are named too
