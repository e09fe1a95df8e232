"""Robustness, round 3 (issue 43), without a server: every marker, run file and cache entry the
reporter reads goes through one schema, and whatever a careless or hostile writer puts there
is one named skip, never a traceback.

Markers: ``runformat.remote.parse_marker`` on each malformed form, and Hypothesis on any JSON.
Run files: non-finite and negative timings, work and indices, row counts above
``reporter.data.scan.MAX_ROWS`` (refused from the footer), empty files, damaged GPU state and
parts; Hypothesis on tables. Caches: indexes and entries of the wrong shape, tampered tables,
sizes above the limits. Synthetic runs go to pytest's temporary folders, never under runs/.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runformat import schema as s
from runformat.remote import MAX_MARKER_BYTES, MAX_UPLOADED_FILE_BYTES, MarkedFile, Marker, MarkerError, parse_marker
from reporter.data import cache, scan
from reporter.data.load import load_archive
from reporter.errors import ReporterError
from test_reporter_support import lognormal_processes, run_id, write_run

LABEL, RUN, UPLOAD = "stack-a", run_id(1, "a00001"), run_id(2, "a00002")
SHA = "ab" * 32
CASES = ("mm[n=64]", "conv[k=3]")


def good_marker() -> dict:
    return json.loads(Marker(LABEL, RUN, UPLOAD, s.RUN_COMPLETE,
                             tuple(MarkedFile(n, 10, SHA) for n in s.RUN_FILES), "5e0b7d").to_json())


def encoded(marker: object) -> bytes:
    return json.dumps(marker).encode()


# -- markers -------------------------------------------------------------------------------------


def test_a_marker_written_is_read_back_as_written() -> None:
    marker = Marker(LABEL, RUN, UPLOAD, s.RUN_INTERRUPTED,
                    (MarkedFile(s.ENVIRONMENT_FILE, 1, SHA), MarkedFile(s.CASES_FILE, 0, SHA),
                     MarkedFile(s.SAMPLES_FILE, 2, SHA), MarkedFile(s.GPU_STATE_FILE, 3, SHA)), "host")
    assert parse_marker(marker.to_json(), label=LABEL, run_id=RUN, upload_id=UPLOAD) == marker


def _with(**change: object) -> bytes:
    m = good_marker()
    for key, value in change.items():
        if value is KeyError:
            del m[key]
        else:
            m[key] = value
    return encoded(m)


def _with_file(name: str, spec: object) -> bytes:
    m = good_marker()
    m["files"][name] = spec
    return encoded(m)


MALFORMED = {
    "null": (b"null", "its marker is not an object (it is null)"),
    "array": (b"[]", "its marker is not an object (it is an array)"),
    "string": (b'"complete"', "not an object (it is a string)"),
    "empty": (b"", "its marker is empty"),
    "not json": (b"{format: 1", "its marker is not JSON"),
    "utf-16": (json.dumps(good_marker()).encode("utf-16"), "not UTF-8"),
    "nan": (b'{"format": NaN}', "NaN, which is not JSON"),
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, None),
    "duplicate key": (b'{"format": 1, "format": 1}', "names the key 'format' twice"),
    "too large": (b" " * (MAX_MARKER_BYTES + 1), f"the limit is {MAX_MARKER_BYTES:,}"),
    "files null": (_with(files=None), "its marker's 'files' is null, not an object"),
    "files array": (_with(files=[]), "'files' is an array"),
    "no files": (_with(files=KeyError), "its marker has no 'files'"),
    "file entry a string": (_with_file(s.CASES_FILE, "deadbeef"), "entry for cases.parquet is a string, not an object"),
    "file entry null": (_with_file(s.CASES_FILE, None), "entry for cases.parquet is null"),
    "path with ..": (_with_file("../../etc/passwd", {"size": 1, "sha256": SHA}), "'../../etc/passwd'"),
    "absolute path": (_with_file("/etc/passwd", {"size": 1, "sha256": SHA}), "'/etc/passwd'"),
    "nested path": (_with_file("sub/samples.parquet", {"size": 1, "sha256": SHA}), "an upload holds only"),
    "a run file missing": (encoded({**good_marker(), "files": {s.CASES_FILE: {"size": 1, "sha256": SHA}}}),
                           "lists no environment.parquet"),
    "size a string": (_with_file(s.CASES_FILE, {"size": "10", "sha256": SHA}), "size of cases.parquet is a string"),
    "size a boolean": (_with_file(s.CASES_FILE, {"size": True, "sha256": SHA}), "is a boolean"),
    "size a float": (_with_file(s.CASES_FILE, {"size": 1.5, "sha256": SHA}), "is a number, not an integer"),
    "size negative": (_with_file(s.CASES_FILE, {"size": -1, "sha256": SHA}), "has -1 bytes"),
    "size huge": (_with_file(s.CASES_FILE, {"size": 10**30, "sha256": SHA}), f"0 to {MAX_UPLOADED_FILE_BYTES:,}"),
    "sha256 short": (_with_file(s.CASES_FILE, {"size": 1, "sha256": "abc"}), "not 64 lowercase hex digits"),
    "sha256 upper case": (_with_file(s.CASES_FILE, {"size": 1, "sha256": SHA.upper()}), "not 64 lowercase hex"),
    "sha256 missing": (_with_file(s.CASES_FILE, {"size": 1}), "sha256 of cases.parquet is null"),
    "format a string": (_with(format="1"), "'format' is a string, not an integer"),
    "format from the future": (_with(format=2), "format 2; this reader reads format 1"),
    "status running": (_with(status=s.RUN_RUNNING), "status 'running' is not one of complete, interrupted"),
    "status a number": (_with(status=3), "'status' is a number"),
    "label odd": (_with(label="Stack A/../b"), "is not a label folder name"),
    "label another run's": (_with(label="stack-b"), "names label 'stack-b', but it is stored under 'stack-a'"),
    "run id not one": (_with(run_id="../x"), "'run_id' '../x' is not a run id"),
    "upload id another": (_with(upload_id=run_id(3, "a00003")), "but it is stored under"),
    "host an object": (_with(host={}), "'host' is an object"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_each_malformed_marker_is_refused_with_one_line(name: str) -> None:
    data, needle = MALFORMED[name]
    with pytest.raises(MarkerError) as caught:
        parse_marker(data, label=LABEL, run_id=RUN, upload_id=UPLOAD)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("its marker")
    if needle is not None:
        assert needle in message, message


def test_extra_keys_are_tolerated() -> None:
    m = good_marker()
    m["written_by"] = {"tool": "a newer collector"}
    m["files"][s.CASES_FILE]["compression"] = "zstd"
    assert parse_marker(encoded(m), label=LABEL, run_id=RUN, upload_id=UPLOAD).label == LABEL


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner, max_size=4),
                    max_leaves=12)
FIELDS = ("format", "label", "run_id", "upload_id", "status", "host", "files")


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_json_is_a_marker_or_one_marker_error(data: st.DataObject) -> None:
    """Hypothesis: a good marker with any of its fields, file entries or sizes replaced by any JSON,
    or any JSON at all, or any bytes: parse_marker returns a Marker or raises MarkerError."""
    choice = data.draw(st.sampled_from(["field", "file", "spec", "whole", "bytes"]))
    m = good_marker()
    if choice == "field":
        m[data.draw(st.sampled_from(FIELDS))] = data.draw(JSON)
        raw = encoded(m)
    elif choice == "file":
        m["files"][data.draw(st.sampled_from([*s.RUN_FILES, "../x", "", "/abs"]))] = data.draw(JSON)
        raw = encoded(m)
    elif choice == "spec":
        m["files"][s.SAMPLES_FILE][data.draw(st.sampled_from(["size", "sha256"]))] = data.draw(JSON)
        raw = encoded(m)
    elif choice == "whole":
        raw = encoded(data.draw(JSON))
    else:
        raw = data.draw(st.binary(max_size=200))
    try:
        marker = parse_marker(raw, label=LABEL, run_id=RUN, upload_id=UPLOAD)
    except MarkerError as e:
        assert str(e).startswith("its marker") and "\n" not in str(e)
        return
    assert {f.name for f in marker.files} >= set(s.RUN_FILES)
    assert all(0 <= f.size <= MAX_UPLOADED_FILE_BYTES and len(f.sha256) == 64 for f in marker.files)


# -- run files -----------------------------------------------------------------------------------


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    rng = np.random.default_rng(5)
    for i, label in enumerate(("stack-a", "stack-b")):
        write_run(root, label, {c: lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0) for c in CASES}, run_id=run_id(i, f"{i:06x}"))
    return root


BAD = "stack-bad"
BAD_ID = run_id(9, "bad009")


def bad_run(root: Path) -> Path:
    rng = np.random.default_rng(6)
    return write_run(root, BAD, {c: lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0) for c in CASES}, run_id=BAD_ID)


def rewrite_column(path: Path, column: str, row: int, value: object) -> None:
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    field = table.schema.field(i)
    table = table.set_column(i, field, pa.array(values, field.type))
    pq.write_table(table, path)


def gpu_row(**change: object) -> dict:
    row = {f.name: None for f in s.GPU_STATE_SCHEMA}
    row.update(case_id=CASES[0], process=0, gpu=0, source="nvml", readings=10, reasons="", throttled=False,
               sm_clock_mhz_median=1980.0)
    row.update(change)
    return row


def write_gpu_state(folder: Path, **change: object) -> None:
    from runformat.archive import RunWriter

    RunWriter(folder=folder, run_id=folder.name, label=folder.parent.name).write(s.GPU_STATE_FILE, [gpu_row(**change)])


VALUES = {
    "duration NaN": (s.CASES_FILE, "duration_s", math.nan, "non-finite duration_s"),
    "duration inf": (s.CASES_FILE, "duration_s", math.inf, "non-finite duration_s"),
    "duration negative": (s.CASES_FILE, "duration_s", -1.0, "negative duration_s"),
    "flops inf": (s.CASES_FILE, "flops", -math.inf, "non-finite flops"),
    "flops negative": (s.CASES_FILE, "flops", -2.0, "negative flops"),
    "process negative": (s.CASES_FILE, "process", -3, "negative process"),
    "sample index negative": (s.SAMPLES_FILE, "index", -1, "negative index"),
    "sample process negative": (s.SAMPLES_FILE, "process", -1, "negative process"),
}


@pytest.mark.parametrize("name", VALUES)
def test_non_finite_and_negative_numbers_are_named_skips(runs: Path, name: str) -> None:
    kind, column, value, needle = VALUES[name]
    folder = bad_run(runs)
    rewrite_column(folder / kind, column, 1, value)
    archive = load_archive(runs, cache=False)
    assert {"stack-a", "stack-b"} <= set(archive.labels())
    hits = [p for p in archive.problems if p.path == str(folder / kind)]
    assert len(hits) == 1 and needle in hits[0].reason, archive.problems
    if kind == s.CASES_FILE:
        assert BAD not in archive.labels()
    else:  # damaged samples cost the run its samples only
        assert archive.samples[archive.samples["run_id"].astype(str) == BAD_ID].empty
    with pytest.raises(ReporterError, match="--strict"):
        load_archive(runs, strict=True, cache=False)


@pytest.mark.parametrize("change", [{"power_w_max": math.nan}, {"temperature_c_min": math.inf}, {"readings": -1},
                                    {"gpu": -1}, {"other_processes_max": -2}], ids=str)
def test_damaged_gpu_state_costs_the_run_its_gpu_state_only(runs: Path, change: dict) -> None:
    folder = bad_run(runs)
    write_gpu_state(folder, **change)
    archive = load_archive(runs, cache=False)
    assert BAD in archive.labels()
    assert archive.gpu_state.empty or BAD_ID not in set(archive.gpu_state["run_id"].astype(str))
    (hit,) = [p for p in archive.problems if p.path == str(folder / s.GPU_STATE_FILE)]
    assert "without its GPU state" in hit.reason


def test_good_gpu_state_is_kept(runs: Path) -> None:
    folder = bad_run(runs)
    write_gpu_state(folder)
    archive = load_archive(runs, cache=False)
    assert not archive.problems
    assert archive.gpu_state["sm_clock_mhz_median"].tolist() == [1980.0]


@pytest.mark.parametrize("kind", [s.ENVIRONMENT_FILE, s.CASES_FILE, s.SAMPLES_FILE, s.GPU_STATE_FILE])
def test_more_rows_than_the_limit_are_refused_from_the_footer(runs: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = bad_run(runs)
    if kind == s.GPU_STATE_FILE:
        write_gpu_state(folder)
    limit = pq.read_metadata(folder / kind).num_rows  # the good runs' files hold as many (or none)
    doubled = pq.read_table(folder / kind)
    pq.write_table(pa.concat_tables([doubled, doubled]), folder / kind)
    rows = 2 * limit
    monkeypatch.setitem(scan.MAX_ROWS, kind, limit)
    read = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda path, *a, **k: (read.append(str(path)), real(path, *a, **k))[1])
    archive = load_archive(runs, cache=False)
    (hit,) = [p for p in archive.problems if p.path == str(folder / kind)]
    assert f"announces {rows:,} rows" in hit.reason and "not read" in hit.reason
    assert str(folder / kind) not in read  # refused before a row was read
    assert {"stack-a", "stack-b"} <= set(archive.labels())


@pytest.mark.parametrize("kind", [s.ENVIRONMENT_FILE, s.CASES_FILE, s.GPU_STATE_FILE])
def test_empty_files_are_named(runs: Path, kind: str) -> None:
    folder = bad_run(runs)
    (folder / kind).write_bytes(b"")
    archive = load_archive(runs, cache=False)
    (hit,) = [p for p in archive.problems if p.path == str(folder / kind)]
    assert "0 bytes" in hit.reason
    assert {"stack-a", "stack-b"} <= set(archive.labels())


def _with_parts(folder: Path) -> Path:
    parts = folder / s.PARTS_FOLDER
    parts.mkdir()
    return parts


def test_an_empty_or_oversized_part_file_is_named(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = bad_run(runs)
    parts = _with_parts(folder)
    (parts / f"000000.{s.CASES_FILE}").write_bytes(b"")
    archive = load_archive(runs, cache=False)
    (hit,) = [p for p in archive.problems if BAD_ID in p.path]
    assert hit.path.endswith(f"000000.{s.CASES_FILE}") and "0 bytes" in hit.reason
    from runformat.archive import RunWriter

    (parts / f"000000.{s.CASES_FILE}").unlink()
    w = RunWriter(folder=folder, run_id=BAD_ID, label=BAD)
    cases = pq.read_table(folder / s.CASES_FILE).to_pylist()[:1]
    cases[0]["started_at"] = cases[0]["started_at"].timestamp()
    w.write_attempt(cases, [])
    monkeypatch.setitem(scan.MAX_ROWS, s.CASES_FILE, 0)
    archive = load_archive(runs, cache=False)
    assert BAD not in archive.labels()
    assert any(BAD_ID in p.path and "announces" in p.reason for p in archive.problems), archive.problems


def test_a_part_with_a_negative_duration_is_named(runs: Path) -> None:
    from runformat.archive import RunWriter

    folder = bad_run(runs)
    cases = pq.read_table(folder / s.CASES_FILE).to_pylist()[:1]
    cases[0]["duration_s"] = -5.0
    cases[0]["started_at"] = cases[0]["started_at"].timestamp()
    RunWriter(folder=folder, run_id=BAD_ID, label=BAD).write_attempt(cases, [])
    archive = load_archive(runs, cache=False)
    (hit,) = [p for p in archive.problems if BAD_ID in p.path]
    assert hit.path == str(folder / s.PARTS_FOLDER) and "negative duration_s" in hit.reason
    assert {"stack-a", "stack-b"} <= set(archive.labels())


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**31, 2**31 - 1).map(float), st.none())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from([s.CASES_FILE, s.SAMPLES_FILE]), data=st.data())
def test_any_numbers_in_a_run_load_or_are_named(tmp_path_factory: pytest.TempPathFactory, kind: str, data: st.DataObject) -> None:
    """Hypothesis: a run whose numeric columns hold any numbers (NaN, infinities, negatives, nulls
    where the column allows them) is loaded with only finite, non-negative timings, or named."""
    root = tmp_path_factory.mktemp("runs")
    folder = bad_run(root)
    table = pq.read_table(folder / kind)
    columns = [f for f in s.SCHEMAS[kind] if pa.types.is_floating(f.type) or pa.types.is_integer(f.type)]
    field = data.draw(st.sampled_from(columns))
    values = data.draw(st.lists(NUMBERS, min_size=table.num_rows, max_size=table.num_rows))
    if not field.nullable:
        values = [0.0 if v is None else v for v in values]
    if pa.types.is_integer(field.type):
        info = np.iinfo(field.type.to_pandas_dtype())
        values = [None if v is None else int(min(max(v, info.min), info.max)) if math.isfinite(v) else -1 for v in values]
    i = table.schema.get_field_index(field.name)
    table = table.set_column(i, table.schema.field(i), pa.array(values, field.type))
    pq.write_table(table, folder / kind)
    archive = load_archive(root, cache=False)
    named = [p for p in archive.problems if p.path.startswith(str(folder))]
    if BAD in archive.labels():
        cases = archive.cases
        assert np.isfinite(cases["duration_s"]).all() and (cases["duration_s"] >= 0).all()
        assert (cases["process"] >= 0).all()
        samples = archive.samples
        assert np.isfinite(samples["value"]).all() and (samples["index"] >= 0).all()
    else:
        assert named, "a run left out is named"


# -- caches --------------------------------------------------------------------------------------


def _cache(runs: Path) -> Path:
    load_archive(runs)  # writes the run cache
    folder = cache.archive_folder(cache.RUNS, runs)
    assert (folder / "index.json").is_file()
    return folder


@pytest.mark.parametrize("index", [None, [], "x", "runs", "tables"], ids=["null", "array", "string", "runs null", "tables null"])
def test_a_cache_index_of_the_wrong_shape_is_named_and_the_runs_read(runs: Path, index: object) -> None:
    folder = _cache(runs)
    if index in ("runs", "tables"):  # this reporter's index, of no list of runs (or tables)
        index = {**json.loads((folder / "index.json").read_text()), index: None}
    (folder / "index.json").write_text(json.dumps(index))
    archive = load_archive(runs)
    assert set(archive.labels()) == {"stack-a", "stack-b"} and not archive.problems
    assert [p.path for p in archive.cache_problems] == [str(folder / "index.json")]


@pytest.mark.parametrize("damage", ["entry null", "label a number", "rows a string", "rows outside", "fingerprint a dict",
                                    "warnings of numbers", "from_files unknown", "from_files dropped"])
def test_a_bad_cache_entry_is_skipped_alone(runs: Path, damage: str) -> None:
    folder = _cache(runs)
    index = json.loads((folder / "index.json").read_text())
    entry = index["runs"][0]
    if damage == "entry null":
        index["runs"][0] = None
    elif damage == "label a number":
        entry["label"] = 7
    elif damage == "rows a string":
        entry["rows"][s.CASES_FILE] = "0:10"
    elif damage == "rows outside":
        entry["rows"][s.CASES_FILE] = [0, 10**9]
    elif damage == "fingerprint a dict":
        entry["fingerprint"] = {"a": 1}
    elif damage == "warnings of numbers":
        entry["warnings"] = [[1, 2]]
    elif damage == "from_files unknown":
        entry["from_files"] = ["../evil.parquet"]
    else:  # its samples said to be in the set, which holds none (every run's samples are its own file)
        assert s.SAMPLES_FILE in entry["from_files"] and s.SAMPLES_FILE not in index["tables"]
        entry["from_files"] = []
    (folder / "index.json").write_text(json.dumps(index))
    ref: list[tuple[str, str]] = []
    cached = cache.read_cache(runs, (*s.RUN_FILES, s.GPU_STATE_FILE), lazy=(s.SAMPLES_FILE,), refused=ref)
    assert len(cached) == 1 and len(ref) == 1 and "entry 0" in ref[0][1]
    archive = load_archive(runs)
    assert set(archive.labels()) == {"stack-a", "stack-b"} and not archive.problems
    assert len(archive.cache_problems) == 1


def test_a_tampered_cache_table_is_refused(runs: Path) -> None:
    folder = _cache(runs)
    before = load_archive(runs).cases["duration_s"].tolist()
    table = pq.read_table(folder / s.CASES_FILE)
    i = table.schema.get_field_index("duration_s")
    table = table.set_column(i, table.schema.field(i), pa.array([math.nan] * table.num_rows, pa.float64()))
    pq.write_table(table, folder / s.CASES_FILE)
    archive = load_archive(runs)
    assert archive.cases["duration_s"].tolist() == before  # read from the runs, not the tampered cache
    assert [p.path for p in archive.cache_problems] == [str(folder / s.CASES_FILE)]


def test_tampered_cached_samples_stop_with_one_line_and_the_cache_goes(runs: Path) -> None:
    # A run whose samples the cache copies: one with samples of an attempt that has no case row.
    folder = bad_run(runs)
    table = pq.read_table(folder / s.SAMPLES_FILE)
    ghost = table.slice(0, 1).set_column(0, table.schema.field(0), pa.array(["ghost[n=1]"], pa.string()))
    pq.write_table(pa.concat_tables([table, ghost]), folder / s.SAMPLES_FILE)
    folder = _cache(runs)
    assert (folder / s.SAMPLES_FILE).is_file()
    table = pq.read_table(folder / s.SAMPLES_FILE)
    i = table.schema.get_field_index("value")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array([-1.0] * table.num_rows)), folder / s.SAMPLES_FILE)
    archive = load_archive(runs)
    with pytest.raises(ReporterError, match="the run cache holds values no run records") as caught:
        archive.samples
    assert "\n" not in str(caught.value) and not folder.exists()
    assert np.all(load_archive(runs).samples["value"] > 0)  # rebuilt from the runs


def test_a_cache_index_above_the_limit_is_not_read(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _cache(runs)
    monkeypatch.setattr(cache, "MAX_INDEX_BYTES", 10)
    monkeypatch.setattr(cache.json, "loads", lambda *a, **k: pytest.fail("an index above the limit was parsed"))
    ref: list[tuple[str, str]] = []
    assert cache.read_cache(runs, tuple(s.RUN_FILES), refused=ref) == {}
    assert ref and "above the limit of 10" in ref[0][1] and ref[0][0] == str(folder / "index.json")


@pytest.mark.parametrize("damage", [None, {"rows": "1", "entries": {}}, {"entries": {"k": [0, 5, ["r"]]}},
                                    {"entries": {"k": "x"}}, {"rows": 7}],
                         ids=["null", "rows a string", "span outside", "entry a string", "rows not the table's"])
def test_a_summary_cache_of_the_wrong_shape_is_not_used(tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "units"
    cache._write_frames(folder, {"k": (__import__("pandas").DataFrame({"x": [1.0]}), ["r"])})
    assert set(cache._read_frames(folder)) == {"k"}
    index = json.loads((folder / "index.json").read_text())
    (folder / "index.json").write_text(json.dumps(None if damage is None else {**index, **damage}))
    assert cache._read_frames(folder) == {}
    assert any("not used" in r.getMessage() for r in caplog.records)


def test_a_build_cache_entry_above_the_limit_is_never_unpickled(monkeypatch: pytest.MonkeyPatch) -> None:
    cache.store_entry("articles", "k" * 40, {"big": "x" * 1000})
    assert cache.load_entry("articles", "k" * 40) == {"big": "x" * 1000}
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 100)
    monkeypatch.setattr(cache.pickle, "loads", lambda data: pytest.fail("an entry above the limit was unpickled"))
    assert cache.load_entry("articles", "k" * 40) is None
    cache.store_svgs([("s" * 40, "<svg>" + " " * 200 + "</svg>")])
    monkeypatch.setattr(cache, "MAX_SVG_BYTES", 100)
    assert cache.load_svg("s" * 40) is None
