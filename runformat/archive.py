"""The run archive on disk: ``runs/<label>/<run_id>/*.parquet``, written atomically.

Every write goes to a temporary file in the same folder, is fsynced, then renamed over
the target, so a reader (or a crash) never sees a partial Parquet file. A run folder is
created exclusively: an existing run is never overwritten.

While a run records, each finished attempt is appended as part files under
``parts/`` (its samples and GPU state, then its one-row cases part, which commits it),
so writing a case costs the same however many came before; ``compact`` folds the parts
into the main files at the end. ``merge_parts`` gives a reader of a folder that still
holds parts (a killed run) the same tables compaction would have written.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import secrets
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from runformat.schema import (
    CASES_FILE,
    ENVIRONMENT_FILE,
    GPU_STATE_FILE,
    PARTS_FOLDER,
    RUN_FILES,
    SAMPLES_FILE,
    SchemaError,
    is_valid_run_id,
    records_to_table,
    sanitize_label,
    upgrade_table,
    validate_table,
)


class ArchiveError(Exception):
    """The run folder cannot be created, written or read; the message names the path."""


def new_run_id(now: dt.datetime | None = None) -> str:
    """A UTC timestamp, a random suffix and this host's tag: ``20261202T140512Z-3fa9c1-5e0b7d``.

    The host tag (six hex digits of a hash of the host name) keeps ids from two hosts of a
    fleet apart even when they start in the same second and draw the same random suffix, so
    many hosts can record into one archive. Ids without it (older runs) stay valid.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3) + "-" + host_tag()


def host_tag() -> str:
    """Six hex digits from this host's name: the same for every run of a host, rarely another's."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def write_table_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through a temp file, fsync and rename."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise ArchiveError(f"cannot write {path}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            pq.write_table(table, f, compression="zstd")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; run files are meant to be shared
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ArchiveError(f"cannot write {path}: {e.strerror or e}") from e
        raise


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_writable(out: Path) -> None:
    """Raise ``ArchiveError`` unless runs can be created under ``out``."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ArchiveError(f"cannot create output folder {out}: {e.strerror or e}") from e
    if not out.is_dir():
        raise ArchiveError(f"output path {out} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".imagebench-write-check.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ArchiveError(f"output folder {out} is not writable: {e.strerror or e}") from e


@dataclass
class RunWriter:
    """Writes one run's three tables, rewriting each atomically as cases finish."""

    folder: Path
    run_id: str
    label: str
    final: Path | None = None  # where a staged run goes on ``publish``
    _next_part: int | None = None

    @classmethod
    def create(cls, out: Path, label: str, *, staged: bool = False) -> "RunWriter":
        """Create ``out/<slug(label)>/<new run id>`` exclusively.

        With ``staged=True`` the files are first written to a hidden sibling folder
        (``.<run id>.new``, which readers skip) and ``publish`` renames it into place, so
        no reader and no crash ever sees a run folder without its files.
        """
        slug = sanitize_label(label)
        base = Path(out) / slug
        check_writable(Path(out))
        _refuse_symlink(base, Path(out))
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ArchiveError(f"cannot create {base}: {e.strerror or e}") from e
        for _ in range(10):
            run_id = new_run_id()
            final = base / run_id
            folder = base / f".{run_id}.new" if staged else final
            if staged and final.exists():
                continue
            try:
                folder.mkdir()
            except FileExistsError:
                continue  # never reuse a folder: pick another suffix
            except OSError as e:
                raise ArchiveError(f"cannot create {folder}: {e.strerror or e}") from e
            return cls(folder=folder, run_id=run_id, label=slug, final=final if staged else None)
        raise ArchiveError(f"could not find a free run id under {base}")

    def publish(self) -> None:
        """Move a staged run folder to its run id (a no-op for a folder created in place)."""
        if self.final is None:
            return
        try:
            os.rename(self.folder, self.final)  # fails on a non-empty folder of that name
        except OSError as e:
            raise ArchiveError(f"cannot create {self.final}: {e.strerror or e}") from e
        _fsync_dir(self.final.parent)
        self.folder, self.final = self.final, None

    def discard(self) -> None:
        """Remove a staged folder that was never published (nothing else is touched)."""
        if self.final is None:
            return
        for child in self.folder.glob("*"):
            try:
                child.unlink()
            except OSError:
                pass
        try:
            self.folder.rmdir()
        except OSError:
            pass

    @classmethod
    def reopen(cls, folder: Path) -> "RunWriter":
        """Open an existing run folder to resume it (same run id, same label).

        Temporary files a killed writer left behind (``.<file>.<random>.tmp``) are removed.
        """
        folder = Path(folder)
        _refuse_symlink(folder, folder.parent.parent)
        _refuse_symlink(folder.parent, folder.parent.parent)
        env_path = folder / ENVIRONMENT_FILE
        if not env_path.is_file():
            raise ArchiveError(f"{folder} is not a run folder: {ENVIRONMENT_FILE} is missing")
        meta = read_table(env_path, ENVIRONMENT_FILE)[1]
        run_id, label = meta["run_id"], meta.get("label", folder.parent.name)
        if not is_valid_run_id(run_id) or folder.name != run_id:
            raise ArchiveError(f"{env_path}: run id {run_id!r} does not match the folder name {folder.name!r}")
        if not os.access(folder, os.W_OK):
            raise ArchiveError(f"run folder {folder} is not writable")
        try:
            label = sanitize_label(label)
        except SchemaError as e:
            raise ArchiveError(f"{env_path}: {e}") from None
        for pattern in [f".{name}.*.tmp" for name in (*RUN_FILES, GPU_STATE_FILE)] + [f"{PARTS_FOLDER}/.*.tmp"]:
            for tmp in folder.glob(pattern):
                try:
                    tmp.unlink()
                except OSError:
                    pass
        writer = cls(folder=folder, run_id=run_id, label=label)
        writer.compact()  # what a killed run appended joins the main files before resuming
        return writer

    def write(self, kind: str, records: Iterable[Any]) -> None:
        table = records_to_table(kind, records, run_id=self.run_id, label=self.label)
        write_table_atomic(table, self.folder / kind)

    def write_environment(self, entries: Iterable[Any]) -> None:
        self.write(ENVIRONMENT_FILE, entries)

    def write_cases(self, cases: Iterable[Any], samples: Iterable[Any]) -> None:
        # Samples first: a crash between the two leaves samples for a case whose row is
        # not yet written, which a resume re-measures, never a case row without samples.
        self.write(SAMPLES_FILE, samples)
        self.write(CASES_FILE, cases)

    def write_attempt(self, cases: list[Any], samples: list[Any], gpu_state: list[Any] = ()) -> None:
        """Append one finished attempt as part files; its cases part, written last, commits it.

        A crash before the cases part leaves parts no reader counts (the attempt was in
        flight); one after leaves a committed attempt that ``merge_parts`` reads.
        """
        parts = self.folder / PARTS_FOLDER
        try:
            parts.mkdir(exist_ok=True)
        except OSError as e:
            raise ArchiveError(f"cannot create {parts}: {e.strerror or e}") from e
        if self._next_part is None:
            self._next_part = max((s for s, _ in _part_files(parts)), default=-1) + 1
        seq = self._next_part
        self._next_part += 1
        for kind, records in ((SAMPLES_FILE, samples), (GPU_STATE_FILE, gpu_state), (CASES_FILE, cases)):
            if records or kind == CASES_FILE:
                table = records_to_table(kind, records, run_id=self.run_id, label=self.label)
                write_table_atomic(table, parts / f"{seq:06d}.{kind}")

    def compact(self) -> None:
        """Fold the part files into the main files, then remove them (crash-safe at every step).

        The main files are rewritten (samples and GPU state first, cases last) with what
        ``merge_parts`` reads; the parts are removed afterwards, each cases part before
        its companions, so a crash at any point leaves a folder that reads the same.
        """
        parts = self.folder / PARTS_FOLDER
        if not parts.is_dir():
            return
        tables = {kind: read_table(self.folder / kind, kind)[0] for kind in (CASES_FILE, SAMPLES_FILE)}
        if (self.folder / GPU_STATE_FILE).is_file():
            tables[GPU_STATE_FILE] = read_table(self.folder / GPU_STATE_FILE, GPU_STATE_FILE)[0]
        merged = merge_parts(self.folder, tables)
        meta = table_meta(self.run_id, self.label)
        for kind in (SAMPLES_FILE, GPU_STATE_FILE, CASES_FILE):
            table = merged.get(kind)
            if table is None or (kind == GPU_STATE_FILE and table.num_rows == 0 and kind not in tables):
                continue
            write_table_atomic(table.replace_schema_metadata(meta), self.folder / kind)
        for seq, kind in sorted(_part_files(parts), key=lambda p: (p[0], p[1] != CASES_FILE)):
            try:
                (parts / f"{seq:06d}.{kind}").unlink()
            except OSError as e:
                raise ArchiveError(f"cannot remove {parts / f'{seq:06d}.{kind}'}: {e.strerror or e}") from e
        for leftover in parts.iterdir():  # an uncommitted attempt's parts, temp files
            try:
                leftover.unlink()
            except OSError:
                pass
        try:
            parts.rmdir()
        except OSError:
            pass
        _fsync_dir(self.folder)
        self._next_part = None


def table_meta(run_id: str, label: str) -> dict[bytes, bytes]:
    from runformat.schema import table_metadata

    return table_metadata(run_id=run_id, label=label)


def _part_files(parts: Path) -> list[tuple[int, str]]:
    """(sequence number, file kind) of every part file in ``parts``."""
    out = []
    try:
        names = [p.name for p in parts.iterdir()]
    except OSError:
        return out
    for name in names:
        seq, _, kind = name.partition(".")
        if seq.isdigit() and kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
            out.append((int(seq), kind))
    return out


def has_parts(folder: Path) -> bool:
    """True when a run folder holds part files not yet compacted (a run recording, or killed)."""
    return (Path(folder) / PARTS_FOLDER).is_dir()


_KEYS = ["case_id", "process"]


def merge_parts(folder: Path, tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """The main tables of ``folder`` (given, validated) with its committed parts merged in.

    A part is committed when its cases part exists. Each (case, process) attempt is
    taken from the last source that has a case row for it (main files, then parts in
    order), its samples and GPU-state rows from the same source; rows of keys with no
    case row anywhere (samples written just before a kill) are kept as they were.
    Returns cases, samples and GPU-state tables (an empty GPU-state table where there
    is none). Raises ``ArchiveError`` naming a part file that does not read.
    """
    from runformat.schema import SCHEMAS

    folder = Path(folder)
    out = dict(tables)
    if GPU_STATE_FILE not in out:
        out[GPU_STATE_FILE] = SCHEMAS[GPU_STATE_FILE].empty_table()
    parts_dir = folder / PARTS_FOLDER
    files = _part_files(parts_dir) if parts_dir.is_dir() else []
    committed = sorted({seq for seq, kind in files if kind == CASES_FILE})
    if not committed:
        return out
    present = set(files)
    pieces: dict[str, list[pa.Table]] = {}
    for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
        pieces[kind] = [_ranked(out[kind], kind, 0)]
    for rank, seq in enumerate(committed, start=1):
        for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
            if (seq, kind) in present:
                path = parts_dir / f"{seq:06d}.{kind}"
                try:
                    table = pq.read_table(path)
                except Exception as e:  # validated below, all parts of a kind at once (one pass, not one per file)
                    raise ArchiveError(f"{path}: not a readable Parquet file ({e})") from e
                pieces[kind].append(_ranked(table, kind, rank))
    for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
        parts_only = pa.concat_tables(pieces[kind][1:]) if len(pieces[kind]) > 1 else None
        if parts_only is not None and parts_only.num_rows:
            try:
                _check_strings(parts_only, f"{parts_dir}: ")
                validate_table(kind, parts_only.drop_columns(["_rank", "_row"]).replace_schema_metadata(
                    out[kind].schema.metadata or {b"schema_version": b"2", b"run_id": b"?"}), where=f"{parts_dir} ({kind} parts)")
            except SchemaError as e:
                raise ArchiveError(str(e)) from e
    cases = pa.concat_tables(pieces[CASES_FILE])
    winners = cases.select([*_KEYS, "_rank"]).group_by(_KEYS).aggregate([("_rank", "max")])
    import pyarrow.compute as pc

    for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
        table = pa.concat_tables(pieces[kind]).join(winners, _KEYS, join_type="left outer")
        keep = pc.or_kleene(pc.is_null(table["_rank_max"]), pc.equal(table["_rank"], table["_rank_max"]))
        table = table.filter(pc.fill_null(keep, True)).sort_by([("_rank", "ascending"), ("_row", "ascending")])
        table = table.drop_columns(["_rank", "_rank_max", "_row"])
        schema = SCHEMAS[kind]
        out[kind] = table.select(schema.names).cast(schema).replace_schema_metadata(out[kind].schema.metadata)
    return out


def _ranked(table: pa.Table, kind: str, rank: int) -> pa.Table:
    """``table`` in its kind's schema with its source rank and row number (to keep order)."""
    from runformat.schema import SCHEMAS

    schema = SCHEMAS[kind]
    t = upgrade_table(kind, table).select(schema.names).replace_schema_metadata(None).cast(schema)
    t = t.append_column("_rank", pa.array([rank] * t.num_rows, type=pa.int32()))
    return t.append_column("_row", pa.array(range(t.num_rows), type=pa.int64()))


def _refuse_symlink(path: Path, archive: Path) -> None:
    """A label or run folder that is a symbolic link would let writes land outside the archive."""
    if path.is_symlink():
        raise ArchiveError(f"{path} is a symbolic link; a label or run folder must be a real folder inside {archive}")


# No string the collector writes comes near this (error texts are cut at 8 kB); a larger
# one is damage or an attack on whatever renders it.
MAX_STRING_BYTES = 1 << 20


def read_table(path: Path, kind: str) -> tuple[pa.Table, dict[str, str]]:
    """Read and validate one run file; raises ``ArchiveError`` naming the file.

    Beyond ``runformat.schema.validate_table``: every string must be valid UTF-8 (Arrow
    reads Parquet strings unchecked) and at most ``MAX_STRING_BYTES`` long.
    """
    try:
        table = pq.read_table(path)
    except FileNotFoundError as e:
        raise ArchiveError(f"{path}: file not found") from e
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM):
            raise ArchiveError(f"{path}: cannot read ({e.strerror})") from e
        if e.errno == errno.EISDIR:
            raise ArchiveError(f"{path}: is not a regular file (a folder is in its place)") from e
        raise ArchiveError(f"{path}: not a readable Parquet file ({e})") from e
    except Exception as e:  # pyarrow raises ArrowInvalid & co for corrupt files
        raise ArchiveError(f"{path}: not a readable Parquet file ({e})") from e
    try:
        _check_strings(table, f"{path}: ")
        meta = validate_table(kind, table, where=str(path))
        table = upgrade_table(kind, table)  # a version 1 file gains the newer columns, null
    except SchemaError as e:
        raise ArchiveError(str(e)) from e
    except Exception as e:  # anything else a damaged file provokes is still one line
        raise ArchiveError(f"{path}: cannot be validated ({type(e).__name__}: {e})") from e
    return table, meta


def _check_strings(table: pa.Table, prefix: str) -> None:
    import pyarrow.compute as pc

    for field in table.schema:
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            continue
        column = table.column(field.name)
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            raise SchemaError(f"{prefix}column {field.name!r} holds text that is not valid UTF-8") from None
        longest = pc.max(pc.binary_length(column)).as_py() if len(column) else None
        if longest is not None and longest > MAX_STRING_BYTES:
            raise SchemaError(
                f"{prefix}column {field.name!r} holds a string of {longest:,} bytes; the limit is {MAX_STRING_BYTES:,}"
            )


def read_run(folder: Path) -> dict[str, tuple[pa.Table, dict[str, str]]]:
    """Every table of a run folder, validated, with any part files merged in.

    Returns ``{file name: (table, metadata)}`` for the environment, cases, samples and
    GPU-state tables (an empty GPU-state table where the run has none). Raises
    ``ArchiveError`` naming the first file that does not read.
    """
    folder = Path(folder)
    out = {kind: read_table(folder / kind, kind) for kind in RUN_FILES}
    tables = {kind: out[kind][0] for kind in (CASES_FILE, SAMPLES_FILE)}
    if (folder / GPU_STATE_FILE).is_file():
        out[GPU_STATE_FILE] = read_table(folder / GPU_STATE_FILE, GPU_STATE_FILE)
        tables[GPU_STATE_FILE] = out[GPU_STATE_FILE][0]
    merged = merge_parts(folder, tables)
    for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
        meta = out[kind][1] if kind in out else out[CASES_FILE][1]
        out[kind] = (merged[kind], meta)
    return out
