"""A rebuildable cache of each run's validated tables, kept apart from the recorded files.

Reading a run means reading three to four Parquet files and checking them (schema,
metrics and units, one row per attempt, samples for every ok attempt, redaction, the
legacy case ids): about 25 ms a run on a loaded 2-core machine, 25 s for 1,000 runs. An
archive grows by a few runs a night, so ``load_archive`` keeps what it read of every
valid run in a cache folder of its own, outside the archive (which a build never writes:
``$IMAGEBENCH_CACHE``, else ``$XDG_CACHE_HOME/imagebench``, else ``~/.cache/imagebench``,
then ``reporter-v<FORMAT>/<hash of the archive's resolved path>/``) and, next time, reads
again only the runs whose files changed (or that are new):

* ``index.json``: the format, the reporter's version, and per run its label, id, the
  fingerprint of its folder (name, size, inode, mtime and ctime of every file in it,
  ``parts/`` included), the warnings its loading gave, and its rows in each table;
* ``environment.parquet``, ``cases.parquet``, ``samples.parquet``, ``gpu_state.parquet``:
  the runs' tables one after the other, as ``_read_run`` returned them; except that a
  table that is the run's own file as it reads (the samples of a whole run that needed
  no repair, the common case) is not copied: it is read from the run when needed.

The cache is derived data: the recorded files are never written, a hidden folder is
never read as a run, and a cache that does not read, does not match its index, or was
written by another format or reporter version is ignored and written anew. A folder
that cannot be written to (a read-only archive) only costs the next load its speed.

Nothing in it is trusted either: an index larger than ``MAX_INDEX_BYTES`` is refused
unread, every entry is checked against the index's schema (``_entry_problem``: types,
keys, row spans inside their tables) and every table against the run format's schema and
the reader's value checks (``reporter.data.scan``; the lazily read samples when first
read). A cache refused whole, or an entry refused alone, is named (``refused``) and its
runs are read from their own files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from reporter.errors import ReporterError

CACHE_DIR = ".cache"  # the folder name the loader skips inside an archive (an older reporter kept its cache there)
FORMAT = 2  # bump when what _read_run returns (or how it is stored here) changes
# An index holds about 1 kB a run: this is a hundred thousand runs and more; a larger one is not read.
MAX_INDEX_BYTES = 128 * 1024**2
_log = logging.getLogger("reporter.data")


@lru_cache(maxsize=1)  # a metadata lookup (about 1 ms): keys of 1,000 runs ask for it 1,000 times
def _reporter_version() -> str:
    try:
        from importlib.metadata import version

        return version("imagebench")
    except Exception:  # not installed (run from a checkout): the format alone keys the cache
        return "unknown"


def cache_base() -> Path:
    """Where every archive's cache lives: ``$IMAGEBENCH_CACHE``, else the user's cache folder."""
    explicit = os.environ.get("IMAGEBENCH_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imagebench"


def cache_folder(root: Path) -> Path:
    """The cache of the archive at ``root``: one folder per archive, never inside it."""
    key = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return cache_base() / f"reporter-v{FORMAT}" / key


def fingerprint(folder: Path) -> list[list[Any]] | None:
    """Name, size, inode, mtime and ctime of every file under ``folder`` (sorted); None if it cannot be listed."""
    out: list[list[Any]] = []
    try:
        stack = [(folder, "")]
        while stack:
            where, prefix = stack.pop()
            with os.scandir(where) as entries:
                for e in entries:
                    st = e.stat(follow_symlinks=True)
                    name = prefix + e.name
                    if e.is_dir(follow_symlinks=True):
                        stack.append((Path(e.path), name + "/"))
                    else:
                        out.append([name, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns])
    except OSError:
        return None
    out.sort()
    return out


@dataclass
class CachedRun:
    """One run as the cache holds it: its tables (slices of the cached ones), warnings and fingerprint."""

    label: str
    run_id: str
    fingerprint: list[list[Any]]
    tables: dict[str, pa.Table]
    warnings: list[tuple[str, str]]  # (path relative to the archive root, reason)
    # Kinds whose table is the run's own file as it reads: not stored here, read from the run
    # when needed (``read_cache`` gives None in their place). The fingerprint vouches for them.
    from_files: tuple[str, ...] = ()


def read_cache(root: Path, kinds: tuple[str, ...], lazy: tuple[str, ...] = (),
               refused: list[tuple[str, str]] | None = None) -> dict[tuple[str, str], CachedRun]:
    """The cached runs of ``root`` by (label, run_id); empty when there is no usable cache.

    The tables of ``lazy`` kinds are not read now: each run holds, in their place, a
    function that returns its slice (the file read and checked once, by the first call). A
    table the cache does not hold because it is the run's own file (``CachedRun.from_files``)
    is None. What is refused (the whole cache, or one entry) is appended to ``refused`` as
    (file, reason) and logged; a missing cache, or one of another format or reporter
    version, is simply not used.
    """
    folder = cache_folder(root)

    def refuse(path: Path, reason: str) -> None:
        _log.warning("%s: %s", path, reason)
        if refused is not None:
            refused.append((str(path), reason))

    index_path = folder / "index.json"
    try:
        size = index_path.stat().st_size
    except OSError:
        return {}  # no cache yet
    if size > MAX_INDEX_BYTES:
        refuse(index_path, f"is {size:,} bytes, above the limit of {MAX_INDEX_BYTES:,}; not read, the runs are read from their files")
        return {}
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        refuse(index_path, f"does not read as JSON ({type(e).__name__}); the runs are read from their files")
        return {}
    if not isinstance(index, dict):
        refuse(index_path, "is not a JSON object; the runs are read from their files")
        return {}
    if index.get("format") != FORMAT or index.get("reporter") != _reporter_version():
        return {}  # another reporter's cache: written anew
    entries = index.get("runs")
    if not isinstance(entries, list):
        refuse(index_path, "holds no list of runs; the runs are read from their files")
        return {}
    try:
        present = {k for k in kinds if (folder / k).is_file()}
        tables, rows = {}, {}
        for k in kinds:
            if k not in present:
                rows[k] = 0
            elif k in lazy:
                rows[k] = pq.read_metadata(folder / k).num_rows
            else:
                tables[k] = pq.read_table(folder / k)
                rows[k] = tables[k].num_rows
    except Exception as e:  # noqa: BLE001 - a damaged cache file: the runs are read from their files
        refuse(folder, f"a table does not read ({type(e).__name__}); the runs are read from their files")
        return {}
    for k, table in tables.items():
        reason = _table_problem(k, table)
        if reason is not None:
            refuse(folder / k, f"{reason}; the runs are read from their files")
            return {}
    later = {k: _LazyTable(folder / k, k) for k in lazy if k in present}
    out: dict[tuple[str, str], CachedRun] = {}
    for n, entry in enumerate(entries):
        reason = _entry_problem(entry, kinds, rows)
        if reason is not None:
            refuse(index_path, f"entry {n}: {reason}; that run is read from its files")
            continue
        parts: dict[str, Any] = {}
        from_files = tuple(entry.get("from_files", ()))
        for k in kinds:
            start, count = entry["rows"][k]
            if k in from_files:
                parts[k] = None
            else:
                parts[k] = later[k].slice_of(start, count) if k in later else tables[k].slice(start, count)
        out[(entry["label"], entry["run_id"])] = CachedRun(
            entry["label"], entry["run_id"], entry["fingerprint"], parts, [tuple(w) for w in entry["warnings"]],
            from_files,
        )
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_problem(entry: Any, kinds: tuple[str, ...], rows: dict[str, int]) -> str | None:
    """Why one index entry is not one ``write_cache`` writes, or None.

    ``{"label": str, "run_id": str, "fingerprint": [[name, size, inode, mtime, ctime], ...],
    "warnings": [[path, reason], ...], "rows": {kind: [start, count]}, "from_files": [kind, ...]}``,
    each span inside its table.
    """
    if not isinstance(entry, dict):
        return "not an object"
    for key in ("label", "run_id"):
        if not isinstance(entry.get(key), str):
            return f"{key!r} is not a string"
    fp = entry.get("fingerprint")
    if not isinstance(fp, list) or not all(
            isinstance(f, list) and len(f) == 5 and isinstance(f[0], str) and all(_is_int(x) for x in f[1:]) for f in fp):
        return "'fingerprint' is not a list of [name, size, inode, mtime, ctime]"
    warnings = entry.get("warnings")
    if not isinstance(warnings, list) or not all(
            isinstance(w, list) and len(w) == 2 and all(isinstance(x, str) for x in w) for w in warnings):
        return "'warnings' is not a list of [path, reason]"
    from_files = entry.get("from_files", [])
    if not isinstance(from_files, list) or not all(isinstance(k, str) and k in kinds for k in from_files):
        return "'from_files' is not a list of table names"
    spans = entry.get("rows")
    if not isinstance(spans, dict):
        return "'rows' is not an object"
    for k in kinds:
        span = spans.get(k)
        if not (isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)):
            return f"its rows of {k} are not [start, count]"
        start, count = span
        if start < 0 or count < 0 or start + count > rows[k]:
            return f"its rows of {k} ({start}, {count}) lie outside the table's {rows[k]:,}"
    return None


def _table_problem(kind: str, table: pa.Table) -> str | None:
    """Why a cached table is not one of ``kind`` as the reader keeps it, or None: the run format's
    columns in their types (strings as dictionaries or not), its values as ``reporter.data.scan`` checks them."""
    from runformat.schema import SCHEMAS

    from reporter.data.scan import row_limit_problem, valid_table

    schema = SCHEMAS.get(kind)
    if schema is None:
        return None
    for f in schema:
        if table.schema.get_field_index(f.name) < 0:
            return f"has no column {f.name!r}"
        actual = table.schema.field(f.name).type
        if pa.types.is_dictionary(actual):
            actual = actual.value_type
        if not actual.equals(f.type):
            return f"column {f.name!r} has type {actual}, expected {f.type}"
    if not valid_table(kind, table):
        return "holds values no run records (nulls, unknown names, non-finite or negative numbers)"
    return None


class _LazyTable:
    """A cached table read on first use (a report from cached summaries never reads the samples),
    checked as ``read_cache`` checks the others; one that fails removes the cache (rebuilt next
    time) and stops the command with one line."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.table: pa.Table | None = None

    def slice_of(self, start: int, n: int) -> Callable[[], pa.Table]:
        def read() -> pa.Table:
            if self.table is None:
                try:
                    table = pq.read_table(self.path)
                    reason = _table_problem(self.kind, table)
                except Exception as e:  # noqa: BLE001 - a damaged cache file is one line, not a traceback
                    reason = f"does not read ({type(e).__name__})"
                if reason is not None:
                    shutil.rmtree(self.path.parent, ignore_errors=True)
                    raise ReporterError(f"{self.path}: the run cache {reason}; it was removed, run the command again")
                self.table = table
            return self.table.slice(start, n)

        return read


def write_cache(root: Path, kinds: tuple[str, ...], runs: list[CachedRun]) -> None:
    """Write ``runs`` as the cache of ``root`` (atomically: a reader sees the old cache or the new one)."""
    folder = cache_folder(root)
    if not runs:
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".reporter-v{FORMAT}.", dir=folder.parent))
    except OSError:
        return
    try:
        entries, offsets = [], dict.fromkeys(kinds, 0)
        for r in runs:
            rows = {}
            for k in kinds:
                n = 0 if k in r.from_files else r.tables[k].num_rows
                rows[k] = [offsets[k], n]
                offsets[k] += n
            entries.append({"label": r.label, "run_id": r.run_id, "fingerprint": r.fingerprint,
                            "warnings": [list(w) for w in r.warnings], "rows": rows, "from_files": list(r.from_files)})
        for k in kinds:
            stored = [r.tables[k] for r in runs if k not in r.from_files]
            if not stored:  # every run's table is its own file: no file (read as none, of no rows)
                continue
            table = pa.concat_tables(stored).unify_dictionaries()
            pq.write_table(table, tmp / k, compression="zstd")
        index = {"format": FORMAT, "reporter": _reporter_version(), "runs": entries}
        (tmp / "index.json").write_text(json.dumps(index), encoding="utf-8")
        old = None
        if folder.exists():
            old = folder.with_name(tmp.name + ".old")
            folder.rename(old)
        tmp.rename(folder)
        tmp = old  # what is left to remove
    except Exception:  # a full disk, a permission: the cache is only an optimisation
        pass
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
