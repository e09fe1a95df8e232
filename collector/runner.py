"""Runs a suite: worker processes, rotated case order, isolation, timeouts, resume.

The parent never imports torch. It starts one worker process per (stack, process index)
under the stack's interpreter, sends it cases one at a time and writes each finished
case to the run folder at once. A worker that crashes or hangs costs one case (recorded
as ``failed`` or ``timeout``, with the signal and the worker's last output, its Python
stack included); the next case gets a fresh worker. Workers run cases one at a time, so
each has the machine to itself, and die with the parent. They are started together before
the first case (their imports overlap) and wait idle, holding no GPU context, for their turn.

SIGINT or SIGTERM kills the worker in flight, records its case as ``interrupted``,
writes what finished and marks the run interrupted (``execute`` raises ``Interrupted``;
the CLI exits 130 or 143). After SIGKILL the folder holds every finished case (each
write is atomic). ``--resume`` runs what is missing under the same run id.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import os
import queue
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from collector import __version__
from runformat.archive import ArchiveError, RunWriter
from collector.lock import LockHeld, RunLock
from runformat.redact import redact_entry
from runformat.schema import (
    CASES_FILE,
    ENVIRONMENT_FILE,
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    SAMPLES_FILE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_OK,
    STATUS_TIMEOUT,
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
from collector.suites import SUITES, default_suite
from collector.timing import TIMING_METHOD, TimingPolicy
from collector.worker import FORK_SERVER_ENV, PARENT_PID_ENV, PRELOAD_ENV, PROTOCOL_PREFIX
from collector.workloads import Case, DeviceInfo, registry
from collector.workloads._models import packages_for

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
PROBE_TIMEOUT_S = 300.0
PRESTART_MAX = 8  # workers started ahead of their turn (each holds torch and its model libraries)


class RunError(Exception):
    """Bad input or an impossible run; the message names the flag or file."""


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(frozen=True)
class Stack:
    """A software stack to measure: an interpreter and the label its runs are filed under."""

    python: str
    label: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # variables set for this stack's workers only

    def environ(self) -> dict[str, str] | None:
        """The environment of this stack's workers (None: the collector's own)."""
        return {**os.environ, **dict(self.env)} if self.env else None


@dataclass
class RunOptions:
    """What ``collector run`` was asked to do."""

    out: Path
    stacks: list[Stack]
    suite: str | None = None
    only: list[str] = field(default_factory=list)
    processes: int = 3
    device: str = "auto"
    image: str | None = None
    time_budget: float | None = None
    case_timeout: float | None = None
    data_dir: str | None = None
    interleave: bool = False
    argv: list[str] = field(default_factory=list)
    adaptive_s: float | None = None  # seconds for adaptive replication after the planned processes
    max_processes: int | None = None  # adaptive replication's cap per case (default 2 x processes)
    run_entries: dict[str, str] = field(default_factory=dict)  # extra run-section rows (the doctor's verdict)


@dataclass
class Planned:
    """A stack with its probe results, its run writer and the records written so far."""

    stack: Stack
    device: DeviceInfo
    fingerprint: list[EnvironmentEntry]
    writer: RunWriter
    cases: list[Case]
    records: list[CaseRecord] = field(default_factory=list)
    samples: list[SampleRecord] = field(default_factory=list)
    run_entries: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    stack_index: int
    process: int
    case: Case
    # With --interleave: the stack's place in its round (0 = first); None otherwise.
    position: int | None = None


class WorkerDied(Exception):
    """The worker process exited; the message holds how and the end of its stderr."""


class WorkerTimeout(Exception):
    """No answer from the worker within the case's timeout."""


# How often a wait for the worker checks that it is still alive: a worker that dies while
# a process it forked (a DataLoader worker) still holds its stdout open sends no EOF.
POLL_S = 0.5
# After a timeout, how long the worker gets to print its Python stack (SIGUSR1).
STACK_DUMP_S = 1.0


class Worker:
    """One worker process and the thread that reads its protocol lines."""

    def __init__(self, python: str, log_path: Path, env: dict[str, str] | None = None, preload: tuple[str, ...] = ()) -> None:
        self.log_path = log_path
        self.started = time.monotonic()
        self.ready: dict[str, Any] | None = None  # the worker's "ready" message, once received
        self.ready_at: float | None = None  # when it arrived, or its "prepared" (monotonic)
        self.preparing = False  # a ``prepare`` was sent; ready only once it is answered
        self._log = open(log_path, "ab")
        self._mark = 0
        child_env = dict(os.environ if env is None else env)
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, child_env.get("PYTHONPATH")) if p)
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        child_env[PARENT_PID_ENV] = str(os.getpid())  # the worker dies with this process
        child_env[PRELOAD_ENV] = ",".join(preload)
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "collector.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env=child_env,
                start_new_session=True,  # Ctrl-C reaches the parent only; it stops the worker
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as e:
            self._log.close()
            raise RunError(f"cannot start worker with --python {python}: {e.strerror or e}") from e
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                if line.startswith(PROTOCOL_PREFIX):
                    try:
                        message = json.loads(line[len(PROTOCOL_PREFIX):])
                    except json.JSONDecodeError:
                        continue
                    if isinstance(message, dict) and message.get("event") == ("prepared" if self.preparing else "ready"):
                        self.ready_at = time.monotonic()  # a spare may be waited for long after
                    self._messages.put(message)
        except (OSError, ValueError):
            pass  # the pipe was closed under us by kill()
        self._messages.put(None)

    def wait_ready(self, timeout: float) -> None:
        """Wait for the worker's ``ready`` (torch imported); raise ``WorkerDied`` if it cannot."""
        if self.ready is not None:
            return
        try:
            reply = self.receive(timeout)
        except WorkerTimeout:
            raise WorkerDied(f"worker did not start within {timeout:g} s (importing torch)") from None
        if reply.get("event") != "ready":
            raise WorkerDied(f"worker sent {reply.get('event')!r} before it was ready")
        if reply.get("error"):
            raise WorkerDied(str(reply["error"]))
        if self.preparing:
            try:
                prepared = self.receive(timeout)
            except WorkerTimeout:
                raise WorkerDied(f"worker did not import its cases' packages within {timeout:g} s") from None
            if prepared.get("event") != "prepared" or prepared.get("error"):
                raise WorkerDied(f"worker could not prepare for its cases: {prepared.get('error') or prepared.get('event')!r}")
            reply = {**reply, **{k: v for k, v in prepared.items() if k != "event"}}
        self.ready = reply

    def prepare(self, preload: tuple[str, ...], fork_server: bool) -> None:
        """Ask a worker started before its cases were planned to get ready for them: start
        the fork server if its cases fork, and import the packages they build with. The
        command waits in the pipe while the worker still imports torch."""
        self.preparing = True
        self.send({"cmd": "prepare", "preload": list(preload), "fork_server": fork_server})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise WorkerDied(self.describe_exit()) from None

    def receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                message = self._messages.get(timeout=max(0.0, min(POLL_S, left)))
                break
            except queue.Empty:
                pass
            if self.proc.poll() is not None:
                # Dead: give the reader a moment to hand over what the worker wrote last.
                self._reader.join(timeout=1.0)
                try:
                    message = self._messages.get_nowait()
                except queue.Empty:
                    message = None
                break
            if left <= 0:
                raise WorkerTimeout()
        if message is None:
            raise WorkerDied(self.describe_exit())
        return message

    def mark(self) -> None:
        """Start a new case: stderr written from here on is this case's."""
        self._log.flush()
        try:
            self._mark = self.log_path.stat().st_size
        except OSError:
            self._mark = 0

    def describe_exit(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"was killed by signal {_signal_name(-code)}"
            if -code == signal.SIGKILL:
                how += " (from outside the collector: often the kernel's out-of-memory killer)"
        else:
            how = f"exited with code {code}"
        tail = self.stderr_tail()
        return f"worker process {how}" + (f"; its last output:\n{tail}" if tail else "")

    def stderr_tail(self, limit: int = 3000) -> str:
        """The end of what the worker wrote to stderr since the current case began."""
        try:
            self._log.flush()
        except (OSError, ValueError):
            pass
        try:
            with open(self.log_path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(self._mark, size - limit))
                data = f.read()
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace").strip()

    def dump_stack(self) -> str:
        """Ask a hung worker for its Python stack (faulthandler on SIGUSR1); return the output."""
        if self.proc.poll() is None and hasattr(signal, "SIGUSR1"):
            try:
                self.proc.send_signal(signal.SIGUSR1)
            except OSError:
                return self.stderr_tail()
            time.sleep(STACK_DUMP_S)
        return self.stderr_tail()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    self.proc.kill()
                except OSError:
                    pass
        elif self._reader.is_alive():
            # The worker is gone but something it forked still holds its stdout open: a
            # live member keeps the process group (and its id) from being reused.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except (OSError, ValueError):
                pass
        self._log.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "exit"})
                self.proc.wait(timeout=30)
            except (WorkerDied, subprocess.TimeoutExpired):
                pass
        self.kill()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"{number}"


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


def probe(stack: Stack, options: RunOptions, log_path: Path) -> tuple[DeviceInfo, list[EnvironmentEntry]]:
    """Ask the stack's interpreter for device facts and the fingerprint."""
    worker = Worker(stack.python, log_path, env=stack.environ())
    try:
        worker.wait_ready(PROBE_TIMEOUT_S)
        worker.send({"cmd": "probe", "device": options.device, "image": options.image, "argv": options.argv})
        reply = worker.receive(PROBE_TIMEOUT_S)
    except WorkerDied as e:
        worker.kill()
        raise RunError(f"the stack at --python {stack.python} could not start a worker: {e}; it needs torch and pyarrow") from None
    except WorkerTimeout:
        worker.kill()
        raise RunError(f"the stack at --python {stack.python} did not answer the probe in {PROBE_TIMEOUT_S:.0f} s") from None
    except BaseException:  # interrupted: stop the worker now rather than wait for it
        worker.kill()
        raise
    worker.close()
    if reply.get("event") == "error":
        error = str(reply["error"])
        if error.startswith("ValueError: "):
            raise RunError(error[len("ValueError: "):])
        raise RunError(f"the stack at --python {stack.python} could not start a worker ({error}); it needs torch and pyarrow")
    device = DeviceInfo.from_json(reply["device"])
    entries = [EnvironmentEntry(*row) for row in reply["fingerprint"]]
    return device, entries


def default_label(device: DeviceInfo, fingerprint: list[EnvironmentEntry]) -> str:
    """``torch-<version>-<cuda or cpu>`` from the fingerprint, when no --label is given."""
    values = {(e.section, e.key): e.value for e in fingerprint}
    version = values.get(("torch", "version"), device.torch_version or "unknown")
    cuda = values.get(("cuda", "runtime"), "")
    base = version.split("+")[0]
    suffix = f"cu{cuda.replace('.', '')}" if cuda and device.is_cuda else "cpu"
    return f"torch-{base}-{suffix}"


class Progress:
    """Progress on stderr: a rich bar when rich is installed, plain lines otherwise."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self._bar: Any = None
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            console = Console(stderr=True)
            self._bar = Bar(
                TextColumn("[bold]{task.description}", justify="left"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            )
            self._task = self._bar.add_task("starting", total=total)
            self._bar.start()
        except ImportError:
            self._bar = None

    def update(self, description: str, advance: int = 0) -> None:
        self.done += advance
        if self._bar is not None:
            self._bar.update(self._task, description=description[:70], advance=advance)
        elif advance:
            elapsed = time.monotonic() - self.start
            print(f"[{self.done}/{self.total} {elapsed:6.1f}s] {description}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


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

    workers: dict[tuple[int, int], Worker]
    log_dir: Path

    @classmethod
    def start(cls, options: RunOptions) -> "EarlyWorkers":
        log_dir = Path(tempfile.mkdtemp(prefix="imagebench-workers-"))
        workers: dict[tuple[int, int], Worker] = {}
        keys = [(s, p) for p in range(options.processes) for s in range(len(options.stacks))]
        preload, forking = speculated(options)
        for s, p in keys[:PRESTART_MAX]:
            stack = options.stacks[s]
            env = stack.environ()
            if p in forking:
                env = {**(os.environ if env is None else env), FORK_SERVER_ENV: "1"}
            try:
                workers[(s, p)] = Worker(stack.python, log_dir / f"stack{s}-{p}.log", env=env, preload=preload)
            except RunError:
                break  # an interpreter that does not start: the probe says so
        return cls(workers, log_dir)

    def kill(self) -> None:
        for worker in self.workers.values():
            worker.kill()
        self.workers.clear()
        shutil.rmtree(self.log_dir, ignore_errors=True)


def forks_in(workload: str, process: int) -> bool:
    """True when ``workload`` forks children from the fork server in worker process ``process``."""
    w = registry()[workload]
    return w.fork_server and (w.max_processes is None or process < w.max_processes)


class Runner:
    """Executes a plan of tasks across stacks and processes, writing as it goes."""

    def __init__(self, options: RunOptions, planned: list[Planned], progress: bool = True, early: EarlyWorkers | None = None) -> None:
        self.options = options
        self.planned = planned
        self.workers: dict[tuple[int, int], Worker] = {}
        # Workers started ahead of their turn (``prestart``), idle until their first case.
        self.spares: dict[tuple[int, int], Worker] = {}
        # Workers started while the stacks were probed, not yet told what their cases need.
        self.early = early.workers if early is not None else {}
        self.progress_enabled = progress
        self.in_flight: Task | None = None
        self.in_flight_started = 0.0
        self.worker_start_s = 0.0  # the longest a worker took to start (adaptive replication plans with it)
        # Worker stderr goes to scratch logs outside the archive; a failure's record
        # carries the end of its log, and the logs go when the run ends.
        self.log_dir = early.log_dir if early is not None else Path(tempfile.mkdtemp(prefix="imagebench-workers-"))

    # -- planning --------------------------------------------------------------------
    def tasks(self, done: set[tuple[int, str, int]]) -> list[Task]:
        """Every (stack, process, case) still to run, in execution order."""
        tasks = []
        n = self.options.processes
        per_stack = []
        for s, p in enumerate(self.planned):
            stack_tasks = []
            for proc in range(n):
                for case in rotated(p.cases, proc, n):
                    limit = registry()[case.workload].max_processes
                    if limit is not None and proc >= limit:
                        continue
                    if (s, case.case_id, proc) not in done:
                        stack_tasks.append(Task(s, proc, case))
            per_stack.append(stack_tasks)
        if self.options.interleave and len(per_stack) > 1:
            # Round p is process p of every stack, case by case: A B in even rounds, B A in
            # odd ones, so machine drift falls on every stack alike and an order effect
            # (the second of a pair runs warmer) cancels over rounds in the paired analysis.
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
        else:
            for stack_tasks in per_stack:
                tasks += stack_tasks
        return tasks

    # -- executing -------------------------------------------------------------------
    def worker_for(self, task: Task) -> Worker:
        key = (task.stack_index, task.process)
        worker = self.workers.get(key)
        if worker is not None and worker.proc.poll() is None:
            return worker
        # A new process index for this stack: the previous worker of the stack is done.
        for other in [k for k in self.workers if k[0] == task.stack_index and k != key]:
            self.workers.pop(other).close()
        worker = self.spares.pop(key, None) or self.start_worker(key)
        self.workers[key] = worker
        worker.wait_ready(PROBE_TIMEOUT_S)  # importing torch is not part of any case's time
        self.worker_start_s = max(self.worker_start_s, (worker.ready_at or time.monotonic()) - worker.started)
        return worker

    def start_worker(self, key: tuple[int, int]) -> Worker:
        """A new worker process for (stack, process index), importing what its cases build with."""
        planned = self.planned[key[0]]
        log = self.log_dir / f"{planned.writer.label}-{key[1]}.log"
        preload = tuple(sorted({m for c in planned.cases for m in packages_for(c.params)}))
        fork_server = any(forks_in(c.workload, key[1]) for c in planned.cases)
        early = self.early.pop(key, None)
        if early is not None:
            try:
                early.prepare(preload, fork_server)
                return early
            except WorkerDied:
                early.kill()  # died while the stack was probed: start another, which reports why
        env = planned.stack.environ()
        if fork_server:
            env = {**(os.environ if env is None else env), FORK_SERVER_ENV: "1"}
        return Worker(planned.stack.python, log, env=env, preload=preload)

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

    def run(self, tasks: list[Task]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)  # again for adaptive replication's rounds
        progress = Progress(len(tasks), enabled=self.progress_enabled)
        try:
            self.prestart(tasks)
            for task in tasks:
                planned = self.planned[task.stack_index]
                label = planned.writer.label
                prefix = f"{label} p{task.process} " if len(self.planned) > 1 else f"p{task.process} "
                progress.update(prefix + task.case.case_id)
                self.run_task(task)
                progress.update(prefix + task.case.case_id, advance=1)
        except BaseException:
            # Interrupted (or the disk failed): stop every worker at once, never wait
            # for a case in flight to finish.
            self.kill_workers()
            raise
        finally:
            progress.stop()
            for worker in self.workers.values():
                worker.close()
            self.workers.clear()
            for worker in [*self.spares.values(), *self.early.values()]:  # for tasks that never ran
                worker.kill()
            self.spares.clear()
            self.early.clear()
            shutil.rmtree(self.log_dir, ignore_errors=True)

    # -- adaptive replication -----------------------------------------------------------
    def widths(self, stack_index: int) -> dict[str, tuple[float, int, float]]:
        """Per case of a stack: (relative CI half-width of its main metric, processes, mean
        seconds an attempt took), for cases recorded ok in every process so far."""
        from collector.replication import compute_rel_half_width

        planned = self.planned[stack_index]
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

    def replicate(self, budget_s: float) -> None:
        """Add processes to the cases whose CIs are widest, within ``budget_s`` seconds.

        Each round starts one more worker process per stack and runs in it the cases of
        the wider half (CI half-width above the median of all cases), widest first, as
        many as the time left allows (an attempt is expected to take as long as its
        earlier ones did), up to ``max_processes`` per case. Interleaved stacks get the
        same cases in the same round, so pairs by round stay whole. What was added is
        recorded in the run section (``replication``).
        """
        start = time.monotonic()
        cap = self.options.max_processes or 2 * self.options.processes
        added: dict[str, int] = {}
        rounds = 0
        by_id = [{c.case_id: c for c in p.cases} for p in self.planned]
        while True:
            # A round starts a fresh worker per stack (a new process is the new replicate).
            left = budget_s - (time.monotonic() - start) - self.worker_start_s * len(self.planned)
            widths = self.widths(0)
            eligible = [
                (w, cid, n, d) for cid, (w, n, d) in widths.items()
                if n < cap and cid in by_id[0] and registry()[by_id[0][cid].workload].max_processes is None
                and all(cid in b for b in by_id)
            ]
            if not eligible or left <= 0:
                break
            # The wider half: above the median width of every case measured (capped included).
            cut = statistics.median(w for w, _, _ in widths.values())
            chosen, spend = [], 0.0
            for w, cid, n, d in sorted(eligible, key=lambda e: -e[0]):
                cost = d * len(self.planned)
                if not w > cut:
                    break
                if spend + cost > left:
                    continue
                chosen.append((cid, n))
                spend += cost
            if not chosen:
                break
            rounds += 1
            tasks = []
            for cid, n in chosen:
                for s in range(len(self.planned)) if rounds % 2 else reversed(range(len(self.planned))):
                    tasks.append(Task(s, n, by_id[s][cid]))
                added[cid] = added.get(cid, 0) + 1
            # One new process index per round: order by process so each runs in one worker.
            tasks.sort(key=lambda t: (t.process, t.stack_index))
            self.run(tasks)
        entry = json.dumps({"budget_s": budget_s, "spent_s": round(time.monotonic() - start, 1), "cap": cap,
                            "rounds": rounds, "added": dict(sorted(added.items()))}, sort_keys=True)
        for p in self.planned:
            p.run_entries["replication"] = entry

    def kill_workers(self) -> None:
        for key in list(self.workers):
            self.workers.pop(key).kill()
        for key in list(self.spares):
            self.spares.pop(key).kill()
        for key in list(self.early):
            self.early.pop(key).kill()

    def case_timeout(self, case: Case) -> float:
        if self.options.case_timeout is not None:
            return self.options.case_timeout
        suite = SUITES[self.suite_name()]
        return registry()[case.workload].timeout_s * suite.timeout_scale

    def suite_name(self) -> str:
        return self.planned[0].run_entries["suite"]

    def policy(self) -> TimingPolicy:
        return _policy_for(self.suite_name(), self.options)

    def run_task(self, task: Task) -> None:
        planned = self.planned[task.stack_index]
        case = task.case
        message = {
            "cmd": "run",
            "case_id": case.case_id,
            "workload": case.workload,
            "params": dict(case.params),
            "suite": self.suite_name(),
            "policy": self.policy().__dict__,
            "process": task.process,
            "processes": self.options.processes,
            "device": planned.device.to_json(),
            "data_dir": self.options.data_dir,
        }
        self.in_flight = task
        self.in_flight_started = time.time()
        timeout = self.case_timeout(case)
        key = (task.stack_index, task.process)
        try:
            worker = self.worker_for(task)
            self.in_flight_started = time.time()
            t0 = time.perf_counter()
            worker.mark()
            worker.send(message)
            reply = worker.receive(timeout)  # "start"
            while reply.get("event") != "result":
                reply = worker.receive(max(0.0, timeout - (time.perf_counter() - t0)))
            result = reply
            if result.get("restart"):  # a sticky CUDA error: the next case gets a fresh process
                self.workers.pop(key).kill()  # idle, and its CUDA teardown may hang
        except WorkerTimeout:
            worker = self.workers.pop(key)
            stack = worker.dump_stack()
            worker.kill()
            result = self._failure(
                STATUS_TIMEOUT,
                f"case did not finish within its timeout of {timeout:g} s; the worker was killed"
                + (f"; its last output:\n{stack}" if stack else ""),
            )
        except WorkerDied as e:
            worker = self.workers.pop(key, None)
            if worker is not None:
                worker.kill()
            result = self._failure(STATUS_FAILED, str(e))
        result["duration_s"] = result.get("duration_s") or (time.time() - self.in_flight_started)
        self.record(task, result)

    def _failure(self, status: str, error: str) -> dict[str, Any]:
        return {
            "status": status,
            "error": error,
            "timing": TIMING_NONE,
            "started_at": self.in_flight_started,
            "samples": [],
        }

    def record(self, task: Task, result: dict[str, Any]) -> None:
        """Keep one attempt's result and write the run's tables (the attempt is then done)."""
        planned = self.planned[task.stack_index]
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
            started_at=_number(result.get("started_at"), self.in_flight_started),
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
        self.in_flight = None
        planned.writer.write_attempt([record], samples, gpu_rows)  # appended: the cost stays flat per case

    def record_interrupted(self) -> None:
        """Mark the case in flight as interrupted (it is re-run by --resume) and write
        every stack's tables, so the disk holds all that finished."""
        self.kill_workers()
        task = self.in_flight
        if task is not None:
            self.record(task, self._failure(STATUS_INTERRUPTED, "the run was interrupted while this case ran"))
        for p in self.planned:
            p.writer.compact()


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
    rows = [e for e in planned.fingerprint if e.section != "run"]
    entries = dict(planned.run_entries)
    entries["status"] = status
    if status != RUN_RUNNING:
        entries["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows += [EnvironmentEntry("run", k, v) for k, v in sorted(entries.items())]
    # Redacted where recorded: the fingerprint came from a worker, the run entries from flags.
    return [EnvironmentEntry(e.section, e.key, redact_entry(e.section, e.key, e.value)) for e in rows]


def load_existing(folder: Path) -> tuple[list[EnvironmentEntry], list[CaseRecord], list[SampleRecord]]:
    """Read a run folder's tables back as records (for --resume)."""
    from runformat.archive import read_table

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


def start_run(options: RunOptions, planned: list[Planned] | None = None) -> list[Planned]:
    """Probe every stack, plan its cases and create its run folder.

    Each run is appended to ``planned`` (when given) as soon as its folder exists, so an
    interrupted start still marks what it created.
    """
    from runformat.archive import check_writable

    try:
        check_writable(options.out)
    except ArchiveError as e:
        raise RunError(f"--out: {e}") from None
    probes = []
    for stack in options.stacks:
        with tempfile.TemporaryDirectory(prefix="imagebench-probe-") as tmp:
            device, fingerprint = probe(stack, options, Path(tmp) / "probe.log")
        suite = options.suite or default_suite(device.type)
        cases = plan_cases(suite, device, options.only)
        probes.append((stack, device, fingerprint, suite, cases))
    labels = [s.label or default_label(d, f) for s, d, f, _, _ in probes]
    if len(set(labels)) != len(labels):
        raise RunError(f"two stacks would be recorded under the same label ({', '.join(labels)}); give each a --label")
    planned = [] if planned is None else planned
    interleaved = options.interleave and len(probes) > 1
    # One id shared by the runs of this invocation, so the reporter can pair them.
    group = secrets.token_hex(8) if interleaved else None
    for (stack, device, fingerprint, suite, cases), label in zip(probes, labels):
        # Staged: the folder appears under its run id only with all three files in it.
        writer = RunWriter.create(options.out, label, staged=True)
        run_entries = {
            "run_id": writer.run_id,
            "label": writer.label,
            "suite": suite,
            "processes": str(options.processes),
            "device": options.device,
            "only": json.dumps(options.only),
            "time_budget": "" if options.time_budget is None else str(options.time_budget),
            "case_timeout": "" if options.case_timeout is None else str(options.case_timeout),
            "python": stack.python,
            "interleaved": str(interleaved),
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "cases_planned": str(len(cases)),
            "policy": json.dumps(_policy_for(suite, options).__dict__, sort_keys=True),
            "collector_version": __version__,
            "timing_method": TIMING_METHOD,
        }
        if group:
            run_entries["interleave_group"] = group
        if stack.label and stack.label != writer.label:
            run_entries["label_given"] = stack.label
        if stack.env:
            run_entries["stack_env"] = json.dumps(dict(stack.env), sort_keys=True)
        run_entries.update(options.run_entries)
        p = Planned(stack, device, fingerprint, writer, cases, run_entries=run_entries)
        try:
            writer.write_environment(environment_rows(p, RUN_RUNNING))
            writer.write_cases([], [])
            writer.publish()
        except BaseException:
            writer.discard()
            raise
        planned.append(p)
    return planned


def _policy_for(suite: str, options: RunOptions) -> TimingPolicy:
    """The timing policy a run's cases use: the suite's, with --time-budget applied."""
    policy = SUITES[suite].policy
    if options.time_budget is not None:
        policy = policy.scaled(budget_s=options.time_budget)
    return policy


def resume_run(folder: Path, options: RunOptions) -> tuple[Planned, set[tuple[int, str, int]]]:
    """Reopen a run folder; return it with the (stack, case, process) attempts already done."""
    try:
        writer = RunWriter.reopen(folder)
        env, cases, samples = load_existing(Path(folder))
    except ArchiveError as e:
        raise RunError(f"--resume: {e}; nothing was changed (move a damaged cases or samples file away "
                       "and resume again to measure what it held)") from None
    run = {e.key: e.value for e in env if e.section == "run"}
    # The files checked against each other: an attempt recorded ok whose samples are gone
    # (samples.parquet deleted or cut short) is measured again, not taken as done.
    cases, lost = split_unsampled(cases, samples)
    if lost:
        missing = "missing" if not (Path(folder) / SAMPLES_FILE).exists() else "without them"
        print(f"collector: note: {len(lost)} attempt(s) recorded ok have no samples ({SAMPLES_FILE} {missing}); "
              "they are measured again", file=sys.stderr)
    if run.get("status") == RUN_COMPLETE and not lost:
        raise RunError(f"--resume: run {folder} is already complete; nothing to resume")
    fingerprint = [e for e in env if e.section != "run"]
    options.processes = int(run.get("processes", options.processes))
    options.only = json.loads(run.get("only", "[]"))
    options.device = run.get("device", options.device)
    if run.get("time_budget"):
        options.time_budget = float(run["time_budget"])
    if run.get("case_timeout") and options.case_timeout is None:
        options.case_timeout = float(run["case_timeout"])
    python = run.get("python") or sys.executable
    if not Path(python).exists():
        python = sys.executable
    stack = Stack(python, writer.label)
    with tempfile.TemporaryDirectory(prefix="imagebench-probe-") as tmp:
        device_info, now = probe(stack, options, Path(tmp) / "probe.log")
    changed = _stack_changes(fingerprint, now)
    if changed:
        raise RunError(
            f"--resume: run {folder} was recorded on another stack or machine ({'; '.join(changed)}); "
            "resume it where it started, or start a new run"
        )
    suite = run.get("suite") or default_suite(device_info.type)
    planned_cases = plan_cases(suite, device_info, options.only)
    finished = [c for c in cases if c.status != STATUS_INTERRUPTED]
    done_keys = {(c.case_id, c.process) for c in finished}
    kept_samples = [s for s in samples if (s.case_id, s.process) in done_keys]
    run["suite"] = suite
    run.pop("finished_at", None)
    run["resumed_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    run["resumes"] = str(int(run.get("resumes", "0") or 0) + 1)
    p = Planned(stack, device_info, fingerprint, writer, planned_cases, finished, kept_samples, run_entries=run)
    writer.write_environment(environment_rows(p, RUN_RUNNING))
    writer.write_cases(p.records, p.samples)
    return p, {(0, cid, proc) for cid, proc in done_keys}


# Fingerprint keys that must not change between a run and its resumption: the stack and
# the hardware it measures. Volatile facts (clocks, temperature, the command line) may,
# and so may the host name (a container gets a new one each time it starts).
RESUME_KEYS = (
    ("torch", "version"), ("torch", "git_version"), ("cuda", "runtime"), ("cuda", "cudnn"), ("cuda", "nccl"),
    ("driver", "version"), ("gpu", "count"), ("gpu0", "name"), ("cpu", "model"), ("python", "version"),
)


def _stack_changes(before: list[EnvironmentEntry], now: list[EnvironmentEntry]) -> list[str]:
    """``section.key: old -> new`` for each ``RESUME_KEYS`` fact that differs."""
    a = {(e.section, e.key): e.value for e in before}
    b = {(e.section, e.key): e.value for e in now}
    return [f"{s}.{k}: {a.get((s, k))!r} then, {b.get((s, k))!r} now" for s, k in RESUME_KEYS if a.get((s, k)) != b.get((s, k))]


def finish(planned: list[Planned], status: str) -> None:
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


def execute(
    options: RunOptions,
    resume: Path | None = None,
    progress: bool = True,
    on_start: Callable[[list[Planned]], None] | None = None,
) -> list[Planned]:
    """Run (or resume) and return what was recorded.

    On SIGINT or SIGTERM: stops the workers, records the case in flight as interrupted,
    writes everything finished, marks the run interrupted and raises ``Interrupted``.
    On any other error (a full disk, a stack that stops starting) the run is marked
    interrupted too, as far as the disk allows, and the error propagates.
    """
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in signals}

    def on_signal(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    for s in signals:
        signal.signal(s, on_signal)
    planned: list[Planned] = []
    runner: Runner | None = None
    early: EarlyWorkers | None = None
    locks: list[RunLock] = []
    started = False
    try:
        if resume is None:
            early = EarlyWorkers.start(options)
        if resume is not None:
            _lock(resume, locks)  # before the run's files are read: one writer per run
            p, done = resume_run(resume, options)
            planned.append(p)
        else:
            start_run(options, planned)
            for p in planned:
                _lock(p.writer.folder, locks)
            done = set()
        if on_start:
            started = True
            on_start(planned)
        runner = Runner(options, planned, progress=progress, early=early)
        early = None  # the runner's now
        runner.run(runner.tasks(done))
        if options.adaptive_s:
            runner.replicate(options.adaptive_s)
        finish(planned, RUN_COMPLETE)
        return planned
    except BaseException as e:
        # A second Ctrl-C must not cut the bookkeeping short: ignore signals until done.
        for s in signals:
            signal.signal(s, signal.SIG_IGN)
        if on_start and not started:
            on_start(planned)  # stopped while starting: the caller still learns what exists
        # Each step on its own: a disk too full for the cases may still take the status.
        failures: list[ArchiveError] = []
        for step in ((runner.record_interrupted,) if runner is not None else ()) + (lambda: finish(planned, RUN_INTERRUPTED),):
            try:
                step()
            except ArchiveError as failure:
                failures.append(failure)
        if failures and isinstance(e, Interrupted):
            raise failures[0] from e
        raise  # after a failed write, that first error is the one that says why
    finally:
        if early is not None:  # stopped before the runner took them
            early.kill()
        for lock in locks:
            lock.release()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _lock(folder: Path, locks: list[RunLock]) -> None:
    """Take ``folder``'s lock (appended to ``locks``); a live owner is a ``RunError``."""
    if not (Path(folder) / ENVIRONMENT_FILE).is_file():
        return  # not a run folder: resuming it says so, and nothing is written there
    lock = RunLock(Path(folder))
    try:
        note = lock.acquire()
    except LockHeld as e:
        raise RunError(str(e)) from None
    except OSError as e:
        raise RunError(f"cannot lock run folder {folder}: {e.strerror or e}") from None
    locks.append(lock)
    if note:
        print(f"collector: note: {note}", file=sys.stderr)


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
