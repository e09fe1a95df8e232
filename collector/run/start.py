"""Starting a run: probe every stack, plan its cases, create its run folder with what it was asked.

The run section of each folder's environment records the settings (suite, processes,
``--only``, the stack as given, its ``--env`` and runtime flags) that ``--resume`` reads
back, and one interleave group shared by the stacks of one ``--interleave`` invocation,
which the reporter pairs by.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import tempfile
from pathlib import Path

from collector import __version__
from collector.run.plan import default_label, plan_cases, policy_for
from collector.run.probe import probe
from collector.run.record import environment_rows
from collector.run.state import Planned, RunError, RunOptions
from collector.stacks import Launcher, Stack
from collector.suites import default_suite
from collector.timing import TIMING_METHOD
from collector.workloads import Case, DeviceInfo
from runformat.archive import ArchiveError, RunWriter, check_writable
from runformat.schema import RUN_RUNNING, EnvironmentEntry


def start_run(options: RunOptions, launchers: list[Launcher], planned: list[Planned] | None = None) -> list[Planned]:
    """Probe every stack, plan its cases and create its run folder.

    Each run is appended to ``planned`` (when given) as soon as its folder exists, so an
    interrupted start still marks what it created.
    """
    try:
        check_writable(options.out)
    except ArchiveError as e:
        raise RunError(f"--out: {e}") from None
    probes = []
    for launcher in launchers:
        with tempfile.TemporaryDirectory(prefix="imagebench-probe-") as tmp:
            device, fingerprint = probe(launcher, options, Path(tmp) / "probe.log")
        suite = options.suite or default_suite(device.type)
        probes.append((launcher, device, fingerprint, suite, plan_cases(suite, device, options.only)))
    labels = [lr.stack.label or lr.default_label() or default_label(d, f) for lr, d, f, _, _ in probes]
    if len(set(labels)) != len(labels):
        raise RunError(f"two stacks would be recorded under the same label ({', '.join(labels)}); give each a --label")
    planned = [] if planned is None else planned
    interleaved = options.interleave and len(probes) > 1
    # One id shared by the runs of this invocation, so the reporter can pair them.
    group = secrets.token_hex(8) if interleaved else None
    for (launcher, device, fingerprint, suite, cases), label in zip(probes, labels):
        planned.append(_create(options, launcher, device, fingerprint, suite, cases, label, interleaved, group))
    return planned


def _create(options: RunOptions, launcher: Launcher, device: DeviceInfo, fingerprint: list[EnvironmentEntry],
            suite: str, cases: list[Case], label: str, interleaved: bool, group: str | None) -> Planned:
    # Staged: the folder appears under its run id only with all three files in it.
    writer = RunWriter.create(options.out, label, staged=True)
    entries = run_entries(options, launcher.stack, suite, len(cases), interleaved)
    entries.update({"run_id": writer.run_id, "label": writer.label})
    if group:
        entries["interleave_group"] = group
    if launcher.stack.label and launcher.stack.label != writer.label:
        entries["label_given"] = launcher.stack.label
    p = Planned(launcher.stack, device, fingerprint, writer, cases, run_entries=entries, launcher=launcher)
    try:
        writer.write_environment(environment_rows(p, RUN_RUNNING))
        writer.write_cases([], [])
        writer.publish()
    except BaseException:
        writer.discard()
        raise
    return p


def run_entries(options: RunOptions, stack: Stack, suite: str, cases: int, interleaved: bool) -> dict[str, str]:
    """The run section of a new run: its settings, the stack as given, the collector's version."""
    entries = {
        "suite": suite,
        "processes": str(options.processes),
        "device": options.device,
        "only": json.dumps(options.only),
        "time_budget": "" if options.time_budget is None else str(options.time_budget),
        "case_timeout": "" if options.case_timeout is None else str(options.case_timeout),
        "stack": stack.spec,
        "interleaved": str(interleaved),
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cases_planned": str(cases),
        "policy": json.dumps(policy_for(suite, options).__dict__, sort_keys=True),
        "collector_version": __version__,
        "timing_method": TIMING_METHOD,
    }
    if stack.kind == "python":
        entries["python"] = stack.target
    if stack.env:
        entries["stack_env"] = json.dumps(dict(stack.env), sort_keys=True)
    if stack.runtime_args:
        entries["runtime_args"] = json.dumps(list(stack.runtime_args))
    if stack.interpreter:
        entries["interpreter"] = stack.interpreter
    entries.update(options.run_entries)
    return entries
