"""The run archive on disk: ``runs/<label>/<run_id>/*.parquet``, written atomically.

Every write goes to a temporary file in the same folder, is fsynced, then renamed over
the target, so a reader (or a crash) never sees a partial Parquet file. A run folder is
created exclusively: an existing run is never overwritten.
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

from collector.schema import (
    CASES_FILE,
    ENVIRONMENT_FILE,
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
        for name in RUN_FILES:
            for tmp in folder.glob(f".{name}.*.tmp"):
                try:
                    tmp.unlink()
                except OSError:
                    pass
        return cls(folder=folder, run_id=run_id, label=label)

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


# No string the collector writes comes near this (error texts are cut at 8 kB); a larger
# one is damage or an attack on whatever renders it.
MAX_STRING_BYTES = 1 << 20


def read_table(path: Path, kind: str) -> tuple[pa.Table, dict[str, str]]:
    """Read and validate one run file; raises ``ArchiveError`` naming the file.

    Beyond ``collector.schema.validate_table``: every string must be valid UTF-8 (Arrow
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
