"""Stacks under test, and where their worker processes run: on this host or inside an image.

``--stack KIND:TARGET`` names one: ``python:PATH`` (an interpreter here; ``--python PATH``
is the same), ``docker:IMAGE``, ``podman:IMAGE`` or ``apptainer:FILE.sif``. Each kind is
one module with a ``Launcher`` (``python.py``, ``docker.py`` for docker and podman,
``apptainer.py``); the runner only ever asks a launcher for a worker's command line and
for what its runtime says, so a new kind is one more module and one line here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from collector.stacks.apptainer import ApptainerLauncher
from collector.stacks.base import Launcher, Stack, StackError
from collector.stacks.docker import DockerLauncher
from collector.stacks.python import PythonLauncher

LAUNCHERS: dict[str, type[Launcher]] = {
    "python": PythonLauncher,
    "docker": DockerLauncher,
    "podman": DockerLauncher,
    "apptainer": ApptainerLauncher,
}
KINDS = tuple(LAUNCHERS)

__all__ = ["KINDS", "Launcher", "Stack", "StackError", "launcher_for", "parse_stack"]


def parse_stack(text: str) -> Stack:
    """``KIND:TARGET`` as a ``Stack``; a ``StackError`` names what is wrong with it.

    A ``python:`` target without a ``/`` is looked up on PATH (``python:python3``).
    """
    kind, colon, target = str(text).partition(":")
    if not colon or kind not in LAUNCHERS:
        raise StackError(f"--stack {text!r} is not KIND:TARGET with KIND one of {', '.join(KINDS)}")
    if not target.strip():
        raise StackError(f"--stack {text!r} names no {'interpreter' if kind == 'python' else 'image'}")
    if kind == "python":
        path = target if "/" in target else shutil.which(target) or target
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise StackError(f"--stack {text!r}: {target!r} is not an executable file")
        target = path
    if kind == "apptainer" and not Path(target).is_file():
        raise StackError(f"--stack {text!r}: no such image file")
    return Stack(target=target, kind=kind)


def launcher_for(stack: Stack, *, device: str = "auto", data_dir: str | None = None, pull: bool = False) -> Launcher:
    """The launcher of ``stack`` for one run (``device``: what ``--device`` asked for)."""
    return LAUNCHERS[stack.kind](stack, device=device, data_dir=data_dir, pull=pull)
