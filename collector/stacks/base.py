"""What every stack kind shares: the stack as given, its one error type, the launcher's interface.

A ``Launcher`` is one stack's way of starting worker processes for one run: the command
line of a worker (``command``), what must hold before the first one starts (``check``),
what the runtime says about the image (``identity``), and how a failure of the runtime
reads (``start_failure``, ``exit_reason``). Standard library only: the collector's parent
process runs on a host that needs Python and pyarrow, not torch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

# The checkout the workers import the collector from, on the host.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# Where a container sees the checkout (mounted read-only).
CHECKOUT_MOUNT = "/imagebench"
# Seconds a container runtime's command may take before its daemon counts as not answering
# (``IMAGEBENCH_RUNTIME_TIMEOUT`` overrides it); a pull may take far longer.
RUNTIME_TIMEOUT_S = 60.0
PULL_TIMEOUT_S = 3600.0
# Host variables a container's workers get as they are: the collector's own settings
# (extra workloads, torchrun arguments) and the GPUs a scheduler assigned; not those only
# the collector's parent reads (its caches, staging folder, image name, runtime timeout).
PASSED_PREFIXES = ("IMAGEBENCH_",)
PASSED_NAMES = ("CUDA_VISIBLE_DEVICES",)
NOT_PASSED = frozenset({"IMAGEBENCH_PARENT_PID", "IMAGEBENCH_CACHE", "IMAGEBENCH_STAGE", "IMAGEBENCH_IMAGE",
                        "IMAGEBENCH_RUNTIME_TIMEOUT"})


class StackError(Exception):
    """A stack that cannot be measured as given; the message is one line naming the stack."""


@dataclass(frozen=True)
class Stack:
    """A software stack to measure: where its workers run and the label its runs are filed under.

    ``kind`` is ``python`` (``target``: an interpreter on this host), ``docker`` or
    ``podman`` (``target``: an image) or ``apptainer`` (``target``: a ``.sif`` file).
    """

    target: str
    label: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # variables set for this stack's workers only
    kind: str = "python"
    runtime_args: tuple[str, ...] = ()  # flags for the container runtime, after the defaults they replace
    interpreter: str | None = None  # the Python inside an image (default: python3)

    @property
    def spec(self) -> str:
        """The stack as ``--stack`` takes it: ``kind:target``."""
        return f"{self.kind}:{self.target}"

    @property
    def is_image(self) -> bool:
        return self.kind != "python"


class Launcher:
    """How the workers of one stack start, for one run. This base is a host interpreter's
    plumbing shared by every kind; the kinds override what differs."""

    kind = "python"
    what = "worker process"  # how messages name one worker
    removes_workers = False  # True: each worker leaves a container for ``remove`` to delete

    def __init__(self, stack: Stack, *, device: str = "auto", data_dir: str | None = None, pull: bool = False) -> None:
        self.stack = stack
        self.device = device
        self.data_dir = data_dir
        self.pull = pull
        self._removals: list[threading.Thread] = []

    @property
    def where(self) -> str:
        """The stack as messages name it."""
        return f"--stack {self.stack.spec}"

    def check(self) -> None:
        """Raise ``StackError`` unless a worker can start (runtime present, image here)."""

    def identity(self) -> list[tuple[str, str, str]]:
        """Fingerprint rows the runtime knows about the image, from outside it."""
        return []

    def default_label(self) -> str | None:
        """The label the stack's runs are filed under when none is given (None: torch's version)."""
        return None

    def image_name(self) -> str | None:
        """The image name the run records as ``container.image`` (None: ``--image``, if given)."""
        return None

    def command(self, env: dict[str, str], name: str) -> tuple[list[str], dict[str, str]]:
        """The command line that starts one worker and the environment to start it in.

        ``env`` holds the variables the worker itself must see (the collector's and the
        stack's); ``name`` names this worker's container, where there is one.
        """
        raise NotImplementedError

    def start_failure(self, log: str) -> str | None:
        """One line saying why a worker could not start, from what it and the runtime wrote."""
        return None

    def exit_reason(self, code: int | None, name: str) -> str | None:
        """How a worker that ended read to the runtime (``was OOM-killed``), or None."""
        return None

    def remove(self, name: str, *, wait: bool = True) -> None:
        """Delete what a worker left (its container); ``wait=False`` does it in the background."""
        if not self.removes_workers:
            return
        if wait:
            self._remove(name)
            return
        thread = threading.Thread(target=self._remove, args=(name,), daemon=True)
        thread.start()
        self._removals.append(thread)

    def _remove(self, name: str) -> None:
        pass

    def close(self) -> None:
        """Wait for the removals started in the background (at the end of a run)."""
        for thread in self._removals:
            thread.join(timeout=RUNTIME_TIMEOUT_S)
        self._removals.clear()


def runtime_timeout() -> float:
    """``RUNTIME_TIMEOUT_S``, or ``IMAGEBENCH_RUNTIME_TIMEOUT`` seconds when set to a positive number."""
    try:
        value = float(os.environ.get("IMAGEBENCH_RUNTIME_TIMEOUT", ""))
    except ValueError:
        return RUNTIME_TIMEOUT_S
    return value if value > 0 else RUNTIME_TIMEOUT_S


def find_runtime(binary: str, stack: Stack) -> str:
    """The runtime's executable on PATH, or a ``StackError`` naming the stack."""
    path = shutil.which(binary)
    if path is None:
        raise StackError(f"--stack {stack.spec}: {binary} is not installed here (no {binary!r} on PATH)")
    return path


def run_runtime(argv: list[str], stack: Stack, *, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run one runtime command (``docker image inspect ...``); a hang is a ``StackError``."""
    limit = runtime_timeout() if timeout is None else timeout
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=limit, stdin=subprocess.DEVNULL,
                              encoding="utf-8", errors="replace")
    except subprocess.TimeoutExpired:
        shown = " ".join([Path(argv[0]).name, *argv[1:3]])
        raise StackError(f"--stack {stack.spec}: {Path(argv[0]).name} did not answer within {limit:g} s "
                         f"({shown}); is its daemon running?") from None
    except OSError as e:
        raise StackError(f"--stack {stack.spec}: cannot run {argv[0]}: {e.strerror or e}") from None


def last_line(text: str) -> str:
    """The last non-empty line of a runtime's output (its error), for a one-line message."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def passed_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The host variables a container's workers get (``PASSED_PREFIXES``, ``PASSED_NAMES``)."""
    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items()
            if (k.startswith(PASSED_PREFIXES) or k in PASSED_NAMES) and k not in NOT_PASSED}


def split_flag(arg: str) -> str:
    """The name of a runtime flag (``--gpus`` of ``--gpus=device=0``)."""
    return arg.split("=", 1)[0]


def merge_flags(defaults: Iterable[str], given: Iterable[str], replaces: dict[str, tuple[str, ...]]) -> list[str]:
    """The default flags not overridden by ``given``, then ``given`` as it was given.

    A given flag replaces the default of the same name; ``replaces`` names defaults a
    given flag replaces as well (``--shm-size`` replaces ``--ipc=host``, which it
    conflicts with).
    """
    given = list(given)
    names = {split_flag(a) for a in given}
    dropped = set(names)
    for name in names:
        dropped.update(replaces.get(name, ()))
    return [a for a in defaults if split_flag(a) not in dropped] + given
