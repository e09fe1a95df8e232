"""Resuming a run: reopen its folder, rebuild its stack from the record, run what is missing.

The run's files are checked against each other: an attempt recorded ok whose samples are
gone (``samples.parquet`` deleted or cut short) is measured again, not taken as done. The
stack is the one the run recorded (``--stack`` as given, its ``--env`` and runtime flags),
and it must still be the same stack on the same machine (``RESUME_KEYS``, the image id
included). The flags a resumed run may be given are checked in ``collector/resume.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from collector.run.plan import plan_cases
from collector.run.probe import probe
from collector.run.record import environment_rows
from collector.run.state import Planned, RunError, RunOptions
from collector.stacks import Stack, StackError, parse_stack
from collector.suites import default_suite
from runformat.archive import ArchiveError, RunWriter, read_table
from runformat.schema import (
    CASES_FILE,
    ENVIRONMENT_FILE,
    RUN_COMPLETE,
    RUN_RUNNING,
    SAMPLES_FILE,
    STATUS_INTERRUPTED,
    STATUS_OK,
    CaseRecord,
    EnvironmentEntry,
    SampleRecord,
)

# Fingerprint keys that must not change between a run and its resumption: the stack and
# the hardware it measures. Volatile facts (clocks, temperature, the command line) may,
# and so may the host name (a container gets a new one each time it starts).
RESUME_KEYS = (
    ("torch", "version"), ("torch", "git_version"), ("cuda", "runtime"), ("cuda", "cudnn"), ("cuda", "nccl"),
    ("driver", "version"), ("gpu", "count"), ("gpu0", "name"), ("cpu", "model"), ("python", "version"),
    ("container", "image_id"),
)

Done = set[tuple[int, str, int]]


def load_existing(folder: Path) -> tuple[list[EnvironmentEntry], list[CaseRecord], list[SampleRecord]]:
    """Read a run folder's tables back as records (for --resume)."""
    env_table, _ = read_table(folder / ENVIRONMENT_FILE, ENVIRONMENT_FILE)
    env = [EnvironmentEntry(**row) for row in env_table.to_pylist()]
    cases: list[CaseRecord] = []
    samples: list[SampleRecord] = []
    if (folder / CASES_FILE).exists():
        table, _ = read_table(folder / CASES_FILE, CASES_FILE)
        for row in table.to_pylist():
            row["started_at"] = row["started_at"].timestamp()
            cases.append(CaseRecord(**row))
    if (folder / SAMPLES_FILE).exists():
        table, _ = read_table(folder / SAMPLES_FILE, SAMPLES_FILE)
        samples = [SampleRecord(**row) for row in table.to_pylist()]
    return env, cases, samples


def split_unsampled(cases: list[CaseRecord], samples: list[SampleRecord]) -> tuple[list[CaseRecord], list[CaseRecord]]:
    """``cases`` without, and then only, the ok attempts that have no sample in ``samples``."""
    sampled = {(x.case_id, x.process) for x in samples}
    lost = [c for c in cases if c.status == STATUS_OK and (c.case_id, c.process) not in sampled]
    lost_keys = {(c.case_id, c.process) for c in lost}
    return [c for c in cases if (c.case_id, c.process) not in lost_keys], lost


def recorded_stack(run: dict[str, str], label: str) -> Stack:
    """The stack a run was recorded on, from its run section (older runs name only ``python``)."""
    spec = run.get("stack")
    if not spec or spec.startswith("python:"):
        python = run.get("python") or (spec or "").removeprefix("python:") or sys.executable
        if not Path(python).exists():
            python = sys.executable
        spec = f"python:{python}"
    try:
        stack = parse_stack(spec)
    except StackError as e:
        raise RunError(f"--resume: the run's stack cannot be used here: {e}") from None
    env = tuple(sorted(json.loads(run.get("stack_env") or "{}").items()))
    args = tuple(json.loads(run.get("runtime_args") or "[]"))
    return Stack(stack.target, label, env, stack.kind, args, run.get("interpreter") or None)


def resume_run(folder: Path, options: RunOptions) -> tuple[Planned, Done]:
    """Reopen a run folder; return it with the (stack, case, process) attempts already done."""
    try:
        writer = RunWriter.reopen(folder)
        env, cases, samples = load_existing(Path(folder))
    except ArchiveError as e:
        raise RunError(f"--resume: {e}; nothing was changed (move a damaged cases or samples file away "
                       "and resume again to measure what it held)") from None
    run = {e.key: e.value for e in env if e.section == "run"}
    cases, lost = split_unsampled(cases, samples)
    if lost:
        missing = "missing" if not (Path(folder) / SAMPLES_FILE).exists() else "without them"
        print(f"collector: note: {len(lost)} attempt(s) recorded ok have no samples ({SAMPLES_FILE} {missing}); "
              "they are measured again", file=sys.stderr)
    if run.get("status") == RUN_COMPLETE and not lost:
        raise RunError(f"--resume: run {folder} is already complete; nothing to resume")
    _apply_recorded(run, options)
    launcher = options.launcher(recorded_stack(run, writer.label))
    try:
        launcher.check()
    except StackError as e:
        raise RunError(f"--resume: {e}") from None
    fingerprint = [e for e in env if e.section != "run"]
    with tempfile.TemporaryDirectory(prefix="imagebench-probe-") as tmp:
        device_info, now = probe(launcher, options, Path(tmp) / "probe.log")
    changed = _stack_changes(fingerprint, now)
    if changed:
        raise RunError(
            f"--resume: run {folder} was recorded on another stack or machine ({'; '.join(changed)}); "
            "resume it where it started, or start a new run"
        )
    suite = run.get("suite") or default_suite(device_info.type)
    finished = [c for c in cases if c.status != STATUS_INTERRUPTED]
    done_keys = {(c.case_id, c.process) for c in finished}
    kept_samples = [s for s in samples if (s.case_id, s.process) in done_keys]
    run["suite"] = suite
    run.pop("finished_at", None)
    run["resumed_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    run["resumes"] = str(int(run.get("resumes", "0") or 0) + 1)
    p = Planned(launcher.stack, device_info, fingerprint, writer, plan_cases(suite, device_info, options.only),
                finished, kept_samples, run_entries=run, launcher=launcher)
    writer.write_environment(environment_rows(p, RUN_RUNNING))
    writer.write_cases(p.records, p.samples)
    return p, {(0, cid, proc) for cid, proc in done_keys}


def _apply_recorded(run: dict[str, str], options: RunOptions) -> None:
    """The settings a resumed run keeps from its record (``collector/resume.py`` refused any
    flag that disagrees); ``--case-timeout`` given now wins over the recorded one."""
    options.processes = int(run.get("processes", options.processes))
    options.only = json.loads(run.get("only", "[]"))
    options.device = run.get("device", options.device)
    if run.get("time_budget"):
        options.time_budget = float(run["time_budget"])
    if run.get("case_timeout") and options.case_timeout is None:
        options.case_timeout = float(run["case_timeout"])


def _stack_changes(before: list[EnvironmentEntry], now: list[EnvironmentEntry]) -> list[str]:
    """``section.key: old -> new`` for each ``RESUME_KEYS`` fact that differs."""
    a = {(e.section, e.key): e.value for e in before}
    b = {(e.section, e.key): e.value for e in now}
    return [f"{s}.{k}: {a.get((s, k))!r} then, {b.get((s, k))!r} now" for s, k in RESUME_KEYS if a.get((s, k)) != b.get((s, k))]
