"""Recording: an attempt's answer turned into rows, appended to its run; the environment; the end.

What a worker answers is checked here, not trusted: an unknown status, samples no
reader would accept or text Parquet cannot store fail the attempt (with the reason)
rather than the run. Each attempt is appended as part files (``RunWriter.write_attempt``),
so a kill loses at most the attempt in flight; ``finish`` folds the parts into the run's
files and writes its status.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from collector.run.state import Planned, Task
from collector.workloads import registry
from runformat.archive import ArchiveError, RunWriter
from runformat.redact import redact_entry
from runformat.schema import (
    RUN_INTERRUPTED,
    RUN_RUNNING,
    SAMPLES_FILE,
    STATUS_FAILED,
    STATUS_OK,
    STATUSES,
    TIMING_NONE,
    TIMINGS,
    CaseRecord,
    EnvironmentEntry,
    SampleRecord,
    SchemaError,
    finite_or_none,
    params_to_json,
    records_to_table,
    validate_table,
)


@dataclass(frozen=True)
class Attempt:
    """One attempt's rows: its case row, its samples, its GPU-state readings."""

    record: CaseRecord
    samples: list[SampleRecord]
    gpu_rows: list[dict[str, Any]]


def keep_attempt(planned: Planned, task: Task, result: dict[str, Any], started: float) -> Attempt:
    """One attempt's result as rows, kept in ``planned`` (in memory; ``write_attempt`` appends it).

    ``started`` stands in for a start time the result lacks (a worker that died).
    """
    case = task.case
    status, error = result.get("status"), _clean_text(result.get("error"))
    try:
        samples = [SampleRecord(case_id=case.case_id, process=task.process, **s) for s in result.get("samples") or []]
        problem = _invalid_samples(samples, planned.writer)
    except TypeError as e:  # a malformed answer from the worker
        samples, problem = [], f"malformed samples ({e})"
    if status not in STATUSES:
        status, samples = STATUS_FAILED, []
        error = "; ".join(e for e in (error, f"the worker answered an unknown status {result.get('status')!r}") if e)
    if problem:
        status, samples = STATUS_FAILED, []
        error = "; ".join(e for e in (error, f"the worker returned samples no reader accepts: {problem}") if e)
    record = CaseRecord(
        case_id=case.case_id,
        workload=case.workload,
        params=params_to_json(case.params),
        process=task.process,
        status=status,
        error=error,
        timing=result.get("timing") if result.get("timing") in TIMINGS else TIMING_NONE,
        device=planned.device.type,
        started_at=_number(result.get("started_at"), started),
        duration_s=_number(result.get("duration_s"), 0.0),
        flops=finite_or_none(_number(result.get("flops"), None)),
        bytes=finite_or_none(_number(result.get("bytes"), None)),
        items=finite_or_none(_number(result.get("items"), None)),
        items_unit=_clean_text(result.get("items_unit")),
        family=registry()[case.workload].family if case.workload in registry() else None,
        round=task.process if task.position is not None else None,
        position=task.position,
        settings=_clean_text(result.get("settings")) if status == STATUS_OK else None,
    )
    gpu_rows = _gpu_rows(result.get("gpu_state"), case.case_id, task.process, planned.writer) if status == STATUS_OK else []
    # Swap the lists in whole, so a signal arriving here sees either the old state or
    # the new one; the attempt stops being in flight once it is in memory.
    others = [r for r in planned.records if not (r.case_id == case.case_id and r.process == task.process)]
    other_samples = [s for s in planned.samples if not (s.case_id == case.case_id and s.process == task.process)]
    planned.records, planned.samples = others + [record], other_samples + samples
    return Attempt(record, samples, gpu_rows)


def write_attempt(planned: Planned, attempt: Attempt) -> None:
    """Append a kept attempt to its run folder (part files: the cost stays flat per case)."""
    planned.writer.write_attempt([attempt.record], attempt.samples, attempt.gpu_rows)


def _clean_text(value: Any) -> str | None:
    """A string that Parquet can store (lone surrogates and NULs from a worker replaced)."""
    if value is None:
        return None
    return str(value).encode("utf-8", errors="replace").decode("utf-8").replace("\x00", "\ufffd")


def _number(value: Any, default: float | None) -> float | None:
    try:
        return float(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _gpu_rows(rows: Any, case_id: str, process: int, writer: RunWriter) -> list[dict[str, Any]]:
    """The worker's GPU-state rows for one attempt, or none if they would not validate."""
    from runformat.schema import GPU_STATE_FILE

    if not isinstance(rows, list) or not rows:
        return []
    try:
        out = [{**row, "case_id": case_id, "process": process} for row in rows if isinstance(row, dict)]
        validate_table(GPU_STATE_FILE, records_to_table(GPU_STATE_FILE, out, run_id=writer.run_id, label=writer.label))
    except (SchemaError, TypeError, ValueError, OverflowError, pa.ArrowException):
        return []  # a GPU reading the schema refuses is dropped; the case's samples stand
    return out


def _invalid_samples(samples: list[SampleRecord], writer: RunWriter) -> str | None:
    """Why the reader would reject these samples (and with them the whole run), or None."""
    if not samples:
        return None
    try:
        table = records_to_table(SAMPLES_FILE, samples, run_id=writer.run_id, label=writer.label)
        validate_table(SAMPLES_FILE, table)
    except (SchemaError, TypeError, ValueError, OverflowError, pa.ArrowException) as e:
        return str(e)
    return None


def environment_rows(planned: Planned, status: str) -> list[EnvironmentEntry]:
    """The run's environment table: the fingerprint, then the run section with ``status``."""
    rows = [e for e in planned.fingerprint if e.section != "run"]
    entries = dict(planned.run_entries)
    entries["status"] = status
    if status != RUN_RUNNING:
        entries["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows += [EnvironmentEntry("run", k, v) for k, v in sorted(entries.items())]
    # Redacted where recorded: the fingerprint came from a worker, the run entries from flags.
    return [EnvironmentEntry(e.section, e.key, redact_entry(e.section, e.key, e.value)) for e in rows]


def finish(planned: list[Planned], status: str) -> None:
    """Fold each run's part files into its files and write its final status; a disk that
    fails the fold marks the run interrupted (its parts keep every attempt) and is raised."""
    failure: ArchiveError | None = None
    for p in planned:
        try:
            p.writer.compact()  # the part files become the three (or four) files of the run
        except ArchiveError as e:  # a full disk: the parts keep every attempt; say so, mark the run
            failure = failure or e
            status = RUN_INTERRUPTED
        p.writer.write_environment(environment_rows(p, status))
    if failure is not None:
        raise failure


def summarize(planned: Planned) -> list[dict[str, Any]]:
    """Per case: status counts and the median of its first metric, for the terminal only."""
    by_case: dict[str, dict[str, Any]] = {}
    for r in planned.records:
        row = by_case.setdefault(r.case_id, {"case": r.case_id, "statuses": {}, "values": {}, "error": None})
        row["statuses"][r.status] = row["statuses"].get(r.status, 0) + 1
        if r.error and r.status != STATUS_OK and row["error"] is None:
            row["error"] = r.error.splitlines()[0][:80]
    for s in planned.samples:
        row = by_case.get(s.case_id)
        if row is not None:
            row["values"].setdefault((s.metric, s.unit), []).append(s.value)
    return list(by_case.values())
