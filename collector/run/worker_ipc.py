"""One worker process and its pipe: start it through its stack's launcher, send cases, read answers.

The worker (``collector/worker.py``) runs inside the stack under test: a host interpreter,
or the container a launcher starts (``collector/stacks/``). Either way the parent talks to
it the same way, one JSON object a line on its stdin and stdout, and keeps its stderr (and
the container runtime's) in a log whose end a failed case records.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from collector.protocol import PRELOAD_ENV, PROTOCOL_PREFIX
from collector.run.state import RunError
from collector.stacks import Launcher

_NAMES = itertools.count()
_RUN_TAG = secrets.token_hex(3)  # container names stay unique among collectors sharing a daemon


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

    def __init__(self, launcher: Launcher, log_path: Path, env: dict[str, str] | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        """Start a worker of ``launcher``'s stack; ``env``: variables for it beyond the stack's own."""
        self.launcher = launcher
        self.log_path = log_path
        self.started = time.monotonic()
        self.ready: dict[str, Any] | None = None  # the worker's "ready" message, once received
        self.ready_at: float | None = None  # when it arrived, or its "prepared" (monotonic)
        self.preparing = False  # a ``prepare`` was sent; ready only once it is answered
        # Set once the worker has finished starting (its "ready", or its "prepared" after a
        # ``prepare``) or has exited: from then on it uses no CPU until it is sent a case.
        self._settled = threading.Event()
        self._settle_lock = threading.Lock()
        self.name = f"imagebench-{os.getpid()}-{_RUN_TAG}-{next(_NAMES)}"  # its container's, where there is one
        self._log = open(log_path, "ab")
        self._mark = 0
        worker_env = {**dict(launcher.stack.env), **(env or {}), PRELOAD_ENV: ",".join(preload)}
        argv, popen_env = launcher.command(worker_env, self.name)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env=popen_env,
                start_new_session=True,  # Ctrl-C reaches the parent only; it stops the worker
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as e:
            self._log.close()
            raise RunError(f"cannot start a worker of {launcher.where}: {e.strerror or e}") from e
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
                    with self._settle_lock:
                        if isinstance(message, dict) and message.get("event") == ("prepared" if self.preparing else "ready"):
                            self.ready_at = time.monotonic()  # a spare may be waited for long after
                            self._settled.set()
                    self._messages.put(message)
        except (OSError, ValueError):
            pass  # the pipe was closed under us by kill()
        self._settled.set()  # exited: it takes no more CPU
        self._messages.put(None)

    def wait_settled(self, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until the worker has finished starting (or exited).

        Unlike ``wait_ready`` this reads no message: it is how a run waits for the spares it
        started ahead of their turn before a case is timed, so their imports never run beside
        a measurement. False if the worker was still starting when the time ran out.
        """
        return self._settled.wait(timeout)

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
        with self._settle_lock:
            self.preparing = True
            self._settled.clear()  # busy again: importing the packages its cases build with
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
        how = self.launcher.exit_reason(code, self.name)
        if how is None and code is None:
            how = "stopped answering"
        elif how is None and code < 0:
            how = f"was killed by signal {_signal_name(-code)}"
            if -code == signal.SIGKILL:
                how += " (from outside the collector: often the kernel's out-of-memory killer)"
        elif how is None:
            how = f"exited with code {code}"
        tail = self.stderr_tail()
        return f"{self.launcher.what} {how}" + (f"; its last output:\n{tail}" if tail else "")

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

    def kill(self, wait: bool = True) -> None:
        """Stop the worker now (its process group, and its container, removed before returning
        unless ``wait`` is False)."""
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
        self.launcher.remove(self.name, wait=wait)

    def close(self) -> None:
        """Ask the worker to exit, then clean up; its container is removed in the background."""
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "exit"})
                self.proc.wait(timeout=30)
            except (WorkerDied, subprocess.TimeoutExpired):
                pass
        self.kill(wait=self.proc.poll() is None)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"{number}"
