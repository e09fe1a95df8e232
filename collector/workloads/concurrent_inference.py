"""Concurrent inference: 2, 4 and 6 processes sharing one device for a fixed duration."""

from __future__ import annotations

import queue
import time
from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, require, tier
from collector.workloads._procs import fork_context

WINDOW_S = 0.5  # throughput is summed over all tasks per window of this length
READY_TIMEOUT_S = 300.0  # a task builds its model and warms up (the first also waits for the fork server's imports)


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        return [dict(tasks=2, model="resnet18", image_size=64, batch=2, duration_s=1.0)]
    if level == "small":
        return [dict(tasks=2, model="resnet18", image_size=64, batch=4, duration_s=2.0)]
    base = dict(model="resnet50", image_size=224, batch=32)
    if level == "quick":
        return []  # a dozen seconds of process start-up per case: standard and full measure it
    out = [dict(tasks=n, duration_s=5.0, **base) for n in (2, 4, 6)]
    if at_least(level, "full"):
        # Six tasks, each capped to its share of the GPU's memory, as a shared inference host does.
        out.append(dict(tasks=6, duration_s=5.0, memory_fraction=round(0.9 / 6, 3), **base))
    return out


def task_context() -> Any:
    """The multiprocessing context that starts the tasks: the worker's fork server where there is one.

    Spawned tasks each imported torch and torchvision anew: seconds per task, paid again in
    every case. Forked from the fork server (``_procs.fork_context``), a task starts with
    them imported and initialises CUDA itself, as a spawned one would. Falls back to spawn
    where fork servers do not exist.
    """
    import multiprocessing

    return fork_context() or multiprocessing.get_context("spawn")


def run(params: Mapping[str, Any], ctx: Any) -> None:
    from runformat.schema import TIMING_WALL
    from collector.workloads._children import concurrent_task

    require(ctx, "torchvision", params["model"])
    n = int(params["tasks"])
    duration = float(params["duration_s"])
    cuda = ctx.device == "cuda"
    spec = {
        "device": ctx.device,
        "model": params["model"],
        "image_size": params["image_size"],
        "batch": params["batch"],
        "duration_s": duration,
        "memory_fraction": params.get("memory_fraction"),
        "ready_timeout_s": READY_TIMEOUT_S,
        # On the CPU the tasks share the cores instead of each spinning up every core.
        "threads": 0 if cuda else max(1, ctx.info.cpu_count // n),
    }
    mp = task_context()
    ready, results, go = mp.Queue(), mp.Queue(), mp.Event()
    start_at = mp.Value("d", 0.0)
    procs = [mp.Process(target=concurrent_task, args=(i, spec, ready, results, go, start_at), daemon=True) for i in range(n)]
    for p in procs:
        p.start()
    errors, outcomes = _gather(procs, ready, results, go, start_at, duration)
    for i, p in enumerate(procs):
        if i not in errors and (i not in outcomes or outcomes[i].get("error")):
            errors[i] = (outcomes.get(i) or {}).get("error") or f"task exited with code {p.exitcode} without a result"
    ok = [o for i, o in sorted(outcomes.items()) if i not in errors]
    ctx.record("tasks_ok", [len(ok)])
    ctx.set_timing(TIMING_WALL)
    ctx.set_work(items=params["batch"], items_unit="images")
    if errors:
        ctx.note("; ".join(f"task {i}: {e}" for i, e in sorted(errors.items())))
    if not ok:
        return
    _record_throughput(ctx, [t for o in ok for t in o["completions"]], duration, params["batch"])
    if cuda:
        ctx.record("peak_allocated", [o["peak_allocated"] for o in ok])
        ctx.record("peak_reserved", [o["peak_reserved"] for o in ok])


def _gather(procs: list[Any], ready: Any, results: Any, go: Any, start_at: Any,
            duration: float) -> tuple[dict[int, str], dict[int, dict[str, Any]]]:
    """Wait for the tasks to be ready, start them at one instant, collect what they report:
    (errors by task, outcomes by task). Every task is joined (or killed) before returning."""
    n = len(procs)
    errors: dict[int, str] = {}
    outcomes: dict[int, dict[str, Any]] = {}
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        reported: set[int] = set()
        while len(reported) < n and time.monotonic() < deadline:
            try:
                index, error = ready.get(timeout=1.0)
            except queue.Empty:
                # A task that died before reporting (a crash at import) is not waited for.
                if all(not p.is_alive() for i, p in enumerate(procs) if i not in reported):
                    break
                continue
            reported.add(index)
            if error:
                errors[index] = error
        # Everyone starts at the same instant, a moment from now (monotonic clocks agree
        # between processes of one host).
        start_at.value = time.monotonic() + 0.2
        go.set()
        wanted = n - len(errors)
        deadline = start_at.value + duration + 120.0
        while len(outcomes) < wanted and time.monotonic() < deadline:
            try:
                index, outcome = results.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break
                continue
            outcomes[index] = outcome
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
    return errors, outcomes


def _record_throughput(ctx: Any, completions: list[float], duration: float, batch: int) -> None:
    """Images a second in windows of about ``WINDOW_S`` over the tasks' completion times."""
    if not completions:
        ctx.note(f"no request finished within the {duration:g} s: throughput not recorded")
        return
    # Requests slower than a window would leave empty windows (a throughput of 0 that is an
    # artefact of the window): widen the windows until every one holds a completion.
    windows = max(1, int(round(duration / WINDOW_S)))
    while True:
        width = duration / windows
        images = [0] * windows
        for t in completions:
            images[min(windows - 1, int(t / width))] += batch
        if min(images) > 0 or windows == 1:
            break
        windows -= 1
    ctx.record("throughput", [count / width for count in images])


WORKLOAD = Workload.described(
    "concurrent_inference",
    cases=cases,
    run=run,
    timeout_s=600.0,
    max_processes=1,  # each case spawns up to six processes; the 0.5 s windows are its samples
    fork_server=True,
)
