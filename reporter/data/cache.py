"""The reporter's one cache: what it derived from an archive, kept apart from the recorded files.

Reading a run means reading and checking three to four Parquet files (about 25 ms a run on
a loaded 2-core machine, 25 s for 1,000 runs); summarising it means a sort of its samples;
an article, a page or a chart takes seconds. An archive grows by a few runs a night, so each
command keeps what it derived here and, next time, derives again only what rests on a run
that changed (or is new), or on a new reporter.

**Where.** ``$IMAGEBENCH_CACHE``, else ``$XDG_CACHE_HOME/imagebench``, else
``~/.cache/imagebench`` (``cache_base``: the object-store mirrors and the charts' fonts live
there too), then ``reporter-v<FORMAT>/`` (``cache_root``); never in the archive or the site.

**What, by name.** Table sets of one archive, each replaced whole, in
``<name>/<hash of the archive's resolved path>/`` (``archive_folder``):

* ``runs``: what ``load_archive`` read and checked of each valid run (``read_cache``,
  ``write_cache``): ``index.json`` (per run its label, id, folder ``fingerprint`` (name,
  size, inode, mtime and ctime of every file in it, ``parts/`` included), the warnings its
  loading gave, and its rows in each table) and the runs' tables one after the other, as
  the loader returned them (the index names those written); except that a table that is the
  run's own file as it reads (the samples of a whole run that needed no repair, the common
  case) is not copied: it is read from the run when needed.
* ``units``: each run's per-process units, under ``run_key`` (its label, id and fingerprint);
* ``labels``: each label's pooled summaries, under ``label_key`` (its runs' keys and the
  confidence). Both (``SummaryCache``): ``index.json`` (per key its rows and the run keys it
  rests on) and ``data.parquet``; an entry that rests on a run no longer in the archive as
  loaded is dropped at the next write.

Entries, one file a key, in ``<name>/<key>.pickle`` (``load_entry``, ``store_entry``):
``articles`` (one article's comparison and its computed article in every language, keyed by
all it reads), ``pages`` (rendered pages with their charts' SVGs), ``summaries``
(``compute_summaries`` of a set of runs), ``public`` (what MkDocs last built a public folder
from, and the folder's fingerprint); and ``charts/<key>.svg`` (``load_svg``, ``store_svgs``).

**One key scheme.** ``key(*inputs)`` hashes ``FORMAT``, the reporter's version and a hash of
its source, the run format's and the collector's (``code_digest``), then the inputs. An
entry's file is named by its key, so an entry whose inputs changed is never found, only left
behind; a table set's index holds ``version()`` (the key of no inputs) and its rows are
looked up by keys (or, for the runs, checked against each run's fingerprint), so a set that
another reporter wrote is written anew, and a row whose run changed is derived again.

**One write path.** A file is written beside its place and renamed over it
(``_replace_file``); a table set is written in a folder beside its place, every file of it
marked with one generation, and swapped in whole (``_replace_folder``). A reader, or a
writer beside it, sees the old one or the new one, never half of one (a reader that meets
files of two generations uses none). A folder that cannot be written (a read-only or full
disk) only costs the next command its speed.

**One read path for what is not trusted.** A file larger than its limit is refused unread
(``_read_bounded``); an index must read as a JSON object (``_read_index``), each entry of the
shape written (``_run_entry_problem``, ``_frame_entry_problem``), each run table as the run
format and the reader's checks want it (``_table_problem``, ``reporter.data.scan``), a pickle
must name its own key, an SVG end with ``</svg>``. What is refused is logged in one line (for
the runs also named in ``refused``), and derived again from the runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reporter.errors import ReporterError

# Bump when what any name holds (or how it is stored) changes shape. 3: one cache, one layout.
FORMAT = 3
RUNS, UNITS, LABELS = "runs", "units", "labels"  # table sets of one archive
ENTRIES = ("articles", "pages", "summaries", "public")  # pickled entries, one file a key
CHARTS = "charts"
# An index holds about 1 kB a run (100 bytes a summary): a hundred thousand runs and more.
MAX_INDEX_BYTES = 128 * 1024**2
# An article's entry is a few megabytes at most, a chart's SVG a few hundred kilobytes.
MAX_ENTRY_BYTES = 256 * 1024**2
MAX_SVG_BYTES = 16 * 1024**2
_GENERATION = b"imagebench.cache.generation"  # in each table's metadata: the index it was written with
_log = logging.getLogger("reporter.data")

Refuse = Callable[[Path, str], None]


# ------------------------------------------------------------------ where, and the keys


def cache_base() -> Path:
    """Where everything the reporter keeps lives: ``$IMAGEBENCH_CACHE``, else the user's cache folder."""
    explicit = os.environ.get("IMAGEBENCH_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imagebench"


def cache_root() -> Path:
    """The cache of this format: every name's folder is in it."""
    return cache_base() / f"reporter-v{FORMAT}"


@dataclass(frozen=True)
class ArchiveId:
    """An archive as the cache knows it: its folder, and the digest of that folder's resolved path,
    which names the archive's table sets and keys what is derived from it. Made once, where the
    archive is loaded (``ArchiveId.of``); from there on the archive is passed by it, not by its path."""

    path: Path
    digest: str

    @classmethod
    def of(cls, root: "ArchiveId | str | os.PathLike[str]") -> "ArchiveId":
        if isinstance(root, ArchiveId):
            return root
        digest = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
        return cls(Path(root), digest)


def archive_folder(name: str, archive: "ArchiveId | Path") -> Path:
    """The table set ``name`` (``RUNS``, ``UNITS``, ``LABELS``) of ``archive`` (its id, or its folder)."""
    return cache_root() / name / ArchiveId.of(archive).digest


@lru_cache(maxsize=1)  # a metadata lookup (about 1 ms): keys of 1,000 runs ask for it 1,000 times
def reporter_version() -> str:
    try:
        from importlib.metadata import version as installed

        return installed("imagebench")
    except Exception:  # not installed (run from a checkout): the source's hash tells versions apart
        return "unknown"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the reporter's, the run format's and the collector's source: a checkout's edits are a new version."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parents[1]
    for path in sorted([*here.rglob("*.py"), *(here.parent / "runformat").glob("*.py"), *(here.parent / "collector").glob("*.py")]):
        try:
            h.update(path.name.encode() + b"\x00" + path.read_bytes())
        except OSError:
            h.update(path.name.encode() + b"\x00?")
    return h.hexdigest()


def key(*inputs: Any) -> str:
    """The key of what is derived from ``inputs`` (anything ``repr`` describes faithfully) by this reporter."""
    h = hashlib.sha256()
    for part in (FORMAT, reporter_version(), code_digest(), *inputs):
        h.update(repr(part).encode("utf-8", "surrogateescape"))
        h.update(b"\x00")
    return h.hexdigest()[:40]


def version() -> str:
    """The key of no inputs: what a table set's index holds, so another reporter's set is not read."""
    return key()


def run_key(label: str, run_id: str, fingerprint: list[list[Any]]) -> str:
    """The key of one run's units: its label, id and folder fingerprint."""
    return key(UNITS, label, run_id, fingerprint)


def label_key(run_keys: list[str], confidence: float) -> str:
    """The key of one label's pooled summaries: the keys of its runs (sorted) and the confidence."""
    return key(LABELS, sorted(run_keys), float(confidence))


def chart_key(spec: Any, renderer: str) -> str:
    """The key of one chart's SVG: its Vega-Lite specification and the renderer's version."""
    return key(CHARTS, renderer, json.dumps(spec, sort_keys=True, default=str))


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


# ------------------------------------------------------------------ writing and reading, for every name


def _replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` beside ``path`` and rename it over it (silently not when the folder cannot be written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _replace_folder(folder: Path, fill: Callable[[Path, bytes], None]) -> None:
    """Write a table set by ``fill(tmp, generation)`` in a folder beside ``folder`` and swap it in whole.

    ``fill`` marks every file it writes with ``generation`` (``_marked``; the index as
    ``"generation"``). Two writers at once: one set wins, whole; the other is removed.
    """
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError:
        return
    old = tmp.with_name(tmp.name + ".old")
    try:
        fill(tmp, uuid.uuid4().hex.encode())
        try:
            folder.rename(old)
        except FileNotFoundError:
            pass
        tmp.rename(folder)  # fails where another writer's set came in meanwhile: that one stays
    except Exception:  # noqa: BLE001 - a full disk, a permission: the cache is only an optimisation
        pass
    finally:
        for leftover in (tmp, old):
            if leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)


def _marked(table: pa.Table, generation: bytes) -> pa.Table:
    return table.replace_schema_metadata({**(table.schema.metadata or {}), _GENERATION: generation})


def _generation_of(metadata: dict[bytes, bytes] | None) -> str | None:
    value = (metadata or {}).get(_GENERATION)
    return value.decode("ascii", "replace") if value is not None else None


def _read_bounded(path: Path, limit: int, refuse: Refuse | None = None) -> bytes | None:
    """The bytes of ``path``; None when it is missing, does not read, or is larger than ``limit`` (refused unread)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                if refuse is not None:
                    refuse(path, f"is {size:,} bytes, above the limit of {limit:,}; not read")
                return None
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        if refuse is not None:
            refuse(path, f"does not read ({type(e).__name__})")
        return None


def _read_index(folder: Path, refuse: Refuse) -> dict[str, Any] | None:
    """The index of the table set in ``folder`` when it is one this reporter wrote; None when there is none,
    it is another reporter's (written anew), or it does not read as a JSON object (refused)."""
    path = folder / "index.json"
    data = _read_bounded(path, MAX_INDEX_BYTES, refuse)
    if data is None:
        return None
    try:
        index = json.loads(data)
    except (ValueError, RecursionError) as e:
        refuse(path, f"does not read as JSON ({type(e).__name__})")
        return None
    if not isinstance(index, dict):
        refuse(path, "is not a JSON object")
        return None
    if index.get("version") != version():
        return None
    return index


def _refuser(consequence: str, refused: list[tuple[str, str]] | None = None) -> Refuse:
    """A ``Refuse`` that logs ``path: reason; consequence`` in one line and appends it to ``refused``."""
    def refuse(path: Path, reason: str) -> None:
        text = f"{reason}; {consequence}"
        _log.warning("%s: %s", path, text)
        if refused is not None:
            refused.append((str(path), text))

    return refuse


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ------------------------------------------------------------------ entries: one file a key


def load_entry(name: str, entry_key: str) -> Any | None:
    """The object stored as ``name`` (one of ``ENTRIES``) under ``entry_key``, or None when there is none or it does not read."""
    data = _read_bounded(cache_root() / _entry_name(name) / f"{entry_key}.pickle", MAX_ENTRY_BYTES)
    if data is None:
        return None  # missing, or larger than any entry written: computed again, never unpickled
    try:
        stored_key, value = pickle.loads(data)
    except Exception:  # noqa: BLE001 - truncated, another layout: computed again
        return None
    return value if stored_key == entry_key else None


def store_entry(name: str, entry_key: str, value: Any) -> None:
    """Keep ``value`` as ``name`` under ``entry_key``."""
    data = pickle.dumps((entry_key, value), protocol=pickle.HIGHEST_PROTOCOL)
    _replace_file(cache_root() / _entry_name(name) / f"{entry_key}.pickle", data)


def _entry_name(name: str) -> str:
    if name not in ENTRIES:
        raise ValueError(f"no cache entries named {name!r} (one of {', '.join(ENTRIES)})")
    return name


def load_svg(chart: str) -> str | None:
    """The SVG stored under the chart key ``chart``, or None (missing, too large, torn)."""
    data = _read_bounded(cache_root() / CHARTS / f"{chart}.svg", MAX_SVG_BYTES)
    try:
        text = data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError:
        return None
    return text if text is not None and text.rstrip().endswith("</svg>") else None


def store_svgs(items: Iterable[tuple[str, str]]) -> None:
    """Keep each ``(chart key, SVG)``."""
    for chart, svg in items:
        _replace_file(cache_root() / CHARTS / f"{chart}.svg", svg.encode("utf-8"))


# ------------------------------------------------------------------ runs: the loader's checked tables


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


def read_cache(root: "ArchiveId | Path", kinds: tuple[str, ...], lazy: tuple[str, ...] = (),
               refused: list[tuple[str, str]] | None = None) -> dict[tuple[str, str], CachedRun]:
    """The cached runs of ``root`` by (label, run_id); empty when there is no usable cache.

    The tables of ``lazy`` kinds are not read now: each run holds, in their place, a
    function that returns its slice (the file read and checked once, by the first call). A
    table the cache does not hold because it is the run's own file (``CachedRun.from_files``)
    is None. What is refused (the whole set, or one entry) is appended to ``refused`` as
    (file, reason) and logged; a missing set, or another reporter's, is simply not used.
    """
    folder = archive_folder(RUNS, root)
    refuse = _refuser("the runs are read from their files", refused)
    index = _read_index(folder, refuse)
    if index is None:
        return {}
    entries, written = index.get("runs"), index.get("tables")
    if not isinstance(entries, list):
        refuse(folder / "index.json", "holds no list of runs")
        return {}
    if not (isinstance(written, list) and all(isinstance(k, str) for k in written)):
        refuse(folder / "index.json", "holds no list of tables")
        return {}
    opened = _open_run_tables(folder, [k for k in kinds if k in written], lazy, index.get("generation"), refuse)
    if opened is None:
        return {}
    tables, later, rows = opened  # a kind not written: every run's table of it is its own file
    out: dict[tuple[str, str], CachedRun] = {}
    for n, entry in enumerate(entries):
        reason = _run_entry_problem(entry, kinds, rows)
        if reason is not None:
            _refuser("that run is read from its files", refused)(folder / "index.json", f"entry {n}: {reason}")
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


def _open_run_tables(folder: Path, kinds: list[str], lazy: tuple[str, ...], generation: Any,
                     refuse: Refuse) -> tuple[dict[str, pa.Table], dict[str, "_LazyTable"], dict[str, int]] | None:
    """The set's tables of ``kinds`` (read and checked), its ``lazy`` ones (opened), and their rows; None when
    they do not read, fail their checks (refused) or belong to another generation than the index (not used)."""
    tables: dict[str, pa.Table] = {}
    later: dict[str, _LazyTable] = {}
    rows: dict[str, int] = {}
    problem: tuple[Path, str] | None = None
    try:
        for k in kinds:
            if k in lazy:
                later[k] = _LazyTable(folder / k, k)
                meta = pq.read_metadata(later[k].file)
                rows[k], mark = meta.num_rows, _generation_of(meta.metadata)
            else:
                table = pq.read_table(folder / k)
                mark = _generation_of(table.schema.metadata)
                tables[k] = table.replace_schema_metadata(None)
                rows[k] = table.num_rows
            if mark != generation:
                _log.info("%s: written with another index (a writer beside this reader); not used", folder / k)
                problem = (folder / k, "")
                break
    except Exception as e:  # noqa: BLE001 - a damaged cache file: the runs are read from their files
        problem = (folder, f"a table does not read ({type(e).__name__})")
    for k, table in tables.items():
        reason = _table_problem(k, table) if problem is None else None
        if reason is not None:
            problem = (folder / k, reason)
    if problem is None:
        return tables, later, rows
    if problem[1]:
        refuse(*problem)
    for t in later.values():
        t.close()
    return None


def _run_entry_problem(entry: Any, kinds: tuple[str, ...], rows: dict[str, int]) -> str | None:
    """Why one index entry is not one ``write_cache`` writes, or None (``rows``: the rows of each table written).

    ``{"label": str, "run_id": str, "fingerprint": [[name, size, inode, mtime, ctime], ...],
    "warnings": [[path, reason], ...], "rows": {kind: [start, count]}, "from_files": [kind, ...]}``,
    each span inside its table.
    """
    if not isinstance(entry, dict):
        return "not an object"
    for field in ("label", "run_id"):
        if not isinstance(entry.get(field), str):
            return f"{field!r} is not a string"
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
        if k not in from_files and k not in rows:
            return f"its {k} is in no table of the set"
        if start < 0 or count < 0 or start + count > rows.get(k, 0):
            return f"its rows of {k} ({start}, {count}) lie outside the table's {rows.get(k, 0):,}"
    return None


def _table_problem(kind: str, table: pa.Table) -> str | None:
    """Why a cached table is not one of ``kind`` as the reader keeps it, or None: the run format's
    columns in their types (strings as dictionaries or not), its values as ``reporter.data.scan`` checks them."""
    from runformat.schema import SCHEMAS

    from reporter.data.scan import valid_table

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
    checked as ``read_cache`` checks the others; one that fails removes the set (rebuilt next
    time) and stops the command with one line. Opened when the index is read, so a writer that
    replaces the set meanwhile does not change what it reads."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.file = pa.OSFile(str(path))
        self.table: pa.Table | None = None

    def close(self) -> None:
        self.file.close()

    def slice_of(self, start: int, n: int) -> Callable[[], pa.Table]:
        def read() -> pa.Table:
            if self.table is None:
                try:
                    table = pq.read_table(self.file).replace_schema_metadata(None)
                    reason = _table_problem(self.kind, table)
                except Exception as e:  # noqa: BLE001 - a damaged cache file is one line, not a traceback
                    reason = f"does not read ({type(e).__name__})"
                finally:
                    self.close()
                if reason is not None:
                    shutil.rmtree(self.path.parent, ignore_errors=True)
                    raise ReporterError(f"{self.path}: the run cache {reason}; it was removed, run the command again")
                self.table = table
            return self.table.slice(start, n)

        return read


def write_cache(root: "ArchiveId | Path", kinds: tuple[str, ...], runs: list[CachedRun]) -> None:
    """Write ``runs`` as the cached runs of ``root``, replacing the set whole."""
    if not runs:
        return

    def fill(tmp: Path, generation: bytes) -> None:
        entries, offsets = [], dict.fromkeys(kinds, 0)
        for r in runs:
            rows = {}
            for k in kinds:
                n = 0 if k in r.from_files else r.tables[k].num_rows
                rows[k] = [offsets[k], n]
                offsets[k] += n
            entries.append({"label": r.label, "run_id": r.run_id, "fingerprint": r.fingerprint,
                            "warnings": [list(w) for w in r.warnings], "rows": rows, "from_files": list(r.from_files)})
        written = []
        for k in kinds:
            stored = [r.tables[k] for r in runs if k not in r.from_files]
            if not stored:  # every run's table is its own file: no file (read as none, of no rows)
                continue
            table = pa.concat_tables(stored).unify_dictionaries()
            pq.write_table(_marked(table, generation), tmp / k, compression="zstd")
            written.append(k)
        index = {"version": version(), "generation": generation.decode(), "tables": written, "runs": entries}
        (tmp / "index.json").write_text(json.dumps(index), encoding="utf-8")

    _replace_folder(archive_folder(RUNS, root), fill)


# ------------------------------------------------------------------ units and labels: the summaries


class SummaryCache:
    """The ``units`` and ``labels`` of one archive: entries read once, on first use, and written back whole.

    ``live``: the keys of the archive's runs as loaded. An entry that rests on a run not
    among them (changed or deleted since) is dropped at the next write; the others stay,
    whichever selection of the archive wrote them.
    """

    def __init__(self, root: "ArchiveId | Path", live: set[str] | None = None) -> None:
        self.folders = {name: archive_folder(name, root) for name in (UNITS, LABELS)}
        self.live = live
        self._entries: dict[str, dict[str, tuple[Any, list[str]]]] = {}
        self._deferring = 0
        self._unwritten: set[str] = set()  # names put while deferring, written when it ends

    def get(self, name: str, keys: list[str]) -> dict[str, pd.DataFrame]:
        """The entries of ``name`` (``UNITS`` or ``LABELS``) stored under any of ``keys``."""
        entries = self._read(name)
        out = {}
        for k in keys:
            if k in entries:
                frame, runs = entries[k]
                if callable(frame):  # a slice of the stored table, cut when first asked for
                    frame = frame()
                    entries[k] = (frame, runs)
                out[k] = frame
        return out

    def put(self, name: str, new: dict[str, tuple[Any, list[str]]]) -> None:
        """Store ``new`` (key: the frame and the keys of the runs it rests on) and write the set."""
        entries = {k: v for k, v in self._read(name).items() if self.live is None or set(v[1]) <= self.live}
        entries.update(new)
        self._entries[name] = entries
        if self._deferring:
            self._unwritten.add(name)
        else:
            _write_frames(self.folders[name], entries)

    @contextmanager
    def deferred(self) -> Iterator["SummaryCache"]:
        """Within it, ``put`` keeps entries in memory; each name put is written once, when it ends
        (a set is written whole: a build that summarises every run one at a time writes it once,
        not once per run)."""
        self._deferring += 1
        try:
            yield self
        finally:
            self._deferring -= 1
            if not self._deferring:
                for name in sorted(self._unwritten):
                    _write_frames(self.folders[name], self._entries[name])
                self._unwritten.clear()

    def _read(self, name: str) -> dict[str, tuple[Any, list[str]]]:
        if name not in self._entries:
            self._entries[name] = _read_frames(self.folders[name])
        return self._entries[name]


class Rows:
    """Rows ``start`` to ``start + n`` of ``frame``, cut when called: an entry kept as a slice of a
    larger table until it is used (written back, consecutive slices of one table are written as one)."""

    __slots__ = ("frame", "start", "n")

    def __init__(self, frame: pd.DataFrame, start: int, n: int) -> None:
        self.frame, self.start, self.n = frame, start, n

    def __call__(self) -> pd.DataFrame:
        return self.frame.iloc[self.start:self.start + self.n].reset_index(drop=True)


def _read_frames(folder: Path) -> dict[str, tuple[Rows, list[str]]]:
    """The entries of the summaries set in ``folder``, each a slice of its one table; empty when there is
    none, it is another reporter's, or it is refused (logged: the summaries are computed again)."""
    refuse = _refuser("not used, the summaries are computed again")
    index = _read_index(folder, refuse)
    if index is None:
        return {}
    entries = index.get("entries")
    if not isinstance(entries, dict) or not _is_int(index.get("rows")):
        refuse(folder / "index.json", "holds no entries and rows")
        return {}
    try:
        # Strings read through their dictionaries (few distinct, many rows), then decoded: several times faster.
        schema = pq.read_schema(folder / "data.parquet")
        text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        table = pq.read_table(folder / "data.parquet", read_dictionary=text).cast(schema)
        if _generation_of(schema.metadata) != index.get("generation"):
            _log.info("%s: written with another index (a writer beside this reader); not used", folder)
            return {}
        if table.num_rows != index["rows"]:
            raise ValueError(f"the index says {index['rows']} rows, the table holds {table.num_rows}")
        frame = table.to_pandas()
    except Exception as e:  # noqa: BLE001 - missing, corrupt, or of another layout: rebuilt, never trusted
        refuse(folder / "data.parquet", f"does not read ({str(e)[:200] or type(e).__name__})")
        return {}
    out = {}
    for entry_key, entry in entries.items():
        reason = _frame_entry_problem(entry, len(frame))
        if reason is not None:
            refuse(folder / "index.json", f"entry {entry_key[:40]!r}: {reason}")
            return {}
        start, n, runs = entry
        out[entry_key] = (Rows(frame, start, n), runs)
    return out


def _frame_entry_problem(entry: Any, rows: int) -> str | None:
    """Why an index entry is not ``[start, count, [run key, ...]]`` within ``rows`` rows, or None."""
    if not (isinstance(entry, list) and len(entry) == 3 and _is_int(entry[0]) and _is_int(entry[1])
            and isinstance(entry[2], list) and all(isinstance(r, str) for r in entry[2])):
        return "not [start, count, [run key, ...]]"
    start, n = entry[0], entry[1]
    if start < 0 or n < 0 or start + n > rows:
        return f"rows ({start}, {n}) lie outside the table's {rows}"
    return None


def _write_frames(folder: Path, entries: dict[str, tuple[Any, list[str]]]) -> None:
    """Write ``entries`` (key: a frame, or ``Rows`` of one, and its run keys) as the summaries set in ``folder``."""
    def fill(tmp: Path, generation: bytes) -> None:
        spans, table = _frames_table(entries)
        pq.write_table(_marked(table, generation), tmp / "data.parquet")
        index = {"version": version(), "generation": generation.decode(), "rows": table.num_rows, "entries": spans}
        (tmp / "index.json").write_text(json.dumps(index), encoding="utf-8")

    _replace_folder(folder, fill)


def _frames_table(entries: dict[str, tuple[Any, list[str]]]) -> tuple[dict[str, list[Any]], pa.Table]:
    """Every entry's span (``[start, count, run keys]``) and one table of their rows, one after the other."""
    spans, start = {}, 0
    pieces: list[list[Any]] = []  # [frame, start, n]: runs of consecutive rows of one table
    for entry_key, (df, runs) in entries.items():
        if callable(df) and not isinstance(df, Rows):
            df = df()
        piece = [df.frame, df.start, df.n] if isinstance(df, Rows) else [df, 0, len(df)]
        spans[entry_key] = [start, piece[2], list(runs)]
        start += piece[2]
        if not piece[2]:
            continue
        last = pieces[-1] if pieces else None
        if last is not None and last[0] is piece[0] and last[1] + last[2] == piece[1]:
            last[2] += piece[2]
        else:
            pieces.append(piece)
    if not pieces:
        first = next(iter(entries.values()), (pd.DataFrame(), []))[0]
        frame = (first.frame if isinstance(first, Rows) else first() if callable(first) else first).iloc[0:0]
        return spans, pa.Table.from_pandas(frame, preserve_index=False)
    # Each piece turned into Arrow on its own and the tables joined without a copy (text
    # columns already in Arrow are not copied at all); one pandas frame of every piece
    # only where their column types differ.
    try:
        return spans, pa.concat_tables([pa.Table.from_pandas(f.iloc[a:a + n], preserve_index=False)
                                        for f, a, n in pieces], promote_options="default")
    except (pa.ArrowException, ValueError, TypeError):
        return spans, pa.Table.from_pandas(pd.concat([f.iloc[a:a + n] for f, a, n in pieces], ignore_index=True),
                                           preserve_index=False)
