"""The workers of a run: started ahead of their turn, handed out one (stack, process) at a time.

Starting a worker (a host interpreter, or a container) and importing torch in it is the
slowest part of a case's life, so it never happens inside one: workers start while the
stacks are probed (``EarlyWorkers``) and before the first case (``WorkerPool.prestart``),
all together so their imports overlap, and wait idle on their pipe, holding no GPU
context, for their turn; no case is timed until they have finished starting. The pool replaces a worker that died and closes a stack's
previous worker when its next process begins.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from collector.protocol import FORK_SERVER_ENV
from collector.run.plan import forks_in, speculated
from collector.run.probe import PROBE_TIMEOUT_S
from collector.run.state import Planned, RunError, RunOptions, Task
from collector.run.worker_ipc import Worker, WorkerDied
from collector.stacks import Launcher
from collector.workloads._models import packages_for

PRESTART_MAX = 8  # workers started ahead of their turn (each holds torch and its model libraries)

Key = tuple[int, int]  # (stack index, process index)


@dataclass
class EarlyWorkers:
    """Workers started before the stacks are probed, so their imports overlap the probe.

    Probing a stack (its interpreter importing torch, the fingerprint, the device) took
    8 s before the first worker even started on a freshly booted GPU host, and a worker's
    imports 13 s more. Started at once, the workers import torch while the probe runs,
    with the model packages and the fork server that the cases will likely need
    (``speculated``): a fork server started only once the cases were planned kept the first
    case waiting for its imports (it began 12 s after the run's start on one H100 host).
    Once the cases are planned, each is told what to prepare (``Worker.prepare``). At most
    ``PRESTART_MAX``, process-major (the order the tasks run in).
    """

    workers: dict[Key, Worker]
    log_dir: Path

    @classmethod
    def start(cls, options: RunOptions, launchers: list[Launcher] | None = None) -> "EarlyWorkers":
        launchers = launchers or [options.launcher(s) for s in options.stacks]
        log_dir = Path(tempfile.mkdtemp(prefix="imagebench-workers-"))
        workers: dict[Key, Worker] = {}
        keys = [(s, p) for p in range(options.processes) for s in range(len(launchers))]
        preload, forking = speculated(options)
        for s, p in keys[:PRESTART_MAX]:
            env = {FORK_SERVER_ENV: "1"} if p in forking else {}
            try:
                workers[(s, p)] = Worker(launchers[s], log_dir / f"stack{s}-{p}.log", env=env, preload=preload)
            except RunError:
                break  # an interpreter that does not start: the probe says so
        return cls(workers, log_dir)

    def kill(self) -> None:
        for worker in self.workers.values():
            worker.kill()
        self.workers.clear()
        shutil.rmtree(self.log_dir, ignore_errors=True)


class WorkerPool:
    """Who runs the next task: the worker of its (stack, process), started if need be."""

    def __init__(self, planned: list[Planned], early: EarlyWorkers | None = None) -> None:
        self.planned = planned
        self.workers: dict[Key, Worker] = {}  # in use: one a stack at a time
        self.spares: dict[Key, Worker] = {}  # started ahead of their turn, idle until their first case
        # Started while the stacks were probed, not yet told what their cases need.
        self.early = early.workers if early is not None else {}
        self.worker_start_s = 0.0  # the longest a worker took to start (adaptive replication plans with it)
        self.unsettled: set[int] = set()  # spares still starting when a case could wait no longer
        # Worker stderr goes to scratch logs outside the archive; a failure's record
        # carries the end of its log, and the logs go when the run ends.
        self.log_dir = early.log_dir if early is not None else Path(tempfile.mkdtemp(prefix="imagebench-workers-"))

    def worker_for(self, task: Task) -> Worker:
        key = (task.stack_index, task.process)
        worker = self.workers.get(key)
        if worker is not None and worker.proc.poll() is None:
            self.wait_for_spares()
            return worker
        # A new process index for this stack: the previous worker of the stack is done.
        for other in [k for k in self.workers if k[0] == task.stack_index and k != key]:
            self.workers.pop(other).close()
        worker = self.spares.pop(key, None) or self.start_worker(key)
        self.workers[key] = worker
        worker.wait_ready(PROBE_TIMEOUT_S)  # importing torch is not part of any case's time
        self.worker_start_s = max(self.worker_start_s, (worker.ready_at or time.monotonic()) - worker.started)
        self.wait_for_spares()
        return worker

    def wait_for_spares(self) -> None:
        """Let every worker still starting finish before a case is timed.

        Spares import torch and the model libraries together, ahead of their turn, but not
        beside a measurement: a process that imports takes cores from a CPU case and host
        time from a launch-bound GPU case. The wait costs nothing a run did not already
        spend: the imports still overlap each other. A spare still starting after the
        probe's timeout is not waited for again: it fails at its turn, as a worker that never
        starts does.
        """
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        for spare in [*self.spares.values(), *self.early.values()]:
            if id(spare) in self.unsettled:
                continue
            if not spare.wait_settled(max(0.0, deadline - time.monotonic())):
                self.unsettled.add(id(spare))

    def start_worker(self, key: Key) -> Worker:
        """A new worker for (stack, process index), importing what its cases build with."""
        planned = self.planned[key[0]]
        preload = tuple(sorted({m for c in planned.cases for m in packages_for(c.params)}))
        fork_server = any(forks_in(c.workload, key[1]) for c in planned.cases)
        early = self.early.pop(key, None)
        if early is not None:
            try:
                early.prepare(preload, fork_server)
                return early
            except WorkerDied:
                early.kill()  # died while the stack was probed: start another, which reports why
        env = {FORK_SERVER_ENV: "1"} if fork_server else {}
        assert planned.launcher is not None
        return Worker(planned.launcher, self.log_dir / f"{planned.writer.label}-{key[1]}.log", env=env, preload=preload)

    def prestart(self, tasks: list[Task]) -> None:
        """Start the workers of ``tasks`` now, all together, so their imports overlap.

        A spare imports torch and the model libraries, then waits on its pipe, using no
        CPU; CUDA is first touched by its first case, so an idle spare holds no GPU
        context. Starting them one after another, each at its turn, cost a torch import
        (and a transformers import) between processes. At most ``PRESTART_MAX`` spares.
        """
        for task in tasks:
            key = (task.stack_index, task.process)
            if len(self.spares) >= PRESTART_MAX:
                break
            if key in self.spares or key in self.workers:
                continue
            self.spares[key] = self.start_worker(key)

    def drop(self, key: Key) -> Worker | None:
        """Take a worker out of use (to kill it: it timed out, died or met a sticky error)."""
        return self.workers.pop(key, None)

    def kill_all(self) -> None:
        """Stop every worker now (interrupted, or the disk failed): no case in flight finishes."""
        for pool in (self.workers, self.spares, self.early):
            for key in list(pool):
                pool.pop(key).kill()

    def close_all(self) -> None:
        """After a batch of tasks: close the workers in use, kill those that never ran a task."""
        for worker in self.workers.values():
            worker.close()
        self.workers.clear()
        for worker in [*self.spares.values(), *self.early.values()]:
            worker.kill()
        self.spares.clear()
        self.early.clear()
        for planned in self.planned:
            if planned.launcher is not None:
                planned.launcher.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def keep_logs(self) -> None:
        """(Re)create the log folder: adaptive replication's rounds start workers again."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
