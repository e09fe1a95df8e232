"""Reading one kind of file (samples.parquet, cases.parquet...) of many runs in one ``pyarrow.dataset`` scan, checked in bulk.

Reading 1,000 runs file by file costs a Parquet open, a validation and a handful of
Arrow calls per file, seconds in all; here every run's file of one kind is read at once:
one dataset over the files (the columns of the kind's schema only), each file's footer
checked (columns and types, ``schema_version``, ``run_id``), then the checks
``runformat.archive.read_table`` makes of one file (UTF-8 and string lengths, nulls,
statuses, metrics, units, directions, finite and positive values; for samples also each
metric in its own unit and direction, ``reporter.data.load._check_run``'s first check) made
once over the union of the files. The checks are row- and column-wise, so the union passes exactly when
every file does; when it does not, each file is checked alone. A file that fails any of
this, or that the scan cannot read, is left out of the answer: the caller reads that run
the old way, file by file, which names the problem.

Beyond the run format's own checks, two the reporter makes of every file it reads, here and
file by file alike: ``row_limit_problem`` (a file's footer announcing more rows than
``MAX_ROWS`` allows is refused before any row is read: a tiny file can decode into
gigabytes), and ``value_problem`` (timings, work and GPU readings finite and not negative,
process, sample and GPU indices not negative), both in bulk with pyarrow compute.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from runformat.archive import MAX_STRING_BYTES
from runformat.schema import (
    ADDED_COLUMNS, BETTER_HIGHER, BETTER_LOWER, BETTER_NONE, CASES_FILE, ENVIRONMENT_FILE, GPU_STATE_FILE, GPU_STATE_QUANTITIES,
    METRICS, READABLE_SCHEMA_VERSIONS, SAMPLES_FILE, SCHEMAS, STATUSES, TIMINGS, UNITS,
)

# The most rows one run file may hold. The largest recorded runs hold about 22,000 samples,
# 350 cases, 130 environment entries and 300 GPU-state rows; these are far above any real
# run and far below what would exhaust a reader's memory (50M samples are about 2 GB).
MAX_ROWS = {ENVIRONMENT_FILE: 1_000_000, CASES_FILE: 5_000_000, SAMPLES_FILE: 50_000_000, GPU_STATE_FILE: 5_000_000}

# Numeric columns that must be finite where present, and those that must not be negative.
_FINITE = {
    CASES_FILE: ("duration_s", "flops", "bytes", "items"),
    GPU_STATE_FILE: (*[f"{q}_{stat}" for q in GPU_STATE_QUANTITIES for stat in ("min", "median", "max")], "power_limit_w"),
}
_NOT_NEGATIVE = {
    CASES_FILE: ("process", "duration_s", "flops", "bytes", "items", "round", "position"),
    SAMPLES_FILE: ("process", "index"),
    GPU_STATE_FILE: ("process", "gpu", "readings", "processes_max", "other_processes_max"),
}


def row_limit_problem(kind: str, rows: int) -> str | None:
    """Why a ``kind`` file of ``rows`` rows (as its footer says) is refused unread, or None."""
    limit = MAX_ROWS.get(kind)
    if limit is not None and rows > limit:
        return f"its footer announces {rows:,} rows; a run's {kind} holds at most {limit:,}; not read"
    return None


def value_problem(kind: str, table: pa.Table) -> str | None:
    """The first value of ``table`` (a validated ``kind`` table) that no run records, or None.

    Finite timings, work and GPU readings; no negative duration, work, count or index.
    """
    if not table.num_rows:
        return None
    for name in _FINITE.get(kind, ()):
        column = table.column(name)
        if column.null_count == len(column):
            continue
        bad = pc.invert(pc.fill_null(pc.is_finite(column), True))
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            return f"row {row} has a non-finite {name} ({column[row].as_py()})"
    for name in _NOT_NEGATIVE.get(kind, ()):
        column = table.column(name)
        if column.null_count == len(column):
            continue
        low = pc.min(column).as_py()
        if low is not None and low < 0:
            row = pc.index(column, low).as_py()
            return f"row {row} has a negative {name} ({low})"
    return None


def scan_tables(kind: str, paths: list[Path], run_ids: list[str], dictionary: tuple[str, ...] = (),
                check: bool = True) -> dict[int, pa.Table]:
    """The validated table of ``paths[i]`` (a run's ``kind`` file, whose run is ``run_ids[i]``) by ``i``.

    Tables are in the kind's schema without metadata, as ``reporter.data.load`` reads one file,
    except that the string columns named in ``dictionary`` are read as Parquet stores
    them, dictionary encoded (``dictionary<int32, string>``: no string per row is made).
    An index is absent when its file is missing, damaged or invalid (read it file by file).
    ``check=False``: the rows are not checked (files checked before, unchanged since); the
    footers still are.
    """
    plain = SCHEMAS[kind]
    schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in dictionary else f
                        for f in plain])  # nullable, as reporter.data.load's own encoding makes them
    fragments = _within_row_limit(kind, _good_fragments(plain, ADDED_COLUMNS.get(kind, ()), paths, run_ids))
    if not fragments:
        return {}
    try:
        fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=list(dictionary)))
        dataset = ds.FileSystemDataset(list(fragments.values()), schema, fmt, pafs.LocalFileSystem())
        batches: dict[str, list[pa.RecordBatch]] = {}
        for tagged in dataset.scanner(columns=schema.names, use_threads=True).scan_batches():
            batches.setdefault(tagged.fragment.path, []).append(tagged.record_batch)
    except (pa.ArrowException, OSError, ValueError):  # a damaged page: every run the old way
        return {}
    tables = {i: pa.Table.from_batches(batches.get(f.path, []), schema) for i, f in fragments.items()}
    if not check:
        return tables
    # Checked in groups of files (their strings decoded a group at a time, so memory stays
    # small), each file alone only in a group that fails.
    out: dict[int, pa.Table] = {}
    order = list(tables)
    for at in range(0, len(order), _GROUP):
        group = order[at:at + _GROUP]
        if _valid(kind, pa.concat_tables([tables[i] for i in group]), "a group of runs"):
            out.update((i, tables[i]) for i in group)
        else:
            out.update((i, tables[i]) for i in group if _valid(kind, tables[i], str(paths[i])))
    return out


_GROUP = 256  # files checked together


def _within_row_limit(kind: str, fragments: dict[int, ds.ParquetFileFragment]) -> dict[int, ds.ParquetFileFragment]:
    """The fragments whose footer announces no more rows than ``MAX_ROWS`` allows (read before any row)."""
    out = {}
    for i, fragment in fragments.items():
        try:
            rows = fragment.metadata.num_rows
        except (pa.ArrowException, OSError, ValueError):
            continue
        if row_limit_problem(kind, rows) is None:
            out[i] = fragment
    return out


def _good_fragments(expected: pa.Schema, added: tuple[str, ...], paths: list[Path], run_ids: list[str]) -> dict[int, ds.ParquetFileFragment]:
    """A fragment per file whose footer says it is a readable file of its run: every column
    of ``expected`` in its type, or absent when ``added`` since version 1 (the scan reads
    it as nulls, as ``runformat.schema.upgrade_table`` fills it in)."""
    fmt = ds.ParquetFileFormat()
    fs = pafs.LocalFileSystem()
    versions = {str(v) for v in READABLE_SCHEMA_VERSIONS}
    out = {}
    for i, (path, run_id) in enumerate(zip(paths, run_ids)):
        try:
            if not path.is_file():
                continue
            fragment = fmt.make_fragment(str(path), fs)
            schema = fragment.physical_schema
        except (pa.ArrowException, OSError, ValueError):
            continue
        meta = schema.metadata or {}
        if meta.get(b"schema_version", b"").decode(errors="replace") not in versions:
            continue
        if meta.get(b"run_id", b"").decode(errors="replace") != run_id:
            continue
        if any(not schema.field(f.name).type.equals(f.type) if schema.get_field_index(f.name) >= 0 else f.name not in added
               for f in expected):
            continue
        out[i] = fragment
    return out


def valid_table(kind: str, table: pa.Table) -> bool:
    """Whether ``table`` (plain or with dictionary columns) passes the checks a scanned file must pass."""
    return _valid(kind, table, "")


def _valid(kind: str, table: pa.Table, where: str) -> bool:
    """Whether ``table`` passes the row and column checks of ``runformat.archive.read_table``
    (and, for samples, holds each metric in its own unit and direction).

    A dictionary-encoded column is checked through its dictionaries (text, lengths, allowed
    values: every value a dictionary holds, used or not, so this is never more lenient) and
    its indices (nulls); the other columns as ``read_table`` checks them.
    """
    try:
        return _valid_columns(kind, table)
    except Exception:  # anything a damaged file provokes: checked file by file instead
        return False


_ALLOWED = {
    "status": STATUSES, "timing": TIMINGS, "metric": tuple(METRICS), "unit": tuple(UNITS),
    "better": (BETTER_LOWER, BETTER_HIGHER, BETTER_NONE),
}
_POSITIVE_UNITS = ("s", "bytes", "items/s")  # runformat.schema._check_sample_values


def _valid_columns(kind: str, table: pa.Table) -> bool:
    if value_problem(kind, table) is not None:
        return False
    for f in SCHEMAS[kind]:
        column = table.column(f.name)
        if not f.nullable and column.null_count:
            return False
        if pa.types.is_dictionary(column.type):
            if not column.type.value_type.equals(f.type):
                return False
            dictionaries = [c.dictionary for c in column.chunks]
            if any(d.null_count for d in dictionaries):
                return False
            values = pa.chunked_array(dictionaries, f.type)
        else:
            if not column.type.equals(f.type):
                return False
            values = column
        if pa.types.is_string(f.type):
            values.validate(full=True)  # UTF-8
            longest = pc.max(pc.binary_length(values)).as_py() if len(values) else None
            if longest is not None and longest > MAX_STRING_BYTES:
                return False
        if kind in (CASES_FILE, SAMPLES_FILE) and f.name in _ALLOWED:
            seen = pc.unique(values).drop_null()
            if len(seen) and not pc.all(pc.is_in(seen, value_set=pa.array(_ALLOWED[f.name], pa.string()))).as_py():
                return False
    if kind != SAMPLES_FILE or not table.num_rows:
        return True
    value = table.column("value")
    if not pc.all(pc.is_finite(value)).as_py() or pc.any(pc.less(table.column("iterations"), 1)).as_py():
        return False
    # Per row, the codes of its metric's unit and direction and of its own (through the dictionaries).
    names = pa.array(list(METRICS), pa.string())
    units, directions = pa.array(sorted(UNITS), pa.string()), pa.array(list(_ALLOWED["better"]), pa.string())
    spec_unit = np.array([units.index(m.unit).as_py() for m in METRICS.values()])
    spec_better = np.array([directions.index(m.better).as_py() for m in METRICS.values()])
    positive = np.isin(units.to_numpy(zero_copy_only=False), _POSITIVE_UNITS)
    for batch in table.to_batches():
        if not batch.num_rows:
            continue
        metric = _codes(batch.column(batch.schema.get_field_index("metric")), names)
        unit = _codes(batch.column(batch.schema.get_field_index("unit")), units)
        better = _codes(batch.column(batch.schema.get_field_index("better")), directions)
        if (metric < 0).any() or (unit < 0).any() or (better < 0).any():
            return False
        if (spec_unit[metric] != unit).any() or (spec_better[metric] != better).any():
            return False
        v = batch.column(batch.schema.get_field_index("value")).to_numpy(zero_copy_only=False)
        if (positive[unit] & (v <= 0)).any():
            return False
    return True


def _codes(column: pa.Array, values: pa.Array) -> np.ndarray:
    """Each row's position in ``values`` (-1 when absent), through a dictionary column's dictionary."""
    if pa.types.is_dictionary(column.type):
        lookup = np.asarray(pc.fill_null(pc.index_in(column.dictionary, value_set=values), -1).to_numpy(), np.int64)
        return lookup[np.asarray(column.indices.to_numpy(zero_copy_only=False), np.int64)]
    return np.asarray(pc.fill_null(pc.index_in(column, value_set=values), -1).to_numpy(), np.int64)
