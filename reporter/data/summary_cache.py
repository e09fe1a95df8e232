"""A rebuildable cache of per-run and per-label summaries, so a cached report reads no samples.

Each run's per-process units (``reporter.model.compare._units`` of its ok samples) depend on
that run alone; each label's pooled summaries (quantiles of all its samples) on its runs
alone. Both are kept in a folder of their own, beside the run cache and outside the
archive (``reporter.data.run_cache.cache_base()/summaries-v<FORMAT>/<archive key>/``):

* ``units/``: ``index.json`` (per run key, its rows) and ``data.parquet``;
* ``labels/``: ``index.json`` (per label key, its rows) and ``data.parquet``.

A run's key hashes its label, id and folder fingerprint (``reporter.data.run_cache``); a
label's key hashes its runs' keys and the confidence level. Both also hold ``FORMAT``,
the reporter's version and a hash of its source (``reporter.data.build_cache.compute_key``),
so a changed run, a new or deleted run of a label, or a new reporter misses and is
computed again; an entry that rests on a run no longer in the archive as loaded is dropped
at the next write. Each folder is replaced whole and atomically; one that does not read or
does not match its index is ignored and written anew, never trusted: an index larger than
``MAX_INDEX_BYTES`` is not read, and each entry must be ``[start, count, [run key, ...]]``
inside the table (``_entry_problem``); a refused folder is logged in one line.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reporter.data.build_cache import compute_key
from reporter.data.run_cache import cache_folder

FORMAT = 2  # bump when what _units or the label summaries hold (or how they are stored here) changes
MAX_INDEX_BYTES = 128 * 1024**2  # an entry's index line is about 100 bytes: a million entries and more
_log = logging.getLogger("reporter.data")


def run_key(label: str, run_id: str, fingerprint: list[list[Any]]) -> str:
    """The key of one run's units: its label, id and folder fingerprint."""
    return compute_key("units", FORMAT, label, run_id, fingerprint)


def label_key(run_keys: list[str], confidence: float) -> str:
    """The key of one label's pooled summaries: the keys of its runs (sorted) and the confidence."""
    return compute_key("label", FORMAT, sorted(run_keys), float(confidence))


class SummaryCache:
    """The summaries cache of one archive: entries read once, on first use, and written back whole.

    ``live``: the keys of the archive's runs as loaded. An entry that rests on a run not
    among them (changed or deleted since) is dropped at the next write; the others stay,
    whichever selection of the archive wrote them.
    """

    def __init__(self, root: Path, live: set[str] | None = None) -> None:
        base = cache_folder(root)
        self.folder = base.parent.parent / f"summaries-v{FORMAT}" / base.name
        self.live = live
        self._entries: dict[str, dict[str, tuple[pd.DataFrame, list[str]]]] = {}
        self._deferring = 0
        self._unwritten: set[str] = set()  # kinds put while deferring, written when it ends

    def get(self, kind: str, keys: list[str]) -> dict[str, pd.DataFrame]:
        """The entries of ``kind`` (``units`` or ``labels``) stored under any of ``keys``."""
        entries = self._read(kind)
        out = {}
        for k in keys:
            if k in entries:
                frame, runs = entries[k]
                if callable(frame):  # a slice of the stored table, cut when first asked for
                    frame = frame()
                    entries[k] = (frame, runs)
                out[k] = frame
        return out

    def put(self, kind: str, new: dict[str, tuple[pd.DataFrame, list[str]]]) -> None:
        """Store ``new`` (key: the frame and the keys of the runs it rests on) and write the folder."""
        entries = {k: v for k, v in self._read(kind).items() if self.live is None or set(v[1]) <= self.live}
        entries.update(new)
        self._entries[kind] = entries
        if self._deferring:
            self._unwritten.add(kind)
        else:
            _write(self.folder / kind, entries)

    @contextmanager
    def deferred(self) -> Iterator["SummaryCache"]:
        """Within it, ``put`` keeps entries in memory; each kind put is written once, when it ends
        (a folder is written whole: a build that summarises every run one at a time writes it once,
        not once per run)."""
        self._deferring += 1
        try:
            yield self
        finally:
            self._deferring -= 1
            if not self._deferring:
                for kind in sorted(self._unwritten):
                    _write(self.folder / kind, self._entries[kind])
                self._unwritten.clear()

    def _read(self, kind: str) -> dict[str, tuple[pd.DataFrame, list[str]]]:
        if kind not in self._entries:
            self._entries[kind] = _read(self.folder / kind)
        return self._entries[kind]


def _read(folder: Path) -> dict[str, pd.DataFrame]:
    index_path = folder / "index.json"
    try:
        size = index_path.stat().st_size
    except OSError:
        return {}  # nothing stored yet
    if size > MAX_INDEX_BYTES:
        _log.warning("%s: is %s bytes, above the limit of %s; not read, the summaries are computed again",
                     index_path, f"{size:,}", f"{MAX_INDEX_BYTES:,}")
        return {}
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            return {}
        entries = index.get("entries")
        if not isinstance(entries, dict) or not _is_int(index.get("rows")):
            raise ValueError("the index has no entries and rows")
        # Strings read through their dictionaries (few distinct, many rows), then decoded: several times faster.
        schema = pq.read_schema(folder / "data.parquet")
        text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        table = pq.read_table(folder / "data.parquet", read_dictionary=text).cast(schema)
        if table.num_rows != index["rows"]:
            raise ValueError(f"the index says {index['rows']} rows, the table holds {table.num_rows}")
        frame = table.to_pandas()
        out = {}
        for key, entry in entries.items():
            reason = _entry_problem(entry, len(frame))
            if reason is not None:
                raise ValueError(f"entry {key[:40]!r}: {reason}")
            start, n, runs = entry
            out[key] = (Rows(frame, start, n), runs)
        return out
    except Exception as e:  # noqa: BLE001 - missing, corrupt, or of another layout: rebuilt, never trusted
        _log.warning("%s: not used (%s); the summaries are computed again", folder, str(e)[:200] or type(e).__name__)
        return {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_problem(entry: Any, rows: int) -> str | None:
    """Why an index entry is not ``[start, count, [run key, ...]]`` within ``rows`` rows, or None."""
    if not (isinstance(entry, list) and len(entry) == 3 and _is_int(entry[0]) and _is_int(entry[1])
            and isinstance(entry[2], list) and all(isinstance(r, str) for r in entry[2])):
        return "not [start, count, [run key, ...]]"
    start, n = entry[0], entry[1]
    if start < 0 or n < 0 or start + n > rows:
        return f"rows ({start}, {n}) lie outside the table's {rows}"
    return None


class Rows:
    """Rows ``start`` to ``start + n`` of ``frame``, cut when called: an entry kept as a slice of a
    larger table until it is used (written back, consecutive slices of one table are written as one)."""

    __slots__ = ("frame", "start", "n")

    def __init__(self, frame: pd.DataFrame, start: int, n: int) -> None:
        self.frame, self.start, self.n = frame, start, n

    def __call__(self) -> pd.DataFrame:
        return self.frame.iloc[self.start:self.start + self.n].reset_index(drop=True)


def _write(folder: Path, entries: dict[str, tuple[pd.DataFrame, list[str]]]) -> None:
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp: Path | None = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError:
        return
    try:
        spans, start = {}, 0
        pieces: list[list[Any]] = []  # [frame, start, n]: runs of consecutive rows of one table
        for key, (df, runs) in entries.items():
            if callable(df) and not isinstance(df, Rows):
                df = df()
            piece = [df.frame, df.start, df.n] if isinstance(df, Rows) else [df, 0, len(df)]
            spans[key] = [start, piece[2], list(runs)]
            start += piece[2]
            if not piece[2]:
                continue
            last = pieces[-1] if pieces else None
            if last is not None and last[0] is piece[0] and last[1] + last[2] == piece[1]:
                last[2] += piece[2]
            else:
                pieces.append(piece)
        if pieces:
            # Each piece turned into Arrow on its own and the tables joined without a copy (text
            # columns already in Arrow are not copied at all); one pandas frame of every piece
            # only where their column types differ.
            try:
                table = pa.concat_tables([pa.Table.from_pandas(f.iloc[a:a + n], preserve_index=False)
                                          for f, a, n in pieces], promote_options="default")
            except (pa.ArrowException, ValueError, TypeError):
                table = pa.Table.from_pandas(pd.concat([f.iloc[a:a + n] for f, a, n in pieces], ignore_index=True),
                                             preserve_index=False)
        else:
            first = next(iter(entries.values()), (pd.DataFrame(), []))[0]
            frame = (first.frame if isinstance(first, Rows) else first() if callable(first) else first).iloc[0:0]
            table = pa.Table.from_pandas(frame, preserve_index=False)
        pq.write_table(table, tmp / "data.parquet")
        (tmp / "index.json").write_text(json.dumps({"format": FORMAT, "rows": start, "entries": spans}), encoding="utf-8")
        old = None
        if folder.exists():
            old = folder.with_name(tmp.name + ".old")
            folder.rename(old)
        tmp.rename(folder)
        tmp = old
    except Exception:  # a full disk, a permission: the cache is only an optimisation
        pass
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
