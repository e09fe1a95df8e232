"""Reading one kind of file (samples.parquet, cases.parquet...) of many runs in one ``pyarrow.dataset`` scan, checked in bulk.

Reading 1,000 runs file by file costs a Parquet open, a validation and a handful of
Arrow calls per file, seconds in all; here every run's file of one kind is read at once:
one dataset over the files (the columns of the kind's schema only), each file's footer
checked (columns and types, ``schema_version``, ``run_id``), then the checks
``collector.archive.read_table`` makes of one file (UTF-8 and string lengths, nulls,
statuses, metrics, units, directions, finite and positive values; for samples also each
metric in its own unit and direction, ``reporter.load._check_run``'s first check) made
once over the union of the files. The checks are row- and column-wise, so the union passes exactly when
every file does; when it does not, each file is checked alone. A file that fails any of
this, or that the scan cannot read, is left out of the answer: the caller reads that run
the old way, file by file, which names the problem.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from collector.archive import _check_strings
import pyarrow.compute as pc

from collector.schema import ADDED_COLUMNS, METRICS, READABLE_SCHEMA_VERSIONS, SAMPLES_FILE, SCHEMAS, validate_table


def scan_tables(kind: str, paths: list[Path], run_ids: list[str]) -> dict[int, pa.Table]:
    """The validated table of ``paths[i]`` (a run's ``kind`` file, whose run is ``run_ids[i]``) by ``i``.

    Tables are in the kind's schema without metadata, as ``reporter.load`` reads one file.
    An index is absent when its file is missing, damaged or invalid (read it file by file).
    """
    schema = SCHEMAS[kind]
    fragments = _good_fragments(schema, ADDED_COLUMNS.get(kind, ()), paths, run_ids)
    if not fragments:
        return {}
    try:
        dataset = ds.FileSystemDataset(list(fragments.values()), schema, ds.ParquetFileFormat(), pafs.LocalFileSystem())
        batches: dict[str, list[pa.RecordBatch]] = {}
        for tagged in dataset.scanner(columns=schema.names, use_threads=True).scan_batches():
            batches.setdefault(tagged.fragment.path, []).append(tagged.record_batch)
    except (pa.ArrowException, OSError, ValueError):  # a damaged page: every run the old way
        return {}
    tables = {i: pa.Table.from_batches(batches.get(f.path, []), schema) for i, f in fragments.items()}
    if not _valid(kind, pa.concat_tables(tables.values()), "all runs"):
        tables = {i: t for i, t in tables.items() if _valid(kind, t, str(paths[i]))}
    return tables


def _good_fragments(expected: pa.Schema, added: tuple[str, ...], paths: list[Path], run_ids: list[str]) -> dict[int, ds.ParquetFileFragment]:
    """A fragment per file whose footer says it is a readable file of its run: every column
    of ``expected`` in its type, or absent when ``added`` since version 1 (the scan reads
    it as nulls, as ``collector.schema.upgrade_table`` fills it in)."""
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


def _valid(kind: str, table: pa.Table, where: str) -> bool:
    """Whether ``table`` passes the row and column checks of ``collector.archive.read_table``
    (and, for samples, holds each metric in its own unit and direction)."""
    meta = {"schema_version": str(READABLE_SCHEMA_VERSIONS[-1]), "run_id": "scan"}
    try:
        _check_strings(table, f"{where}: ")
        validate_table(kind, table.replace_schema_metadata(meta), where=where)
        if kind == SAMPLES_FILE and table.num_rows:
            names = pa.array(list(METRICS))
            at = pc.index_in(table["metric"], value_set=names)
            for column, spec in (("unit", [m.unit for m in METRICS.values()]), ("better", [m.better for m in METRICS.values()])):
                if not pc.all(pc.equal(table[column], pc.take(pa.array(spec), at))).as_py():
                    return False
    except Exception:  # SchemaError, or anything else a damaged file provokes
        return False
    return True
