"""Running tasks: each case sent to its worker, waited for within its timeout, and recorded at once.

A worker that crashes or hangs costs one case (recorded as ``failed`` or ``timeout``,
with the signal, or the container's fate, and the worker's last output, its Python stack
included); the next case gets a fresh worker. Workers run cases one at a time, so each
has the machine to itself.
"""

from __future__ import annotations

import time
from typing import Any

from collector.run.pool import EarlyWorkers, WorkerPool
from collector.run.progress import Progress
from collector.run.record import keep_attempt, write_attempt
from collector.run.state import Planned, RunOptions, Task
from collector.run.plan import policy_for
from collector.run.worker_ipc import Worker, WorkerDied, WorkerTimeout
from collector.suites import SUITES
from collector.workloads import Case, registry
from runformat.policy import TimingPolicy
from runformat.schema import STATUS_FAILED, STATUS_INTERRUPTED, STATUS_TIMEOUT, TIMING_NONE


class Runner:
    """Executes tasks across stacks and processes, writing each attempt as it finishes."""

    def __init__(self, options: RunOptions, planned: list[Planned], progress: bool = True,
                 early: EarlyWorkers | None = None) -> None:
        self.options = options
        self.planned = planned
        self.pool = WorkerPool(planned, early)
        self.progress_enabled = progress
        self.in_flight: Task | None = None
        self.in_flight_started = 0.0

    @property
    def worker_start_s(self) -> float:
        """The longest a worker took to start (adaptive replication plans with it)."""
        return self.pool.worker_start_s

    @worker_start_s.setter
    def worker_start_s(self, seconds: float) -> None:
        self.pool.worker_start_s = seconds

    def run(self, tasks: list[Task]) -> None:
        self.pool.keep_logs()
        progress = Progress(len(tasks), enabled=self.progress_enabled)
        try:
            self.pool.prestart(tasks)
            for task in tasks:
                label = self.planned[task.stack_index].writer.label
                prefix = f"{label} p{task.process} " if len(self.planned) > 1 else f"p{task.process} "
                progress.update(prefix + task.case.case_id)
                self.run_task(task)
                progress.update(prefix + task.case.case_id, advance=1)
        except BaseException:
            # Interrupted (or the disk failed): stop every worker at once, never wait
            # for a case in flight to finish.
            self.pool.kill_all()
            raise
        finally:
            progress.stop()
            self.pool.close_all()

    def case_timeout(self, case: Case) -> float:
        if self.options.case_timeout is not None:
            return self.options.case_timeout
        suite = SUITES[self.suite_name()]
        return registry()[case.workload].timeout_s * suite.timeout_scale

    def suite_name(self) -> str:
        return self.planned[0].run_entries["suite"]

    def policy(self) -> TimingPolicy:
        return policy_for(self.suite_name(), self.options)

    def message(self, task: Task) -> dict[str, Any]:
        """The ``run`` command a worker is sent for ``task``."""
        case = task.case
        return {
            "cmd": "run",
            "case_id": case.case_id,
            "workload": case.workload,
            "params": dict(case.params),
            "suite": self.suite_name(),
            "policy": self.policy().__dict__,
            "process": task.process,
            "processes": self.options.processes,
            "device": self.planned[task.stack_index].device.to_json(),
            "data_dir": self.options.data_dir,
        }

    def run_task(self, task: Task) -> None:
        self.in_flight = task
        self.in_flight_started = time.time()
        timeout = self.case_timeout(task.case)
        key = (task.stack_index, task.process)
        worker: Worker | None = None
        try:
            worker = self.pool.worker_for(task)
            self.in_flight_started = time.time()
            result = self._exchange(worker, task, timeout)
            if result.get("restart"):  # a sticky CUDA error: the next case gets a fresh process
                self.pool.drop(key).kill()  # idle, and its CUDA teardown may hang
        except WorkerTimeout:
            dropped = self.pool.drop(key)
            stack = dropped.dump_stack() if dropped is not None else ""
            if dropped is not None:
                dropped.kill()
            result = self._failure(
                STATUS_TIMEOUT,
                f"case did not finish within its timeout of {timeout:g} s; the {self._what(task)} was killed"
                + (f"; its last output:\n{stack}" if stack else ""),
            )
        except WorkerDied as e:
            dropped = self.pool.drop(key) or worker
            reason = None
            if dropped is not None:
                if dropped.ready is None:  # it never started: the runtime may say why in one line
                    reason = dropped.launcher.start_failure(dropped.stderr_tail())
                dropped.kill()
            result = self._failure(STATUS_FAILED, f"{reason}; {e}" if reason else str(e))
        result["duration_s"] = result.get("duration_s") or (time.time() - self.in_flight_started)
        self.record(task, result)

    def _exchange(self, worker: Worker, task: Task, timeout: float) -> dict[str, Any]:
        """Send ``task`` to ``worker`` and wait for its result within ``timeout`` seconds."""
        t0 = time.perf_counter()
        worker.mark()
        worker.send(self.message(task))
        reply = worker.receive(timeout)  # "start"
        while reply.get("event") != "result":
            reply = worker.receive(max(0.0, timeout - (time.perf_counter() - t0)))
        return reply

    def _what(self, task: Task) -> str:
        launcher = self.planned[task.stack_index].launcher
        return "worker container" if launcher is not None and launcher.stack.is_image else "worker"

    def _failure(self, status: str, error: str) -> dict[str, Any]:
        return {
            "status": status,
            "error": error,
            "timing": TIMING_NONE,
            "started_at": self.in_flight_started,
            "samples": [],
        }

    def record(self, task: Task, result: dict[str, Any]) -> None:
        """Keep one attempt's result and write it to its run (the attempt is then done)."""
        planned = self.planned[task.stack_index]
        attempt = keep_attempt(planned, task, result, self.in_flight_started)
        self.in_flight = None  # in memory now: an interruption from here on keeps it as it is
        write_attempt(planned, attempt)

    def record_interrupted(self) -> None:
        """Mark the case in flight as interrupted (it is re-run by --resume) and write
        every stack's tables, so the disk holds all that finished."""
        self.pool.kill_all()
        task = self.in_flight
        if task is not None:
            self.record(task, self._failure(STATUS_INTERRUPTED, "the run was interrupted while this case ran"))
        for p in self.planned:
            p.writer.compact()
