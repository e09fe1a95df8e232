"""``docker:IMAGE`` and ``podman:IMAGE``: a stack that is an image, each worker one container.

A worker is ``docker run --interactive IMAGE python3 -m collector.worker``: one container
per worker process, up for all of that process's cases and handed them over its stdin,
as a host interpreter's worker is. A container's start is paid once per worker process,
while the stack is probed or while the previous process measures (the runner starts
workers ahead of their turn), never inside a case; a container per case would pay it in
every case, and a container per stack would share one process between what must be
independent replicates.

The checkout is mounted read-only at ``/imagebench`` (and ``--data-dir`` read-only at its
own path); the image is never pulled unless ``--pull`` is given (``--pull=never`` on every
``run``). Default flags: the GPUs (``--gpus=all``; podman: ``--device=nvidia.com/gpu=all``,
its CDI name) unless ``--device cpu``, ``--ipc=host`` (DataLoader workers and NCCL share
memory through it) and ``--network=none``. A ``--runtime-arg`` of the same name replaces a
default (``--gpus=device=1``, ``--network=host``, ``--ipc=private``), ``--shm-size``
replaces ``--ipc=host`` (the two conflict), any other is added. Variables reach the
container by name (``--env=NAME``, the value from the client's environment), so no value
appears on a command line.

Each container is named, labelled ``imagebench.worker`` and removed by the collector
when its worker ends, after its state was read: ``State.OOMKilled`` tells the
out-of-memory killer from other deaths.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
from typing import Any

from collector.stacks.base import (
    CHECKOUT_MOUNT,
    PACKAGE_ROOT,
    PULL_TIMEOUT_S,
    Launcher,
    Stack,
    StackError,
    find_runtime,
    last_line,
    merge_flags,
    passed_environment,
    run_runtime,
    split_flag,
)

DEFAULT_INTERPRETER = "python3"
GPU_FLAGS = {"docker": "--gpus=all", "podman": "--device=nvidia.com/gpu=all"}
REPLACES = {"--shm-size": ("--ipc",)}
NO_GPU_RUNTIME = re.compile(
    r"could not select device driver|nvidia-container-cli|unknown or invalid runtime name: nvidia"
    r"|unresolvable CDI devices|setting up CDI devices|CDI device injection", re.I)
NO_DAEMON = re.compile(r"Cannot connect to the (Docker|Podman) daemon|Is the docker daemon running|"
                       r"unable to connect to Podman|error during connect", re.I)
NO_IMAGE = re.compile(r"no such image|image not known|not found locally|manifest unknown", re.I)
NO_INTERPRETER = re.compile(r"executable file not found|no such file or directory: OCI", re.I)


def repository_tag(image: str) -> str:
    """``repository:tag`` of an image reference (``:latest`` when it names none)."""
    name, at, digest = image.partition("@")
    if ":" in name.rsplit("/", 1)[-1]:
        return name
    if at:
        return f"{name}@{digest[:19]}"  # sha256: and twelve hex digits
    return f"{name}:latest"


class DockerLauncher(Launcher):
    """Docker and podman, which take the same commands and flags (but for the GPUs' name)."""

    what = "worker container"
    removes_workers = True

    def __init__(self, stack: Stack, **kwargs: Any) -> None:
        super().__init__(stack, **kwargs)
        self.kind = stack.kind
        self.image = stack.target
        self.interpreter = stack.interpreter or DEFAULT_INTERPRETER
        self._path: str | None = None
        self._inspected: dict[str, Any] = {}
        self._version = ""

    # -- before the first worker ---------------------------------------------------------
    def check(self) -> None:
        self._path = find_runtime(self.kind, self.stack)
        for path in filter(None, (PACKAGE_ROOT, self.data_dir)):
            if ":" in path:
                raise StackError(f"--stack {self.stack.spec}: cannot mount {path} into a container (a ':' in the path)")
        if self.pull:
            done = run_runtime([self._path, "pull", self.image], self.stack, timeout=PULL_TIMEOUT_S)
            if done.returncode != 0:
                raise StackError(f"--stack {self.stack.spec}: {self.kind} pull {self.image} failed: "
                                 f"{last_line(done.stderr or done.stdout)}")
        self._inspected = self._inspect_image()
        version = run_runtime([self._path, "--version"], self.stack)
        self._version = version.stdout.strip() if version.returncode == 0 else ""

    def _inspect_image(self) -> dict[str, Any]:
        done = run_runtime([self._binary(), "image", "inspect", self.image], self.stack)
        text = done.stderr or done.stdout
        if done.returncode != 0:
            line = last_line(text)
            if NO_DAEMON.search(text):
                raise StackError(f"--stack {self.stack.spec}: the {self.kind} daemon does not answer ({line})")
            if NO_IMAGE.search(text):
                raise StackError(f"--stack {self.stack.spec}: the image is not on this host ({line}); "
                                 f"pull it first ({self.kind} pull {self.image}) or add --pull")
            raise StackError(f"--stack {self.stack.spec}: {self.kind} image inspect {self.image} failed: {line}")
        try:
            found = json.loads(done.stdout)
            return dict(found[0])
        except (ValueError, TypeError, IndexError, KeyError):
            raise StackError(f"--stack {self.stack.spec}: {self.kind} image inspect {self.image} "
                             "printed no image description") from None

    def identity(self) -> list[tuple[str, str, str]]:
        info = self._inspected
        digests = info.get("RepoDigests") or []
        rows = [
            ("container", "runtime", self.kind),
            ("container", "runtime_version", self._version),
            ("container", "image", self.image),
            ("container", "image_id", str(info.get("Id") or "")),
            ("container", "image_digest", " ".join(map(str, digests))),
            ("container", "image_tags", " ".join(map(str, info.get("RepoTags") or []))),
            ("container", "image_created", str(info.get("Created") or "")),
            ("container", "image_size_bytes", str(info.get("Size") or "")),
            ("container", "image_platform", "/".join(str(info[k]) for k in ("Os", "Architecture") if info.get(k))),
            ("container", "run_flags", shlex.join(self._argv("<worker>", []))),
        ]
        return [r for r in rows if r[2]]

    def default_label(self) -> str:
        return repository_tag(self.image)

    def image_name(self) -> str:
        return self.image

    # -- a worker ---------------------------------------------------------------------------
    def flags(self) -> list[str]:
        """The runtime flags of every worker's ``run``: the defaults, as overridden."""
        given = list(self.stack.runtime_args)
        defaults = ["--ipc=host", "--network=none"]
        kept: list[str] = []
        if self.device != "cpu":
            gpu = GPU_FLAGS.get(self.kind, GPU_FLAGS["docker"])
            if self.kind == "podman":  # another --device adds a device; only a GPU one replaces the GPUs
                gpus_given = any(a.startswith("--device=nvidia.com/gpu") or split_flag(a) == "--gpus" for a in given)
                kept = [] if gpus_given else [gpu]
            else:
                defaults.insert(0, gpu)
        return kept + merge_flags(defaults, given, REPLACES)

    def mounts(self) -> list[str]:
        out = [f"--volume={PACKAGE_ROOT}:{CHECKOUT_MOUNT}:ro"]
        if self.data_dir:
            out.append(f"--volume={self.data_dir}:{self.data_dir}:ro")
        return out

    def _binary(self) -> str:
        return self._path or self.kind

    def _argv(self, name: str, env_names: list[str]) -> list[str]:
        return [
            self._binary(), "run", "--interactive", f"--name={name}", "--label=imagebench.worker=1", "--init",
            "--pull=never", *self.flags(), *self.mounts(), f"--workdir={CHECKOUT_MOUNT}",
            *[f"--env={k}" for k in env_names], self.image, self.interpreter, "-m", "collector.worker",
        ]

    def command(self, env: dict[str, str], name: str) -> tuple[list[str], dict[str, str]]:
        inner = {"PYTHONPATH": CHECKOUT_MOUNT, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                 **passed_environment(), **env}
        return self._argv(name, sorted(inner)), {**os.environ, **inner}

    # -- when something fails ----------------------------------------------------------------
    def start_failure(self, log: str) -> str | None:
        line = next((ln.strip() for ln in log.splitlines()
                     if NO_GPU_RUNTIME.search(ln) or NO_DAEMON.search(ln) or NO_INTERPRETER.search(ln)), "")
        if not line:
            return None
        if NO_GPU_RUNTIME.search(line):
            fix = ("generate its CDI spec (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)" if self.kind == "podman"
                   else "install nvidia-container-toolkit and restart the daemon")
            return (f"--stack {self.stack.spec}: {self.kind} cannot give the container a GPU ({line}); {fix}, "
                    "or measure the CPU with --device cpu")
        if NO_DAEMON.search(line):
            return f"--stack {self.stack.spec}: the {self.kind} daemon does not answer ({line})"
        return (f"--stack {self.stack.spec}: the image cannot run {self.interpreter} ({line}); "
                "give the image's Python with --interpreter PATH")

    def exit_reason(self, code: int | None, name: str) -> str | None:
        if code is None:
            return None
        state = self._state(name)
        if state.get("OOMKilled"):
            return ("was killed by the kernel's out-of-memory killer (the container's State.OOMKilled is true: "
                    "the host's memory, or a --memory limit)")
        if code == 125:
            return f"could not be started by {self.kind} (exit code 125)"
        if code in (126, 127):
            return (f"could not run {self.interpreter} in the image (exit code {code}); "
                    "give the image's Python with --interpreter PATH")
        if code > 128:
            return f"ended when its process was killed by signal {_signal_name(code - 128)} (exit code {code})"
        if code < 0:
            return f"lost its {self.kind} client, killed by signal {_signal_name(-code)}"
        return f"exited with code {code}"

    def _state(self, name: str) -> dict[str, Any]:
        try:
            done = run_runtime([self._binary(), "container", "inspect", name], self.stack)
            return dict(json.loads(done.stdout)[0].get("State") or {}) if done.returncode == 0 else {}
        except (StackError, ValueError, TypeError, IndexError, KeyError, AttributeError):
            return {}

    def _remove(self, name: str) -> None:
        try:
            run_runtime([self._binary(), "rm", "--force", name], self.stack)
        except StackError:
            pass  # a daemon that stopped answering: the container is left, named and labelled


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
