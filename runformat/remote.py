"""Runs on object storage: the archive at a URL (``s3://bucket/prefix``, any pyarrow or fsspec filesystem).

A run is always recorded in a local folder first (crash-safe, resumable, as without a URL);
when it ends, complete or interrupted, its files are uploaded to fresh keys:

    <prefix>/<label>/<run_id>/<upload_id>/environment.parquet, cases.parquet, samples.parquet[, gpu_state.parquet]
    <prefix>/<label>/<run_id>/<upload_id>/imagebench-upload.json      (written last)

The marker names each file with its size and SHA-256, and the run's status. A reader takes a
run only through its marker, so a run whose upload was cut short, or that is still running,
is invisible. Nothing is ever overwritten: run ids carry a host component and a random
suffix, and each upload (a resumed run is uploaded again) gets an id of its own; the reader
takes a run's latest upload. Credentials and the endpoint come from the SDK's environment
and config files (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``,
``AWS_ENDPOINT_URL``): none of it is passed through or recorded here.

Only pyarrow is needed (``pyarrow.fs``); fsspec, when installed, adds its filesystems.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from runformat.archive import ArchiveError, host_tag, new_run_id
from runformat.schema import ENVIRONMENT_FILE, GPU_STATE_FILE, RUN_COMPLETE, RUN_FILES, RUN_INTERRUPTED, is_valid_run_id

MARKER_FILE = "imagebench-upload.json"
MARKER_FORMAT = 1
# Files an upload may carry; anything else in a run folder stays local.
UPLOADED_FILES = (*RUN_FILES, GPU_STATE_FILE)
# ``scheme://`` with a scheme of two letters or more (``C:\\runs`` is a Windows path, not a URL).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


def is_url(text: str | os.PathLike[str]) -> bool:
    """True for ``s3://...``, ``gs://...``, ``file://...``; False for a plain path."""
    return isinstance(text, str) and bool(_URL.match(text))


def describe_url(url: str) -> str:
    """The URL without any query (where a user might have put something secret) or user info."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return urllib.parse.urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))


def _with_s3_endpoint(url: str) -> str:
    """``url`` with ``endpoint_override`` and ``scheme`` from ``AWS_ENDPOINT_URL`` added.

    pyarrow's S3 filesystem reads credentials and region from the SDK's usual places; recent
    versions read ``AWS_ENDPOINT_URL`` as well, older ones (pyarrow < 15) do not, so it is
    passed explicitly, unless the URL sets an endpoint itself.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "s3":
        return url
    query = urllib.parse.parse_qs(parts.query)
    endpoint = next((os.environ[name] for name in ENDPOINT_ENV if os.environ.get(name)), None)
    if endpoint is None or "endpoint_override" in query:
        return url
    ep = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    extra = {"endpoint_override": ep.netloc, "scheme": ep.scheme or "https"}
    query_text = "&".join(p for p in (parts.query, urllib.parse.urlencode(extra)) if p)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, query_text, ""))


def open_filesystem(url: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem behind ``url`` and the base path in it (no trailing slash).

    pyarrow's own filesystems first (s3, gs, hdfs, abfs, file), then fsspec's, when it is
    installed. Raises ``ArchiveError`` naming the URL.
    """
    shown = describe_url(url)
    try:
        fs, path = pafs.FileSystem.from_uri(_with_s3_endpoint(url))
    except pa.ArrowInvalid as e:
        if "Unrecognized filesystem type" not in str(e):
            raise ArchiveError(f"{shown}: {e}") from None
        try:
            import fsspec
        except ImportError:
            raise ArchiveError(f"{shown}: pyarrow has no filesystem for this URL, and fsspec is not installed") from None
        try:
            spec_fs, path = fsspec.core.url_to_fs(url)
        except (ValueError, ImportError) as e:
            raise ArchiveError(f"{shown}: no filesystem for this URL ({e})") from None
        fs = pafs.PyFileSystem(pafs.FSSpecHandler(spec_fs))
    except (OSError, pa.ArrowException) as e:
        raise ArchiveError(f"{shown}: {e}") from None
    return fs, path.rstrip("/")


@dataclass(frozen=True)
class Upload:
    """Where one upload of a run went."""

    url: str  # the archive URL, as shown to a user (no query)
    label: str
    run_id: str
    upload_id: str
    status: str
    files: int
    bytes: int


def _run_status(folder: Path) -> str:
    table = pq.read_table(folder / ENVIRONMENT_FILE, columns=["section", "key", "value"])
    for row in table.to_pylist():
        if row["section"] == "run" and row["key"] == "status":
            return str(row["value"])
    return ""


def _next_upload_id(fs: pafs.FileSystem, run_prefix: str) -> str:
    """A fresh upload id that sorts after every earlier upload of the run (readers take the
    greatest): ids have a resolution of one second, so a second upload within the same
    second waits for the next one."""
    try:
        infos = fs.get_file_info(pafs.FileSelector(run_prefix, recursive=False, allow_not_found=True))
        earlier = [i.base_name for i in infos if i.type == pafs.FileType.Directory]
    except (OSError, pa.ArrowException):
        earlier = []
    upload_id = new_run_id()
    while earlier and upload_id <= max(earlier):
        time.sleep(0.25)
        upload_id = new_run_id()
    return upload_id


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def upload_run(folder: Path | str, url: str) -> Upload:
    """Upload one finished run folder (``<label>/<run_id>/``) to the archive at ``url``.

    The data files go first, the marker last, each to a key that did not exist. A run still
    running is refused (it would be read as finished). Raises ``ArchiveError``.
    """
    folder = Path(folder)
    label, run_id = folder.parent.name, folder.name
    shown = describe_url(url)
    if not is_valid_run_id(run_id) or not (folder / ENVIRONMENT_FILE).is_file():
        raise ArchiveError(f"{folder} is not a run folder (<label>/<run_id>/ with {ENVIRONMENT_FILE})")
    try:
        status = _run_status(folder)
    except (OSError, pa.ArrowException) as e:
        raise ArchiveError(f"{folder / ENVIRONMENT_FILE}: cannot read the run's status ({e})") from None
    if status not in (RUN_COMPLETE, RUN_INTERRUPTED):
        raise ArchiveError(f"{folder}: the run is {status or 'of unknown status'}; only a complete or interrupted run is uploaded")
    names = [n for n in UPLOADED_FILES if (folder / n).is_file()]
    missing = [n for n in RUN_FILES if n not in names]
    if missing:
        raise ArchiveError(f"{folder}: {', '.join(missing)} missing; not uploaded")
    fs, base = open_filesystem(url)
    upload_id = _next_upload_id(fs, "/".join(p for p in (base, label, run_id) if p))
    prefix = "/".join(p for p in (base, label, run_id, upload_id) if p)
    files: dict[str, dict[str, Any]] = {}
    try:
        taken = fs.get_file_info([f"{prefix}/{n}" for n in (*names, MARKER_FILE)])
        if any(info.type != pafs.FileType.NotFound for info in taken):
            raise ArchiveError(f"{shown}: {prefix} already holds files; an upload never overwrites")
        for name in names:
            sha, size = _sha256(folder / name)
            with open(folder / name, "rb") as src, fs.open_output_stream(f"{prefix}/{name}") as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    dst.write(block)
            files[name] = {"size": size, "sha256": sha}
        marker = {
            "format": MARKER_FORMAT,
            "label": label,
            "run_id": run_id,
            "upload_id": upload_id,
            "status": status,
            "host": host_tag(),
            "files": files,
        }
        with fs.open_output_stream(f"{prefix}/{MARKER_FILE}") as dst:
            dst.write(json.dumps(marker, indent=1, sort_keys=True).encode())
    except ArchiveError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise ArchiveError(f"{shown}: upload of {label}/{run_id} failed ({e}); the run is kept in {folder}") from None
    return Upload(shown, label, run_id, upload_id, status, len(files), sum(f["size"] for f in files.values()))


def default_stage() -> Path:
    """Where runs bound for a URL are recorded first: ``$IMAGEBENCH_STAGE``, else the user's cache."""
    if os.environ.get("IMAGEBENCH_STAGE"):
        return Path(os.environ["IMAGEBENCH_STAGE"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "imagebench" / "outbox"
