"""The on-disk format of a run: tables, columns, metrics, units and SCHEMA_VERSION.

This module is shared by the collector and the reporter and is the single place that
names them. It imports pyarrow and the standard library only (never torch or pandas).

A run lives in ``runs/<label>/<run_id>/`` as three Parquet files, each carrying
``schema_version``, ``run_id`` and ``label`` in its key-value metadata:

* ``environment.parquet``: the fingerprint, rows of (section, key, value).
* ``cases.parquet``: one row per (case, worker process) attempt.
* ``samples.parquet``: raw samples, one row per (case, process, metric, sample index).

Change log (bump ``SCHEMA_VERSION`` on any change a reader must know about):

* 1 (2026-12): first version.
* 2 (2026-12): ``cases.parquet`` gains four nullable columns: ``family`` (the article
  section the workload belonged to when it ran, so an old run is read by what it
  recorded), ``round`` and ``position`` (for a run recorded with ``--interleave``: the
  round, which is the worker-process index shared by every stack of the run, and the
  stack's place within that round, 0 = first; rounds alternate the order A B, B A, ...
  so order effects cancel in a paired analysis), and ``settings`` (a JSON object of the
  effective settings a case ran with, e.g. TF32 flags and matmul precision). The run
  section of ``environment.parquet`` gains ``interleave_group`` (one id shared by the
  runs recorded together by one ``--interleave`` invocation). An optional fourth file,
  ``gpu_state.parquet`` (``GPU_STATE_FILE``), holds the GPU's state per case and
  process. Version 1 runs are read as version 2 with those columns null; a version 1
  run recorded with ``interleaved`` = True pairs by process index, as it ran.
* 2, later (2026-12, no version bump: every file stays readable by a version 2 reader):

  - **Case ids of float32 cases.** ``matmul`` and ``conv2d`` cases with ``dtype=fp32``
    now run at the stack's own defaults (no TF32 flag or matmul precision touched) and
    record the effective values in ``settings``; new ids ``dtype=fp32-strict`` (TF32 off
    everywhere) and ``dtype=tf32`` (on everywhere) keep both regimes measured. Earlier
    runs pinned TF32 off for ``fp32``: a ``matmul``/``conv2d`` case with ``dtype=fp32``
    whose ``settings`` is null was strict, and readers compare it as ``dtype=fp32-strict``
    (``legacy_case_id``).
  - **``gpu_state.parquet``** (``GPU_STATE_SCHEMA``): one row per (case, process, GPU)
    summarising the GPU's state sampled during the case's timed blocks; written only
    where a source (NVML or ``nvidia-smi``) could read the GPU. The fingerprint section
    ``gpu_state`` says which source was used, or why none.
  - **Part files.** While a run is recorded each finished attempt is appended to the run
    folder as part files (``parts/<seq>.<file>``, ``PARTS_FOLDER``): samples and GPU
    state first, the one-row cases part last (its presence commits the attempt). At the
    end the parts are compacted into the main files and removed. A reader of a folder
    that still holds parts (a killed run) merges them: a committed part's attempt
    replaces the same (case, process) attempt of the main files or of an earlier part.
  - The run section gains ``doctor`` (the pre-flight verdict: ``fit`` or ``warnings``),
    ``doctor_warnings`` (JSON list of the checks that warned) and ``replication`` (JSON:
    the processes added to cases with the widest CIs, when adaptive replication ran).

  Later in version 2 (no table changes): run ids gain a host tag,
  ``20261202T140512Z-3fa9c1-5e0b7d``, so hosts recording into one archive never collide;
  ids without one stay valid. The run section gains ``timing_method``
  (``collector.timing.TIMING_METHOD``): the version of the way cases are timed, so that
  run-to-run variation is pooled only between runs measured the same way (runs without it
  are one method, ``legacy``, told apart by their timing policy only).

  Timing methods 3 and 4 (no table changes): GPU microbenchmarks flush the L2 cache
  before each call and time each call between its own events, as
  ``triton.testing.do_bench`` does; their cases no longer record ``wall_time``. Method 3
  held the GPU with a pause kernel while a block was queued; method 4 does not (the
  flushes keep the GPU ahead of the host). Runs of method 2 keep their meaning (warm L2,
  back-to-back calls) and are compared with later methods like any two stacks; run-to-run
  variation is pooled within a method only.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa

SCHEMA_VERSION = 2
# Versions this reader accepts; older ones are upgraded on read (missing columns null).
READABLE_SCHEMA_VERSIONS = (1, 2)

ENVIRONMENT_FILE = "environment.parquet"
CASES_FILE = "cases.parquet"
SAMPLES_FILE = "samples.parquet"
RUN_FILES = (ENVIRONMENT_FILE, CASES_FILE, SAMPLES_FILE)
# Optional: the GPU's state (clocks, power, temperature, throttle reasons, other
# processes) sampled during each case's timed blocks, one row per (case, process, gpu).
GPU_STATE_FILE = "gpu_state.parquet"
# Per-attempt part files of a run being recorded (see the change log).
PARTS_FOLDER = "parts"

META_SCHEMA_VERSION = b"schema_version"
META_RUN_ID = b"run_id"
META_LABEL = b"label"

# Case statuses. "ok" means every metric the case records was measured.
STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_SKIPPED = "skipped"
STATUS_TIMEOUT = "timeout"
STATUS_INTERRUPTED = "interrupted"
STATUSES = (STATUS_OK, STATUS_FAILED, STATUS_SKIPPED, STATUS_TIMEOUT, STATUS_INTERRUPTED)

# Run statuses, recorded in the environment table as (run, status).
RUN_RUNNING = "running"
RUN_COMPLETE = "complete"
RUN_INTERRUPTED = "interrupted"

# How a case was timed.
TIMING_CUDA_EVENT = "cuda_event"  # CUDA events around each of k calls (L2 flushed before each; method 3+)
TIMING_PERF_COUNTER = "perf_counter"  # time.perf_counter_ns around blocks (CPU)
TIMING_WALL = "wall"  # host wall clock around a whole step/task (with device sync)
TIMING_ONESHOT = "oneshot"  # a single measurement (compile time, largest batch, ...)
TIMING_NONE = "none"  # the case recorded no time (numerics)
TIMINGS = (TIMING_CUDA_EVENT, TIMING_PERF_COUNTER, TIMING_WALL, TIMING_ONESHOT, TIMING_NONE)

BETTER_LOWER = "lower"
BETTER_HIGHER = "higher"
BETTER_NONE = "none"  # informational (a loss value, a checksum): never ranked


class SchemaError(ValueError):
    """A table does not match the schema; the message names what is wrong."""


@dataclass(frozen=True)
class Metric:
    """A metric a case can record.

    Attributes:
        name: the metric's name as stored in ``samples.metric``.
        unit: the unit of every stored value.
        better: ``lower``, ``higher`` or ``none`` (informational, never compared).
        description: one line for tables and the methodology page.
    """

    name: str
    unit: str
    better: str
    description: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("time", "s", BETTER_LOWER, "time per iteration (device time on GPU)"),
        Metric("wall_time", "s", BETTER_LOWER, "host wall time per iteration beside device time"),
        Metric("latency", "s", BETTER_LOWER, "time of one request (a forward pass of one batch)"),
        Metric("compile_time", "s", BETTER_LOWER, "time of the first call, compilation included"),
        Metric("peak_allocated", "bytes", BETTER_LOWER, "peak memory allocated by tensors"),
        Metric("peak_reserved", "bytes", BETTER_LOWER, "peak memory reserved by the caching allocator"),
        Metric("throughput", "items/s", BETTER_HIGHER, "items delivered per second, measured directly"),
        Metric("gpu_util", "%", BETTER_HIGHER, "GPU utilisation sampled through NVML"),
        Metric("graph_breaks", "count", BETTER_LOWER, "graph breaks reported by torch._dynamo"),
        Metric("recompiles", "count", BETTER_LOWER, "recompilations reported by torch._dynamo"),
        Metric("max_batch", "count", BETTER_HIGHER, "largest batch size that ran without out-of-memory"),
        Metric("tasks_ok", "count", BETTER_HIGHER, "concurrent tasks that finished without error"),
        Metric("loss", "1", BETTER_NONE, "training loss at a step (numerics)"),
        Metric("checksum", "1", BETTER_NONE, "sum of the model output after training (numerics)"),
    )
}

UNITS = frozenset(m.unit for m in METRICS.values())


@dataclass(frozen=True)
class EnvironmentEntry:
    """One fingerprint row: ``section`` groups keys (torch, cuda, gpu0, cpu, env, ...)."""

    section: str
    key: str
    value: str


@dataclass(frozen=True)
class CaseRecord:
    """One attempt at one case in one worker process.

    ``params`` is a JSON object (sorted keys). ``flops``, ``bytes`` and ``items`` are the
    work done by one iteration, where defined, so throughput and % of peak can be derived
    at report time; ``items_unit`` names what an item is (images, sequences, samples).
    """

    case_id: str
    workload: str
    params: str
    process: int
    status: str
    error: str | None
    timing: str
    device: str
    started_at: float  # seconds since the epoch, UTC
    duration_s: float
    flops: float | None = None
    bytes: float | None = None
    items: float | None = None
    items_unit: str | None = None
    family: str | None = None
    round: int | None = None
    position: int | None = None
    settings: str | None = None


@dataclass(frozen=True)
class SampleRecord:
    """One raw sample: ``value`` is per iteration, over ``iterations`` iterations."""

    case_id: str
    process: int
    metric: str
    unit: str
    better: str
    index: int
    value: float
    iterations: int


ENVIRONMENT_SCHEMA = pa.schema(
    [
        pa.field("section", pa.string(), nullable=False),
        pa.field("key", pa.string(), nullable=False),
        pa.field("value", pa.string(), nullable=False),
    ]
)

CASES_SCHEMA = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("workload", pa.string(), nullable=False),
        pa.field("params", pa.string(), nullable=False),
        pa.field("process", pa.int32(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("timing", pa.string(), nullable=False),
        pa.field("device", pa.string(), nullable=False),
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("duration_s", pa.float64(), nullable=False),
        pa.field("flops", pa.float64()),
        pa.field("bytes", pa.float64()),
        pa.field("items", pa.float64()),
        pa.field("items_unit", pa.string()),
        # Schema 2: see the change log.
        pa.field("family", pa.string()),
        pa.field("round", pa.int32()),
        pa.field("position", pa.int32()),
        pa.field("settings", pa.string()),
    ]
)

# Columns added after version 1, per file: a version 1 file lacks them and is read with
# them null (``upgrade_table``).
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    CASES_FILE: ("family", "round", "position", "settings"),
}

SAMPLES_SCHEMA = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("process", pa.int32(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("unit", pa.string(), nullable=False),
        pa.field("better", pa.string(), nullable=False),
        pa.field("index", pa.int32(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("iterations", pa.int64(), nullable=False),
    ]
)

# Quantities of gpu_state.parquet summarised as <name>_min, <name>_median, <name>_max.
GPU_STATE_QUANTITIES = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "util_gpu_pct", "util_mem_pct")

GPU_STATE_SCHEMA = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("process", pa.int32(), nullable=False),
        # The case's device index (cuda:<gpu>), not NVML's.
        pa.field("gpu", pa.int32(), nullable=False),
        # Where the readings came from: "nvml" or "nvidia-smi".
        pa.field("source", pa.string(), nullable=False),
        # How many readings the row summarises (taken every 0.1 s with NVML, 0.5 s with
        # nvidia-smi, plus one as each timed phase starts and ends).
        pa.field("readings", pa.int32(), nullable=False),
        # SM and memory clocks (MHz), board power (W), temperature (°C), GPU and memory
        # utilisation (%): min, median and max over the readings; null where unreadable.
        *[pa.field(f"{q}_{stat}", pa.float64()) for q in GPU_STATE_QUANTITIES for stat in ("min", "median", "max")],
        # The enforced power limit (W), its lowest reading.
        pa.field("power_limit_w", pa.float64()),
        # The union of clock-event ("throttle") reasons seen, comma-separated NVML names
        # (sw_power_cap, hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown,
        # hw_power_brake_slowdown, gpu_idle, applications_clocks_setting, sync_boost, ...).
        pa.field("reasons", pa.string(), nullable=False),
        # True when a reason that slows the GPU (power, thermal, HW slowdown) was seen.
        pa.field("throttled", pa.bool_(), nullable=False),
        # Compute processes on the GPU (ours included) and, of those, not ours: the most seen.
        pa.field("processes_max", pa.int32()),
        pa.field("other_processes_max", pa.int32()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    ENVIRONMENT_FILE: ENVIRONMENT_SCHEMA,
    CASES_FILE: CASES_SCHEMA,
    SAMPLES_FILE: SAMPLES_SCHEMA,
    GPU_STATE_FILE: GPU_STATE_SCHEMA,
}

# Workloads whose ``dtype=fp32`` cases pinned TF32 off before they recorded ``settings``.
LEGACY_STRICT_FP32_WORKLOADS = ("matmul", "conv2d")


def legacy_case_id(case_id: str, workload: str, settings: str | None) -> str:
    """The id a case is compared under: an old strict ``fp32`` case becomes ``fp32-strict``.

    A ``matmul`` or ``conv2d`` case with ``dtype=fp32`` and no recorded ``settings`` was
    measured with TF32 pinned off (see the change log); every other id is returned as is.
    """
    if settings is not None or workload not in LEGACY_STRICT_FP32_WORKLOADS:
        return case_id
    return re.sub(r"([\[,])dtype=fp32([,\]])", r"\1dtype=fp32-strict\2", case_id)


# A UTC time, a random suffix and (since run ids became unique per host) a host tag.
_RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}(?:-[0-9a-f]{6})?")
MAX_LABEL_LENGTH = 100  # characters
MAX_LABEL_BYTES = 200  # UTF-8 bytes: well below the 255-byte limit of a file name
_ASCII_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# Symbols that look like a path separator, though no file system takes them for one.
_SLASH_LOOKALIKES = frozenset("\u2044\u2215\u2216\u29f8\u29f9")
_ZWJ = "\u200d"  # joins emoji sequences (👩‍💻)
_EDGE = "._-" + _ZWJ


def _label_char_kept(c: str) -> bool:
    if c < "\x80":
        return c in _ASCII_KEPT
    if c == _ZWJ:
        return True
    return unicodedata.category(c)[0] in "LMNS" and c not in _SLASH_LOOKALIKES


def sanitize_label(label: str) -> str:
    """Return ``label`` as a safe folder name, or raise ``SchemaError`` if nothing is left.

    The rule: the label is put in Unicode normal form NFC; then kept are ASCII letters,
    digits, ``.``, ``_`` and ``-``, and any other printable character that is a letter,
    mark, number or symbol (``名字``, ``é``, ``🚀``, emoji sequences joined by U+200D);
    every run of other characters (spaces, ASCII punctuation such as ``/`` ``\\`` ``:``
    ``|`` ``<`` ``>`` ``*`` ``?`` ``"``, control and format characters, bidirectional
    overrides, non-ASCII punctuation, and the slash look-alikes U+2044, U+2215, U+2216,
    U+29F8, U+29F9) becomes one ``-``. Leading and trailing ``.``, ``_``, ``-`` are
    dropped and the result is cut to ``MAX_LABEL_LENGTH`` characters and
    ``MAX_LABEL_BYTES`` bytes of UTF-8. So a slug is one path component on every common
    file system: never empty, ``.`` or ``..``, hidden, absolute, or holding a separator
    or NUL. ASCII labels get the same slug as before Unicode was allowed, and
    ``sanitize_label(sanitize_label(x)) == sanitize_label(x)``.
    """
    text = unicodedata.normalize("NFC", label)
    out: list[str] = []
    for c in text:
        if _label_char_kept(c):
            out.append(c)
        elif not out or out[-1] != "-":
            out.append("-")
    slug = re.sub(r"-{2,}", "-", "".join(out)).strip(_EDGE)
    slug = slug[:MAX_LABEL_LENGTH]
    while len(slug.encode("utf-8")) > MAX_LABEL_BYTES:
        slug = slug[:-1]
    slug = unicodedata.normalize("NFC", slug).strip(_EDGE)
    if not slug:
        raise SchemaError(f"label {label!r} has no letters or digits to name a folder with")
    return slug


def is_valid_run_id(run_id: str) -> bool:
    """True for ids like ``20261202T140512Z-3fa9c1-5e0b7d`` (UTC time, random suffix, host tag)
    and the older ``20261202T140512Z-3fa9c1`` (no host tag)."""
    return bool(_RUN_ID.fullmatch(run_id))


def case_id_for(workload: str, params: Mapping[str, Any]) -> str:
    """The stable id of a case: ``workload[key=value,...]`` with sorted keys."""
    if not params:
        return workload
    inner = ",".join(f"{k}={_format_param(params[k])}" for k in sorted(params))
    return f"{workload}[{inner}]"


def _format_param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def params_to_json(params: Mapping[str, Any]) -> str:
    """Parameters as stored in ``cases.params``: compact JSON with sorted keys."""
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def params_from_json(params: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The recorded parameters as a dict (``{}`` for anything that is not a JSON object)."""
    if isinstance(params, Mapping):
        return dict(params)
    try:
        value = json.loads(params or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def distinct_params(params: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each distinct set of parameters once, in the order first seen."""
    seen, out = set(), []
    for p in params:
        key = json.dumps(p, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def metric(name: str) -> Metric:
    """The registered metric called ``name``; raises ``SchemaError`` for unknown names."""
    try:
        return METRICS[name]
    except KeyError:
        raise SchemaError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None


def records_to_table(kind: str, records: Iterable[Any], *, run_id: str, label: str) -> pa.Table:
    """Build the Arrow table for ``kind`` (a file name in ``RUN_FILES``) from records."""
    schema = SCHEMAS[kind]
    rows = [r if isinstance(r, dict) else r.__dict__ for r in records]
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for row in rows:
        for name in columns:
            columns[name].append(row.get(name))
    if kind == CASES_FILE:
        columns["started_at"] = [int(round(t * 1_000_000)) for t in columns["started_at"]]
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
    table = pa.Table.from_arrays(arrays, schema=schema)
    return table.replace_schema_metadata(table_metadata(run_id=run_id, label=label))


def table_metadata(*, run_id: str, label: str) -> dict[bytes, bytes]:
    """Key-value metadata every run file carries."""
    return {
        META_SCHEMA_VERSION: str(SCHEMA_VERSION).encode(),
        META_RUN_ID: run_id.encode(),
        META_LABEL: label.encode(),
    }


def validate_table(kind: str, table: pa.Table, *, where: str = "") -> dict[str, str]:
    """Check ``table`` against the schema for ``kind`` and return its metadata.

    Raises ``SchemaError`` naming ``where`` (usually the file) and the first problem: a
    missing or newer ``schema_version``, a missing column, a column of the wrong type,
    nulls where none are allowed, an unknown status, metric, unit or direction, or a
    sample value that is NaN, infinite or (for time and memory metrics) not positive.
    """
    prefix = f"{where}: " if where else ""
    meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in (table.schema.metadata or {}).items()}
    version = meta.get("schema_version")
    if version is None:
        raise SchemaError(f"{prefix}no schema_version in the file's metadata (not an imagebench run file)")
    if not version.isdigit():
        raise SchemaError(f"{prefix}schema_version {version!r} is not a number")
    if int(version) not in READABLE_SCHEMA_VERSIONS:
        newer = "newer than" if int(version) > SCHEMA_VERSION else "older than"
        raise SchemaError(
            f"{prefix}schema_version {version} is {newer} this imagebench's {SCHEMA_VERSION}; "
            "use a matching imagebench to read it"
        )
    table = upgrade_table(kind, table)
    if not meta.get("run_id"):
        raise SchemaError(f"{prefix}no run_id in the file's metadata")
    expected = SCHEMAS[kind]
    for f in expected:
        if f.name not in table.column_names:
            raise SchemaError(f"{prefix}missing column {f.name!r}")
        actual = table.schema.field(f.name).type
        if not actual.equals(f.type):
            raise SchemaError(f"{prefix}column {f.name!r} has type {actual}, expected {f.type}")
        if not f.nullable and table.column(f.name).null_count:
            raise SchemaError(f"{prefix}column {f.name!r} holds nulls")
    if kind == CASES_FILE:
        _check_values(table, "status", STATUSES, prefix)
        _check_values(table, "timing", TIMINGS, prefix)
    elif kind == SAMPLES_FILE:
        _check_values(table, "metric", tuple(METRICS), prefix)
        _check_values(table, "unit", tuple(UNITS), prefix)
        _check_values(table, "better", (BETTER_LOWER, BETTER_HIGHER, BETTER_NONE), prefix)
        _check_sample_values(table, prefix)
    return meta


def upgrade_table(kind: str, table: pa.Table) -> pa.Table:
    """``table`` with every column added since version 1 present (null where missing).

    Only columns listed in ``ADDED_COLUMNS`` are filled in; the metadata is kept, so the
    file's own ``schema_version`` still says what it was written as.
    """
    schema = SCHEMAS.get(kind)
    if schema is None:
        return table
    for name in ADDED_COLUMNS.get(kind, ()):
        if name not in table.column_names:
            table = table.append_column(schema.field(name), pa.nulls(table.num_rows, type=schema.field(name).type))
    return table


def _check_values(table: pa.Table, column: str, allowed: tuple[str, ...], prefix: str) -> None:
    seen = set(table.column(column).unique().to_pylist())
    unknown = sorted(v for v in seen - set(allowed) if v is not None)
    if unknown:
        raise SchemaError(f"{prefix}column {column!r} holds unknown value(s) {unknown[:5]}; allowed: {', '.join(allowed)}")


def _check_sample_values(table: pa.Table, prefix: str) -> None:
    import pyarrow.compute as pc

    values = table.column("value")
    bad_finite = pc.invert(pc.is_finite(values))
    if pc.any(bad_finite).as_py():
        idx = pc.index(bad_finite, True).as_py()
        raise SchemaError(f"{prefix}sample {idx} has a non-finite value ({values[idx].as_py()})")
    # Times, memory and rates must be positive; counts and informational values may be 0.
    positive_units = ["s", "bytes", "items/s"]
    must_be_positive = pc.is_in(table.column("unit"), value_set=pa.array(positive_units))
    not_positive = pc.and_(must_be_positive, pc.less_equal(values, 0.0))
    if pc.any(not_positive).as_py():
        idx = pc.index(not_positive, True).as_py()
        unit = table.column("unit")[idx].as_py()
        raise SchemaError(f"{prefix}sample {idx} has value {values[idx].as_py()} {unit}, which must be positive")
    if pc.any(pc.less(table.column("iterations"), 1)).as_py():
        raise SchemaError(f"{prefix}a sample has fewer than 1 iteration")


def finite_or_none(value: float | None) -> float | None:
    """``value`` if it is a finite number, else ``None`` (for optional work columns)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)
