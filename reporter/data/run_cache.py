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
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

CACHE_DIR = ".cache"  # the folder name the loader skips inside an archive (an older reporter kept its cache there)
FORMAT = 2  # bump when what _read_run returns (or how it is stored here) changes


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


def read_cache(root: Path, kinds: tuple[str, ...], lazy: tuple[str, ...] = ()) -> dict[tuple[str, str], CachedRun]:
    """The cached runs of ``root`` by (label, run_id); empty when there is no usable cache.

    The tables of ``lazy`` kinds are not read now: each run holds, in their place, a
    function that returns its slice (the file read once, by the first call). A table the
    cache does not hold because it is the run's own file (``CachedRun.from_files``) is None.
    """
    folder = cache_folder(root)
    try:
        index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
        if index.get("format") != FORMAT or index.get("reporter") != _reporter_version():
            return {}
        present = {k for k in kinds if (folder / k).is_file()}
        tables = {k: pq.read_table(folder / k) for k in present if k not in lazy}
        rows = {k: (tables[k].num_rows if k in tables else pq.read_metadata(folder / k).num_rows) if k in present else 0
                for k in kinds}
        later = {k: _LazyTable(folder / k) for k in lazy if k in present}
        out: dict[tuple[str, str], CachedRun] = {}
        for entry in index["runs"]:
            parts: dict[str, Any] = {}
            from_files = tuple(entry.get("from_files", ()))
            for k in kinds:
                start, n = entry["rows"][k]
                if start < 0 or n < 0 or start + n > rows[k]:
                    return {}
                if k in from_files:
                    parts[k] = None
                else:
                    parts[k] = later[k].slice_of(start, n) if k in later else tables[k].slice(start, n)
            out[(entry["label"], entry["run_id"])] = CachedRun(
                entry["label"], entry["run_id"], entry["fingerprint"], parts, [tuple(w) for w in entry["warnings"]],
                from_files,
            )
        return out
    except Exception:  # missing, corrupt, or of another layout: rebuilt, never trusted
        return {}


class _LazyTable:
    """A cached table read on first use (a report from cached summaries never reads the samples)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.table: pa.Table | None = None

    def slice_of(self, start: int, n: int) -> Callable[[], pa.Table]:
        def read() -> pa.Table:
            if self.table is None:
                self.table = pq.read_table(self.path)
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
