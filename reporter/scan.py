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


def scan_tables(kind: str, paths: list[Path], run_ids: list[str], dictionary: tuple[str, ...] = (),
                check: bool = True) -> dict[int, pa.Table]:
    """The validated table of ``paths[i]`` (a run's ``kind`` file, whose run is ``run_ids[i]``) by ``i``.

    Tables are in the kind's schema without metadata, as ``reporter.load`` reads one file,
    except that the string columns named in ``dictionary`` are read as Parquet stores
    them, dictionary encoded (``dictionary<int32, string>``: no string per row is made).
    An index is absent when its file is missing, damaged or invalid (read it file by file).
    ``check=False``: the rows are not checked (files checked before, unchanged since); the
    footers still are.
    """
    plain = SCHEMAS[kind]
    schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in dictionary else f
                        for f in plain])  # nullable, as reporter.load's own encoding makes them
    fragments = _good_fragments(plain, ADDED_COLUMNS.get(kind, ()), paths, run_ids)
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
        # Strings decoded from the dictionaries, every column nullable (the check names nulls).
        table = table.cast(pa.schema([pa.field(f.name, f.type) for f in SCHEMAS[kind]]))
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
