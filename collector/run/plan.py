"""Planning: which cases a suite runs here, in which order, in which worker process.

No torch: the cases are listed from the workload registry and the device facts the probe
returned. The order is rotated per process (order effects even out), and with
``--interleave`` alternated between stacks round by round (A B, then B A).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import replace
from typing import Any

from collector.run.state import Planned, RunError, RunOptions, Task
from collector.suites import SUITES, default_suite
from collector.workloads import Case, DeviceInfo, registry
from collector.workloads._models import packages_for
from runformat.policy import TimingPolicy
from runformat.schema import EnvironmentEntry


def matches(case: Case, patterns: list[str]) -> bool:
    """True when no patterns are given or one names the workload or matches the case id.

    A pattern is a workload name (``matmul``), a case id (``matmul[dtype=bf16,n=4096]``),
    a glob over workload names (``mat*``) or a glob over case ids (``matmul*n=4096*``). A bare word never matches a parameter
    by accident (``memory`` is not ``pin_memory``).
    """
    if not patterns:
        return True
    return any(
        p in (case.workload, case.case_id) or fnmatch.fnmatchcase(case.workload, p) or fnmatch.fnmatchcase(case.case_id, p)
        for p in patterns
    )


def plan_cases(suite_name: str, device: DeviceInfo, only: list[str]) -> list[Case]:
    """The cases of ``suite_name`` on ``device`` that match ``only``."""
    if suite_name not in SUITES:
        raise RunError(f"--suite {suite_name!r} is not a suite; choose one of: {', '.join(SUITES)}")
    workloads = registry()
    suite = SUITES[suite_name]
    # Workloads named by no suite (added through IMAGEBENCH_EXTRA_WORKLOADS) join every suite.
    named = {w for s in SUITES.values() for w in s.workloads}
    extra = [w for w in workloads if w not in named]
    cases = []
    for name in list(suite.workloads) + extra:
        workload = workloads.get(name)
        if workload is None:
            continue  # a workload this checkout does not ship yet
        cases += [c for c in workload.make_cases(suite_name, device) if matches(c, only)]
    if not cases:
        what = f" matching --only {' '.join(only)!r}" if only else ""
        raise RunError(f"suite {suite_name!r} has no cases{what} on this {device.type} device")
    return cases


def rotated(items: list[Any], process: int, processes: int) -> list[Any]:
    """``items`` rotated so each process starts at a different place (order effects even out)."""
    if not items:
        return items
    shift = (process * len(items)) // max(1, processes)
    return items[shift:] + items[:shift]


def plan_tasks(planned: list[Planned], options: RunOptions, done: set[tuple[int, str, int]]) -> list[Task]:
    """Every (stack, process, case) still to run, in execution order."""
    n = options.processes
    per_stack = []
    for s, p in enumerate(planned):
        stack_tasks = []
        for proc in range(n):
            for case in rotated(p.cases, proc, n):
                limit = registry()[case.workload].max_processes
                if limit is not None and proc >= limit:
                    continue
                if (s, case.case_id, proc) not in done:
                    stack_tasks.append(Task(s, proc, case))
        per_stack.append(stack_tasks)
    if not (options.interleave and len(per_stack) > 1):
        return [t for stack_tasks in per_stack for t in stack_tasks]
    # Round p is process p of every stack, case by case: A B in even rounds, B A in odd
    # ones, so machine drift falls on every stack alike and an order effect (the second of
    # a pair runs warmer) cancels over rounds in the paired analysis.
    tasks = []
    for proc in range(n):
        order = list(range(len(per_stack)))
        if proc % 2:
            order.reverse()
        in_round = [[t for t in per_stack[s] if t.process == proc] for s in order]
        longest = max((len(t) for t in in_round), default=0)
        for i in range(longest):
            for pos, stack_tasks in enumerate(in_round):
                if i < len(stack_tasks):
                    tasks.append(replace(stack_tasks[i], position=pos))
    return tasks


def default_label(device: DeviceInfo, fingerprint: list[EnvironmentEntry]) -> str:
    """``torch-<version>-<cuda or cpu>`` from the fingerprint, when no --label is given."""
    values = {(e.section, e.key): e.value for e in fingerprint}
    version = values.get(("torch", "version"), device.torch_version or "unknown")
    cuda = values.get(("cuda", "runtime"), "")
    base = version.split("+")[0]
    suffix = f"cu{cuda.replace('.', '')}" if cuda and device.is_cuda else "cpu"
    return f"torch-{base}-{suffix}"


def speculated(options: RunOptions) -> tuple[tuple[str, ...], set[int]]:
    """What workers started before the probe get ready for: the model packages their cases
    will likely build with, and the process indices whose cases will likely fork.

    The cases are planned without the device, for each device type ``--device`` allows,
    with ``--suite`` or each type's default suite, and ``--only``: the union. A guess only
    ever costs time: ``Worker.prepare`` then asks for the planned packages and fork server,
    and the worker stops a fork server it does not need or that lacks a package.
    """
    types = [options.device] if options.device in ("cpu", "cuda") else ["cuda", "cpu"]
    cpus = os.cpu_count() or 1
    packages: set[str] = set()
    forking: set[int] = set()
    for device_type in types:
        cuda = device_type == "cuda"
        device = DeviceInfo(type=device_type, name="", count=int(cuda), bf16=True, fp16=True, tf32=cuda, cpu_count=cpus)
        try:
            cases = plan_cases(options.suite or default_suite(device_type), device, options.only)
        except RunError:
            continue  # no such suite, or no case on this type: the probe's planning says so
        packages.update(m for c in cases for m in packages_for(c.params))
        forking.update(p for p in range(options.processes) if any(forks_in(c.workload, p) for c in cases))
    return tuple(sorted(packages)), forking


def forks_in(workload: str, process: int) -> bool:
    """True when ``workload`` forks children from the fork server in worker process ``process``."""
    w = registry()[workload]
    return w.fork_server and (w.max_processes is None or process < w.max_processes)


def policy_for(suite: str, options: RunOptions) -> TimingPolicy:
    """The timing policy a run's cases use: the suite's, with --time-budget applied."""
    policy = SUITES[suite].policy
    if options.time_budget is not None:
        policy = policy.scaled(budget_s=options.time_budget)
    return policy
