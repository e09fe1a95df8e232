"""What ``reporter build`` keeps between builds so that it redoes only what changed.

Two stores, both derived and rebuildable, in the reporter's cache folder
(``reporter.data.run_cache.cache_base()``, never in the archive or the site), both keyed by a
hash of everything that goes into them, so a stale entry is never found, only left
behind (an entry's key changes when any input does):

* ``articles/<key>.pickle``: one article's comparison and its computed article in every
  language. The key holds the reporter's version, a hash of its source files (and the
  collector's) and this module's ``FORMAT``, the
  article's specification, titles, languages, build command, the workload registry it
  was given, the problems of the archive, the workload families its runs recorded, and
  the identity of every run the article reads (id and the fingerprint of its folder:
  names, sizes, inodes, times of its files, ``reporter.data.run_cache.fingerprint``): the runs
  of its two sides and those recorded beside them (``--interleave``). A comparison that
  borrowed run-level variance from other runs (``Comparison.borrowed_on``) also stores
  the identity of every run on those devices, and is taken from here only while it
  holds. So a new, changed or deleted run among those computes the article again, and
  any other article is taken from here: a nightly run recomputes the articles of its
  label (and those that borrow on its device), not all of them.
* ``charts/<key>.svg``: one chart's SVG; the key is the hash of its Vega-Lite
  specification and the renderer's version, so a chart is rendered once whatever page
  shows it, and never again while its specification is unchanged.
* ``summaries/<key>.pickle``: ``compute_summaries`` of a set of runs (one run's, for its
  page; a device class's, for the trends), keyed by those runs' identities as above.
* ``public/<key>.pickle``: per public folder, the hash of what MkDocs last built it from
  (every file of the site folder, the navigation, the languages, the base config) and
  the fingerprint of the folder it wrote; when both still hold, MkDocs is not run.

An entry that does not read (truncated, corrupt, another format) is recomputed and
written anew; a cache folder that cannot be written only costs the next build its speed.
An entry larger than ``MAX_ENTRY_BYTES`` (a chart larger than ``MAX_SVG_BYTES``) is refused
before it is read or unpickled, and computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from reporter.data.run_cache import _reporter_version, cache_base

FORMAT = 2  # bump when what an article entry holds changes shape
# An article's entry is a few megabytes at most, a chart's SVG a few hundred kilobytes.
MAX_ENTRY_BYTES = 256 * 1024**2
MAX_SVG_BYTES = 16 * 1024**2


def _folder(kind: str) -> Path:
    return cache_base() / f"build-v{FORMAT}" / kind


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the reporter's and the collector's source files: a checkout's edits count as a new version."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parents[1]
    for path in sorted([*here.rglob("*.py"), *(here.parent / "runformat").glob("*.py"), *(here.parent / "collector").glob("*.py")]):
        try:
            h.update(path.name.encode() + b"\x00" + path.read_bytes())
        except OSError:
            h.update(path.name.encode() + b"\x00?")
    return h.hexdigest()


def compute_key(*parts: Any) -> str:
    """A hash of ``parts`` (anything ``repr`` describes faithfully), with the reporter's version, its code and format."""
    h = hashlib.sha256()
    for part in (FORMAT, _reporter_version(), code_digest(), *parts):
        h.update(repr(part).encode("utf-8", "surrogateescape"))
        h.update(b"\x00")
    return h.hexdigest()[:40]


def load_entry(kind: str, key: str) -> Any | None:
    """The object stored under ``key``, or None when there is none or it does not read."""
    path = _folder(kind) / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_ENTRY_BYTES:
                return None  # not what this module writes: computed again, never unpickled
            stored_key, value = pickle.load(f)
    except Exception:  # missing, truncated, another layout: computed again
        return None
    return value if stored_key == key else None


def store_entry(kind: str, key: str, value: Any) -> None:
    """Keep ``value`` under ``key`` (atomically; silently not when the folder cannot be written)."""
    _write(_folder(kind) / f"{key}.pickle", pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))


def chart_key(spec: Any, renderer: str) -> str:
    return compute_key("chart", renderer, json.dumps(spec, sort_keys=True, default=str))


def load_svg(key: str) -> str | None:
    path = _folder("charts") / f"{key}.svg"
    try:
        if path.stat().st_size > MAX_SVG_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if text.rstrip().endswith("</svg>") else None  # a torn write is not trusted


def store_svgs(items: Iterable[tuple[str, str]]) -> None:
    for key, svg in items:
        _write(_folder("charts") / f"{key}.svg", svg.encode("utf-8"))


def _write(path: Path, data: bytes) -> None:
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
