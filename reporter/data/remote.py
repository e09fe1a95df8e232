"""An archive at a URL (``s3://bucket/prefix``): its finished runs mirrored into a local cache folder.

The collector uploads each run's files and then a marker (``runformat/remote.py``); only a
run with a marker is taken, at its latest upload, so a run still running or cut short is
never read. Files are checked against the marker's sizes and SHA-256 and land in
``<cache>/<label>/<run_id>/`` through a hidden folder and a rename, so the cache is always
a valid local archive, read like any other. Runs gone from the archive leave the cache.

The archive is written by many hosts, so nothing in it is trusted: every marker is read
through ``runformat.remote.parse_marker`` (one schema: types, required keys, file names,
sizes, digests, and the key it is stored under) after its size is checked
(``MAX_MARKER_BYTES``, refused unread above it); a marker or an upload that fails is one
named ``Problem`` ("upload U of run R in s3://...: its marker is not an object; skipped")
and the run is taken from its latest upload that passes, so a bad upload added to a good
run costs nothing. A download that receives nothing for ``stall_seconds()``
(``$IMAGEBENCH_DOWNLOAD_STALL_S``, default 60 s) stops with one line, and no file is read
past the size its marker gives. The mirror writes only inside its cache folder: labels and
ids are checked names, and a symbolic link inside the cache is never followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.fs as pafs

from runformat.archive import ArchiveError
from runformat.remote import MARKER_FILE, MAX_MARKER_BYTES, Marker, MarkerError, describe_url, is_url, open_filesystem, parse_marker
from runformat.schema import SchemaError, is_valid_run_id, sanitize_label
from reporter.errors import ReporterError
from reporter.data.cache import cache_base
from reporter.data.problem import Problem

UPLOAD_NOTE = ".imagebench-upload"  # in a cached run folder: the upload it holds
CACHE_NOTE = ".imagebench-mirror"  # in the cache root: the URL it mirrors (only such folders are pruned)
STALL_ENV = "IMAGEBENCH_DOWNLOAD_STALL_S"
DEFAULT_STALL_SECONDS = 60.0  # no byte for this long: the download has stalled
LIST_STALL_FACTOR = 10  # a listing is one long request: it may take this many times longer
_BLOCK = 1 << 20


class DownloadStalled(OSError):
    """A read from the archive that returned nothing within ``stall_seconds()``."""


def stall_seconds() -> float:
    """How long a read from the archive may return nothing: ``$IMAGEBENCH_DOWNLOAD_STALL_S``, else 60 s."""
    try:
        value = float(os.environ.get(STALL_ENV, ""))
    except ValueError:
        return DEFAULT_STALL_SECONDS
    return value if 0 < value < float("inf") else DEFAULT_STALL_SECONDS


def _within(seconds: float, what: str, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, or ``DownloadStalled`` naming ``what`` when it has not returned after ``seconds``.

    The call runs in a daemon thread: a read stuck in the network is abandoned (it cannot be
    cancelled), never waited for, and does not keep the process from exiting.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = call(*args)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name="imagebench-archive-read").start()
    if not done.wait(seconds):
        raise DownloadStalled(f"{what} stalled: nothing arrived for {seconds:g} s (${STALL_ENV} sets the limit)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def default_cache(url: str) -> Path:
    """``reporter.data.cache.cache_base()/archives/<name of the URL>``."""
    base = cache_base()
    shown = describe_url(url)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", shown.split("://", 1)[-1]).strip("-")[:80]
    return base / "archives" / f"{name}-{hashlib.sha256(shown.encode()).hexdigest()[:8]}"


def resolve_archive(runs: str | os.PathLike[str]) -> tuple[Path, list[Problem]]:
    """The local folder to read ``runs`` from: itself, or for a URL its mirror (refreshed now)."""
    if not is_url(str(runs)):
        return Path(runs), []
    return mirror_archive(str(runs), default_cache(str(runs)))


def mirror_archive(url: str, cache: Path) -> tuple[Path, list[Problem]]:
    """Bring ``cache`` up to date with the finished runs at ``url``; return it and what was skipped."""
    shown = describe_url(url)
    stall = stall_seconds()
    try:
        fs, base = open_filesystem(url)
        top = base.split("/", 1)[0]  # the bucket: a prefix with no runs yet is an empty archive, a missing bucket an error
        if top and _within(stall, f"reading {shown}", fs.get_file_info, top).type == pafs.FileType.NotFound:
            raise ReporterError(f"--runs {shown}: {top!r} does not exist")
        listing = _within(stall * LIST_STALL_FACTOR, f"listing {shown}", fs.get_file_info,
                          pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except ArchiveError as e:
        raise ReporterError(f"--runs {shown}: {e}") from None
    except DownloadStalled as e:
        raise ReporterError(f"--runs {shown}: {e}") from None
    except (OSError, pa.ArrowException) as e:
        raise ReporterError(f"--runs {shown}: cannot list the archive ({e})") from None
    problems: list[Problem] = []
    uploads: dict[tuple[str, str], list[tuple[str, int]]] = {}  # (label, run id): [(upload id, marker size)]
    for info in listing:
        rel = info.path[len(base):].lstrip("/") if base else info.path
        parts = rel.split("/")
        if info.type != pafs.FileType.File or len(parts) != 4 or parts[3] != MARKER_FILE:
            continue
        label, run_id, upload_id = parts[:3]
        if not _safe_label(label) or not is_valid_run_id(run_id) or not is_valid_run_id(upload_id):
            problems.append(Problem(f"{shown}/{rel}", "not under <label>/<run_id>/<upload_id>/; skipped"))
            continue
        uploads.setdefault((label, run_id), []).append((upload_id, info.size if info.size is not None else -1))
    _make_cache(cache, shown)
    for (label, run_id), found in sorted(uploads.items()):
        problems += _mirror_run(fs, base, shown, cache, label, run_id, sorted(found, reverse=True), stall)
    for label_dir in [p for p in cache.iterdir() if not p.is_symlink() and p.is_dir() and not p.name.startswith(".")]:
        for run_dir in [p for p in label_dir.iterdir() if not p.is_symlink() and p.is_dir()]:
            if (label_dir.name, run_dir.name) not in uploads and (run_dir / UPLOAD_NOTE).is_file():
                shutil.rmtree(run_dir, ignore_errors=True)  # gone from the archive
    return cache, problems


def _make_cache(cache: Path, shown: str) -> None:
    try:
        cache.mkdir(parents=True, exist_ok=True)
        note = cache / CACHE_NOTE
        if note.is_symlink() or (note.exists() and not note.is_file()):
            raise ReporterError(f"--runs {shown}: {note} in the local mirror is not a plain file; remove it")
        note.write_text(shown + "\n")
    except OSError as e:
        raise ReporterError(f"--runs {shown}: cannot write the local mirror {cache} ({e.strerror or e})") from None


def _mirror_run(fs: pafs.FileSystem, base: str, shown: str, cache: Path, label: str, run_id: str,
                found: list[tuple[str, int]], stall: float) -> list[Problem]:
    """Mirror one run from its latest upload that reads (``found``: upload ids and marker sizes, newest first).

    Each upload passed over is a named Problem; the cache keeps what it held when none reads.
    """
    failed: list[tuple[str, str]] = []
    used = None
    label_dir = cache / label
    for upload_id, marker_size in found:
        if _note(label_dir / run_id) == upload_id:
            used = upload_id  # an upload never changes: what the cache holds is current
            break
        prefix = "/".join(p for p in (base, label, run_id, upload_id) if p)
        try:
            if label_dir.is_symlink() or (label_dir / run_id).is_symlink():
                raise OSError(f"{label_dir} in the local mirror is a symbolic link; the mirror writes only inside {cache}")
            marker = _read_marker(fs, prefix, label, run_id, upload_id, marker_size, stall)
            _fetch(fs, prefix, label_dir / run_id, marker, stall)
        except MarkerError as e:
            failed.append((upload_id, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - whatever one upload provokes, the others still load
            text = str(e) if isinstance(e, (OSError, ValueError, pa.ArrowException)) else f"{type(e).__name__}: {e}"
            failed.append((upload_id, f"not mirrored ({text})"))
            continue
        used = upload_id
        break
    after = f"; skipped, the run is read from its upload {used}" if used else "; skipped"
    return [Problem(f"upload {u} of run {label}/{run_id} in {shown}", reason + after) for u, reason in failed]


def _read_marker(fs: pafs.FileSystem, prefix: str, label: str, run_id: str, upload_id: str, listed_size: int,
                 stall: float) -> Marker:
    """The upload's marker through ``parse_marker``; one larger than ``MAX_MARKER_BYTES`` is refused unread."""
    if listed_size > MAX_MARKER_BYTES:
        raise MarkerError(f"its marker is {listed_size:,} bytes; the limit is {MAX_MARKER_BYTES:,}")
    path = f"{prefix}/{MARKER_FILE}"
    src = _within(stall, f"reading {MARKER_FILE}", fs.open_input_stream, path)
    try:
        data = _within(stall, f"reading {MARKER_FILE}", src.read, MAX_MARKER_BYTES + 1)
    finally:
        src.close()
    return parse_marker(bytes(data), label=label, run_id=run_id, upload_id=upload_id)


def _safe_label(label: str) -> bool:
    try:
        return sanitize_label(label) == label
    except SchemaError:
        return False


def _note(folder: Path) -> str | None:
    try:
        if folder.is_symlink():
            return None
        return (folder / UPLOAD_NOTE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _fetch(fs: pafs.FileSystem, prefix: str, target: Path, marker: Marker, stall: float) -> None:
    """Download one upload into ``target`` through a hidden sibling folder, checked against its marker.

    No file is read past the size its marker gives, and a read that returns nothing for
    ``stall`` seconds stops the download.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for spec in marker.files:
            digest, size = hashlib.sha256(), 0
            what = f"download of {spec.name}"
            src = _within(stall, what, fs.open_input_stream, f"{prefix}/{spec.name}")
            try:
                with open(staging / spec.name, "wb") as dst:
                    while True:
                        block = _within(stall, what, src.read, _BLOCK)
                        if not block:
                            break
                        size += len(block)
                        if size > spec.size:
                            raise ValueError(f"{spec.name} holds more than the {spec.size:,} bytes its marker says")
                        digest.update(block)
                        dst.write(block)
            finally:
                src.close()
            if size != spec.size or digest.hexdigest() != spec.sha256:
                raise ValueError(f"{spec.name} has {size} bytes and another checksum than its marker says ({spec.size} bytes)")
        (staging / UPLOAD_NOTE).write_text(marker.upload_id + "\n")
        if target.is_symlink():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)  # an older upload of this run (it was resumed and uploaded again)
        os.rename(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
