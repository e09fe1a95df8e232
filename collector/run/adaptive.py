"""Adaptive replication: after the planned processes, more processes for the cases whose CIs are widest.

A process is the unit of replication, so a wide interval narrows with more processes, not
more samples. Each round starts one more worker process per stack and runs in it the
cases of the wider half, widest first, as many as the time left allows; interleaved stacks
get the same cases in the same round, so pairs by round stay whole.
"""

from __future__ import annotations

import json
import statistics
import time

from collector.replication import compute_rel_half_width
from collector.run.schedule import Runner
from collector.run.state import Planned, Task
from collector.workloads import Case, registry
from runformat.schema import STATUS_OK, CaseRecord, SampleRecord

Widths = dict[str, tuple[float, int, float]]


def compute_widths(planned: Planned) -> Widths:
    """Per case of a stack: (relative CI half-width of its main metric, processes, mean
    seconds an attempt took), for cases recorded ok in every process so far."""
    attempts: dict[str, list[CaseRecord]] = {}
    for r in planned.records:
        attempts.setdefault(r.case_id, []).append(r)
    by_case: dict[str, dict[str, list[SampleRecord]]] = {}
    for smp in planned.samples:
        if smp.better != "none":
            by_case.setdefault(smp.case_id, {}).setdefault(smp.metric, []).append(smp)
    out = {}
    for case_id, rows in attempts.items():
        metrics = by_case.get(case_id)
        if not metrics or any(r.status != STATUS_OK for r in rows) or len(rows) < 2:
            continue
        name = "time" if "time" in metrics else ("latency" if "latency" in metrics else next(iter(metrics)))
        values = metrics[name]
        if len({v.process for v in values}) < 2:
            continue  # one process (a one-off measurement): no between-process spread to narrow
        width = compute_rel_half_width([v.value for v in values], [v.process for v in values])
        out[case_id] = (width, len(rows), sum(r.duration_s for r in rows) / len(rows))
    return out


def choose_round(widths: Widths, eligible: set[str], stacks: int, left_s: float) -> list[tuple[str, int]]:
    """(case id, its next process index) for one round: cases wider than the median width of
    every case measured (capped ones included), widest first, as many as ``left_s`` allows
    (an attempt is expected to take as long as its earlier ones did, once per stack)."""
    if not eligible or left_s <= 0:
        return []
    cut = statistics.median(w for w, _, _ in widths.values())
    chosen, spend = [], 0.0
    for case_id in sorted(eligible, key=lambda c: -widths[c][0]):
        width, n, seconds = widths[case_id]
        if not width > cut:
            break
        cost = seconds * stacks
        if spend + cost > left_s:
            continue
        chosen.append((case_id, n))
        spend += cost
    return chosen


def replicate(runner: Runner, budget_s: float) -> None:
    """Add processes to the cases whose CIs are widest, within ``budget_s`` seconds, up to
    ``--max-processes`` a case; what was added is recorded in the run section (``replication``)."""
    start = time.monotonic()
    stacks = len(runner.planned)
    cap = runner.options.max_processes or 2 * runner.options.processes
    by_id: list[dict[str, Case]] = [{c.case_id: c for c in p.cases} for p in runner.planned]
    added: dict[str, int] = {}
    rounds = 0
    while True:
        # A round starts a fresh worker per stack (a new process is the new replicate).
        left = budget_s - (time.monotonic() - start) - runner.worker_start_s * stacks
        widths = compute_widths(runner.planned[0])
        eligible = {cid for cid, (_, n, _) in widths.items()
                    if n < cap and cid in by_id[0] and registry()[by_id[0][cid].workload].max_processes is None
                    and all(cid in b for b in by_id)}
        chosen = choose_round(widths, eligible, stacks, left)
        if not chosen:
            break
        rounds += 1
        for cid, _ in chosen:
            added[cid] = added.get(cid, 0) + 1
        # By process, then stack: each new process index runs in one worker of each stack.
        tasks = sorted((Task(s, n, by_id[s][cid]) for cid, n in chosen for s in range(stacks)),
                       key=lambda t: (t.process, t.stack_index))
        runner.run(tasks)
    entry = json.dumps({"budget_s": budget_s, "spent_s": round(time.monotonic() - start, 1), "cap": cap,
                        "rounds": rounds, "added": dict(sorted(added.items()))}, sort_keys=True)
    for p in runner.planned:
        p.run_entries["replication"] = entry
