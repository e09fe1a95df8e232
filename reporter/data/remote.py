"""An archive at a URL (``s3://bucket/prefix``): its finished runs mirrored into a local cache folder.

The collector uploads each run's files and then a marker (``runformat/remote.py``); only a
run with a marker is taken, at its latest upload, so a run still running or cut short is
never read. Files are checked against the marker's sizes and SHA-256 and land in
``<cache>/<label>/<run_id>/`` through a hidden folder and a rename, so the cache is always
a valid local archive, read like any other. Runs gone from the archive leave the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from runformat.archive import ArchiveError
from runformat.remote import MARKER_FILE, UPLOADED_FILES, describe_url, is_url, open_filesystem
from runformat.schema import RUN_FILES, SchemaError, is_valid_run_id, sanitize_label
from reporter.errors import ReporterError
from reporter.data.load import Problem

UPLOAD_NOTE = ".imagebench-upload"  # in a cached run folder: the upload it holds
CACHE_NOTE = ".imagebench-mirror"  # in the cache root: the URL it mirrors (only such folders are pruned)


def default_cache(url: str) -> Path:
    """``$IMAGEBENCH_CACHE`` (else ``~/.cache/imagebench``) ``/archives/<name of the URL>``."""
    base = Path(os.environ.get("IMAGEBENCH_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imagebench")
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
    try:
        fs, base = open_filesystem(url)
        top = base.split("/", 1)[0]  # the bucket: a prefix with no runs yet is an empty archive, a missing bucket an error
        if top and fs.get_file_info(top).type == pafs.FileType.NotFound:
            raise ReporterError(f"--runs {shown}: {top!r} does not exist")
        listing = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except ArchiveError as e:
        raise ReporterError(f"--runs {shown}: {e}") from None
    except (OSError, pa.ArrowException) as e:
        raise ReporterError(f"--runs {shown}: cannot list the archive ({e})") from None
    problems: list[Problem] = []
    latest: dict[tuple[str, str], str] = {}
    for info in listing:
        rel = info.path[len(base):].lstrip("/") if base else info.path
        parts = rel.split("/")
        if info.type != pafs.FileType.File or len(parts) != 4 or parts[3] != MARKER_FILE:
            continue
        label, run_id, upload_id = parts[:3]
        if not _safe_label(label) or not is_valid_run_id(run_id) or not is_valid_run_id(upload_id):
            problems.append(Problem(f"{shown}/{rel}", "not under <label>/<run_id>/<upload_id>/; skipped"))
            continue
        latest[(label, run_id)] = max(upload_id, latest.get((label, run_id), ""))
    cache.mkdir(parents=True, exist_ok=True)
    (cache / CACHE_NOTE).write_text(shown + "\n")
    for (label, run_id), upload_id in sorted(latest.items()):
        target = cache / label / run_id
        if _note(target) == upload_id:
            continue  # an upload never changes: what the cache holds is current
        where = f"{shown}/{label}/{run_id}/{upload_id}"
        try:
            _fetch(fs, "/".join(p for p in (base, label, run_id, upload_id) if p), target, upload_id)
        except (OSError, ValueError, KeyError, pa.ArrowException) as e:
            problems.append(Problem(where, f"not mirrored ({e})"))
    for label_dir in [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]:
        for run_dir in [p for p in label_dir.iterdir() if p.is_dir()]:
            if (label_dir.name, run_dir.name) not in latest and (run_dir / UPLOAD_NOTE).is_file():
                shutil.rmtree(run_dir, ignore_errors=True)  # gone from the archive
    return cache, problems


def _safe_label(label: str) -> bool:
    try:
        return sanitize_label(label) == label
    except SchemaError:
        return False


def _note(folder: Path) -> str | None:
    try:
        return (folder / UPLOAD_NOTE).read_text().strip()
    except OSError:
        return None


def _fetch(fs: pafs.FileSystem, prefix: str, target: Path, upload_id: str) -> None:
    """Download one upload into ``target`` through a hidden sibling folder, checked against its marker."""
    with fs.open_input_stream(f"{prefix}/{MARKER_FILE}") as f:
        marker = json.loads(f.read().decode())
    files = marker["files"]
    if not isinstance(files, dict) or any(name not in UPLOADED_FILES for name in files) or not set(RUN_FILES) <= set(files):
        raise ValueError(f"its marker lists {sorted(files)}; a run has {', '.join(RUN_FILES)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name, spec in files.items():
            digest, size = hashlib.sha256(), 0
            with fs.open_input_stream(f"{prefix}/{name}") as src, open(staging / name, "wb") as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
                    dst.write(block)
            if size != spec["size"] or digest.hexdigest() != spec["sha256"]:
                raise ValueError(f"{name} has {size} bytes and another checksum than its marker says ({spec['size']} bytes)")
        (staging / UPLOAD_NOTE).write_text(upload_id + "\n")
        if target.exists():
            shutil.rmtree(target)  # an older upload of this run (it was resumed and uploaded again)
        os.rename(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
