"""Child processes of the end-to-end workloads: fresh interpreters and forks of the fork server.

Not a workload (the leading underscore keeps it out of the registry), and no torch at
import. The children themselves run ``collector.workloads._children``; this module starts
them and reads their result, and never the other way round.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from collector.protocol import PRELOAD_ENV, RESULT_PREFIX

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def child_env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The worker's environment for a child, with this package importable; ``None`` unsets."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


class ChildFailed(RuntimeError):
    """A child process exited without a result; the message holds how and its last output."""

    def __init__(self, message: str, returncode: int | None) -> None:
        super().__init__(message)
        self.returncode = returncode


def run_child(
    args: Sequence[str], *, env: Mapping[str, str | None] | None = None, timeout: float = 600.0
) -> dict[str, Any]:
    """Run ``python -m collector.workloads._children ARGS`` and return the JSON it reports.

    The child prints one line ``@@imagebench-child {json}`` on stdout; anything else it or a
    library prints is kept only for the error message.
    """
    cmd = [sys.executable, "-m", "collector.workloads._children", *map(str, args)]
    try:
        proc = subprocess.run(
            cmd, env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        raise ChildFailed(f"child {' '.join(map(str, args))} did not finish within {timeout:.0f} s", None) from e
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    how = f"was killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exited with code {proc.returncode}"
    tail = (proc.stderr or proc.stdout or "").strip()[-2000:]
    raise ChildFailed(f"child {' '.join(map(str, args))} {how} without a result; its last output:\n{tail}", proc.returncode)


# Modules the fork server imports before it forks a child: the child then starts with them
# imported (torch._dynamo comes with the first optimizer step: seconds on a GPU host), plus
# the model libraries the worker's cases build with (``IMAGEBENCH_PRELOAD``).
FORK_SERVER_MODULES = ("torch", "torch._dynamo", "collector.workloads._children")


def fork_context(*, start: bool = False) -> Any:
    """The multiprocessing context of this worker's fork server; ``None`` where there is none.

    CUDA cannot be used in a child forked from a process that has initialised it, and a
    fresh interpreter pays the stack's imports again (numerics' child took 9.7 s on an H200
    host for one training step, 4 s of it importing torch and torch._dynamo). A fork server
    is a fresh process that never touches CUDA: it imports those modules once and forks
    each child from there, so a child starts with them imported and initialises CUDA
    itself, as a new interpreter would. ``start=True`` starts the server now, without
    waiting for its imports (the worker does it while it starts, when its cases fork).
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    extra = [m for m in os.environ.get(PRELOAD_ENV, "").split(",") if m]
    mp = multiprocessing.get_context("forkserver")
    mp.set_forkserver_preload([*FORK_SERVER_MODULES, *extra])  # no effect once the server runs
    if start:
        from multiprocessing import forkserver

        forkserver.ensure_running()
    return mp


def run_forked(
    args: Sequence[str], *, env: Mapping[str, str | None] | None = None, timeout: float = 600.0
) -> dict[str, Any]:
    """``run_child(args)`` in a process forked from the fork server (``fork_context``).

    The child sets ``env`` (``None`` unsets) before it touches CUDA, runs the mode and sends
    its result back on a pipe. A workload whose subject is read when the interpreter or its
    CUDA allocator starts (the allocator's ``PYTORCH_CUDA_ALLOC_CONF``) keeps ``run_child``.
    Falls back to ``run_child`` where fork servers do not exist.
    """
    mp = fork_context()
    if mp is None:
        return run_child(args, env=env, timeout=timeout)
    from collector.workloads._children import forked_main

    argv = [str(a) for a in args]
    what = f"child {' '.join(argv)}"
    receive, send = mp.Pipe(duplex=False)
    proc = mp.Process(target=forked_main, args=(argv, dict(env or {}), send), daemon=True)
    proc.start()
    send.close()
    try:
        if not receive.poll(timeout):
            raise ChildFailed(f"{what} did not finish within {timeout:.0f} s", None)
        try:
            error, result = receive.recv()
        except EOFError:  # it died without a word: a signal, or os._exit
            error, result = "", None
        if error is None:
            return result
        proc.join(10)
        code = proc.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        tail = f"; its error:\n{error}" if error else ""
        raise ChildFailed(f"{what} {how} without a result{tail}", code)
    finally:
        receive.close()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join(5)



def free_port() -> int:
    """A TCP port free on this host right now (for torchrun's rendezvous)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
