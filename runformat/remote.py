"""Runs on object storage: the archive at a URL (``s3://bucket/prefix``, any pyarrow or fsspec filesystem).

A run is always recorded in a local folder first (crash-safe, resumable, as without a URL);
when it ends, complete or interrupted, its files are uploaded to fresh keys:

    <prefix>/<label>/<run_id>/<upload_id>/environment.parquet, cases.parquet, samples.parquet[, gpu_state.parquet]
    <prefix>/<label>/<run_id>/<upload_id>/imagebench-upload.json      (written last)

The marker names each file with its size and SHA-256, and the run's status; ``Marker`` is its
one schema, written by ``Marker.to_json`` and read back only through ``parse_marker``, which
checks every type, key and name (a marker written by a careless or hostile host is refused
with one line, never half-read). A reader takes a run only through its marker, so a run whose upload was cut short, or that is still running,
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
# A marker of four files is about 600 bytes; anything near this is not one, and is refused
# before it is read whole or parsed.
MAX_MARKER_BYTES = 64 * 1024
# The largest file a marker may announce: well above any run's samples (a full suite's are
# megabytes), well below what would fill a reader's disk before its checksum could fail.
MAX_UPLOADED_FILE_BYTES = 16 * 1024**3
UPLOADED_STATUSES = (RUN_COMPLETE, RUN_INTERRUPTED)  # a run still running is never uploaded
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAX_HOST_CHARS = 256


class MarkerError(ArchiveError):
    """An upload marker that is not one; the message says what is wrong ("its marker is not an object")."""


@dataclass(frozen=True)
class MarkedFile:
    """One file of an upload as its marker names it."""

    name: str  # one of UPLOADED_FILES: a bare file name, never a path
    size: int
    sha256: str


@dataclass(frozen=True)
class Marker:
    """An upload marker (``imagebench-upload.json``): the one schema its writer and its readers share.

    JSON object, format 1; unknown keys are ignored (a newer writer may add some):

    * ``format``: integer, ``MARKER_FORMAT``;
    * ``label``, ``run_id``, ``upload_id``: strings; a label that is its own slug
      (``runformat.schema.sanitize_label``), run and upload ids that are run ids, and all
      three equal to the key the marker is stored under;
    * ``status``: ``complete`` or ``interrupted``;
    * ``host``: a string (the writer's host tag), optional;
    * ``files``: object from file name (``UPLOADED_FILES``; the three run files required)
      to ``{"size": integer 0..MAX_UPLOADED_FILE_BYTES, "sha256": 64 lowercase hex digits}``.
    """

    label: str
    run_id: str
    upload_id: str
    status: str
    files: tuple[MarkedFile, ...]
    host: str = ""
    format: int = MARKER_FORMAT

    def to_json(self) -> bytes:
        return json.dumps({
            "format": self.format, "label": self.label, "run_id": self.run_id, "upload_id": self.upload_id,
            "status": self.status, "host": self.host,
            "files": {f.name: {"size": f.size, "sha256": f.sha256} for f in self.files},
        }, indent=1, sort_keys=True).encode()


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise MarkerError(f"its marker names the key {twice[0]!r} twice")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise MarkerError(f"its marker holds {name}, which is not JSON")


def parse_marker(data: bytes, *, label: str | None = None, run_id: str | None = None,
                 upload_id: str | None = None) -> Marker:
    """The marker ``data`` holds, checked against ``Marker``'s schema and against the key it was
    stored under (``label``/``run_id``/``upload_id``, when given).

    Raises ``MarkerError`` with the first thing wrong, worded to follow "upload U of run R:"
    (e.g. "its marker is not an object (it is null)").
    """
    from runformat.schema import SchemaError, sanitize_label

    if len(data) > MAX_MARKER_BYTES:
        raise MarkerError(f"its marker is {len(data):,} bytes; the limit is {MAX_MARKER_BYTES:,}")
    if not data.strip():
        raise MarkerError("its marker is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MarkerError("its marker is not UTF-8 text") from None
    try:
        raw = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except MarkerError:
        raise
    except (ValueError, RecursionError) as e:
        raise MarkerError(f"its marker is not JSON ({str(e)[:120]})") from None
    if not isinstance(raw, dict):
        raise MarkerError(f"its marker is not an object (it is {_json_kind(raw)})")
    for key in ("format", "label", "run_id", "upload_id", "status", "files"):
        if key not in raw:
            raise MarkerError(f"its marker has no {key!r}")
    fmt = raw["format"]
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise MarkerError(f"its marker's 'format' is {_json_kind(fmt)}, not an integer")
    if fmt != MARKER_FORMAT:
        raise MarkerError(f"its marker is format {fmt}; this reader reads format {MARKER_FORMAT}")
    for key in ("label", "run_id", "upload_id", "status"):
        if not isinstance(raw[key], str):
            raise MarkerError(f"its marker's {key!r} is {_json_kind(raw[key])}, not a string")
    try:
        slug = sanitize_label(raw["label"])
    except SchemaError:
        slug = None
    if slug != raw["label"]:
        raise MarkerError(f"its marker's label {raw['label'][:80]!r} is not a label folder name")
    for key in ("run_id", "upload_id"):
        if not is_valid_run_id(raw[key]):
            raise MarkerError(f"its marker's {key!r} {raw[key][:80]!r} is not a run id")
    for key, expected in (("label", label), ("run_id", run_id), ("upload_id", upload_id)):
        if expected is not None and raw[key] != expected:
            raise MarkerError(f"its marker names {key} {raw[key]!r}, but it is stored under {expected!r}")
    if raw["status"] not in UPLOADED_STATUSES:
        raise MarkerError(f"its marker's status {raw['status'][:40]!r} is not one of {', '.join(UPLOADED_STATUSES)}")
    host = raw.get("host", "")
    if not isinstance(host, str) or len(host) > _MAX_HOST_CHARS:
        raise MarkerError(f"its marker's 'host' is {_json_kind(host) if not isinstance(host, str) else 'too long'}")
    files = raw["files"]
    if not isinstance(files, dict):
        raise MarkerError(f"its marker's 'files' is {_json_kind(files)}, not an object")
    unknown = sorted(n for n in files if n not in UPLOADED_FILES)
    if unknown:
        raise MarkerError(f"its marker lists {unknown[0][:80]!r}; an upload holds only {', '.join(UPLOADED_FILES)}")
    missing = [n for n in RUN_FILES if n not in files]
    if missing:
        raise MarkerError(f"its marker lists no {', '.join(missing)}; a run has {', '.join(RUN_FILES)}")
    out = []
    for name in UPLOADED_FILES:
        if name not in files:
            continue
        spec = files[name]
        if not isinstance(spec, dict):
            raise MarkerError(f"its marker's entry for {name} is {_json_kind(spec)}, not an object")
        size, digest = spec.get("size"), spec.get("sha256")
        if isinstance(size, bool) or not isinstance(size, int):
            raise MarkerError(f"its marker's size of {name} is {_json_kind(size)}, not an integer")
        if not 0 <= size <= MAX_UPLOADED_FILE_BYTES:
            raise MarkerError(f"its marker says {name} has {size:,} bytes; a file has 0 to {MAX_UPLOADED_FILE_BYTES:,}")
        if not isinstance(digest, str) or not _SHA256.match(digest):
            shown = _json_kind(digest) if not isinstance(digest, str) else repr(digest[:80])
            raise MarkerError(f"its marker's sha256 of {name} is {shown}, not 64 lowercase hex digits")
        out.append(MarkedFile(name, size, digest))
    return Marker(raw["label"], raw["run_id"], raw["upload_id"], raw["status"], tuple(out), host, fmt)


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
    if status not in UPLOADED_STATUSES:
        raise ArchiveError(f"{folder}: the run is {status or 'of unknown status'}; only a complete or interrupted run is uploaded")
    names = [n for n in UPLOADED_FILES if (folder / n).is_file()]
    missing = [n for n in RUN_FILES if n not in names]
    if missing:
        raise ArchiveError(f"{folder}: {', '.join(missing)} missing; not uploaded")
    fs, base = open_filesystem(url)
    upload_id = _next_upload_id(fs, "/".join(p for p in (base, label, run_id) if p))
    prefix = "/".join(p for p in (base, label, run_id, upload_id) if p)
    files: list[MarkedFile] = []
    try:
        taken = fs.get_file_info([f"{prefix}/{n}" for n in (*names, MARKER_FILE)])
        if any(info.type != pafs.FileType.NotFound for info in taken):
            raise ArchiveError(f"{shown}: {prefix} already holds files; an upload never overwrites")
        for name in names:
            sha, size = _sha256(folder / name)
            with open(folder / name, "rb") as src, fs.open_output_stream(f"{prefix}/{name}") as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    dst.write(block)
            files.append(MarkedFile(name, size, sha))
        marker = Marker(label, run_id, upload_id, status, tuple(files), host_tag())
        with fs.open_output_stream(f"{prefix}/{MARKER_FILE}") as dst:
            dst.write(marker.to_json())
    except ArchiveError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise ArchiveError(f"{shown}: upload of {label}/{run_id} failed ({e}); the run is kept in {folder}") from None
    return Upload(shown, label, run_id, upload_id, status, len(files), sum(f.size for f in files))


def default_stage() -> Path:
    """Where runs bound for a URL are recorded first: ``$IMAGEBENCH_STAGE``, else the user's cache."""
    if os.environ.get("IMAGEBENCH_STAGE"):
        return Path(os.environ["IMAGEBENCH_STAGE"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "imagebench" / "outbox"
