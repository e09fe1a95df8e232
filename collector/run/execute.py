"""A whole run: check the stacks, start workers, probe, plan, measure, replicate, finish.

The parent never imports torch. It starts worker processes inside each stack (a host
interpreter, or a container of the image), sends them cases one at a time and writes
each finished case to the run folder at once. SIGINT or SIGTERM kills the worker in
flight, records its case as ``interrupted``, writes what finished and marks the run
interrupted (``Interrupted`` propagates; the CLI exits 130 or 143). After SIGKILL the
folder holds every finished case (each write is atomic); ``--resume`` runs what is
missing under the same run id.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from collector.lock import LockHeld, RunLock
from collector.run.adaptive import replicate
from collector.run.plan import plan_tasks
from collector.run.pool import EarlyWorkers
from collector.run.probe import check_stacks
from collector.run.record import finish
from collector.run.resume import Done, resume_run
from collector.run.schedule import Runner
from collector.run.signals import Interrupted, ignore_signals, interruptible
from collector.run.start import start_run
from collector.run.state import Planned, RunError, RunOptions
from runformat.archive import ArchiveError
from runformat.schema import ENVIRONMENT_FILE, RUN_COMPLETE, RUN_INTERRUPTED


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
    planned: list[Planned] = []
    runner: Runner | None = None
    early: EarlyWorkers | None = None
    locks: list[RunLock] = []
    started = False
    with interruptible():
        try:
            if resume is not None:
                _lock(resume, locks)  # before the run's files are read: one writer per run
                p, done = resume_run(resume, options)
                planned.append(p)
            else:
                early, done = _start(options, planned, locks)
            if on_start:
                started = True
                on_start(planned)
            runner = Runner(options, planned, progress=progress, early=early)
            early = None  # the runner's now
            runner.run(plan_tasks(planned, options, done))
            if options.adaptive_s:
                replicate(runner, options.adaptive_s)
            finish(planned, RUN_COMPLETE)
            return planned
        except BaseException as e:
            if on_start and not started:
                on_start(planned)  # stopped while starting: the caller still learns what exists
            _close_interrupted(e, runner, planned)
            raise  # after a failed write, that first error is the one that says why
        finally:
            if early is not None:  # stopped before the runner took them
                early.kill()
            for lock in locks:
                lock.release()


def _start(options: RunOptions, planned: list[Planned], locks: list[RunLock]) -> tuple[EarlyWorkers, Done]:
    """Check the stacks, start their first workers, probe and create the runs (into ``planned``)."""
    launchers = check_stacks(options)  # a runtime or image that is not there: one line, no worker started
    early = EarlyWorkers.start(options, launchers)
    try:
        start_run(options, launchers, planned)
        for p in planned:
            _lock(p.writer.folder, locks)
    except BaseException:
        early.kill()
        raise
    return early, set()


def _close_interrupted(error: BaseException, runner: Runner | None, planned: list[Planned]) -> None:
    """Record the case in flight as interrupted and mark the runs so, each step on its own:
    a disk too full for the cases may still take the status. A second Ctrl-C is ignored."""
    ignore_signals()
    failures: list[ArchiveError] = []
    steps = ((runner.record_interrupted,) if runner is not None else ()) + (lambda: finish(planned, RUN_INTERRUPTED),)
    for step in steps:
        try:
            step()
        except ArchiveError as failure:
            failures.append(failure)
    if failures and isinstance(error, Interrupted):
        raise failures[0] from error


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
