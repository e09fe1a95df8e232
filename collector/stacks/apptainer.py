"""``apptainer:FILE.sif``: a stack that is an Apptainer (Singularity) image, for clusters without Docker.

A worker is ``apptainer exec --nv FILE.sif python3 -m collector.worker``, one per worker
process as with Docker. ``--nv`` (the host's NVIDIA driver in the container) is a default,
left out with ``--device cpu``; ``--runtime-arg`` adds flags after it (``--nvccli``,
``--contain``). The environment is cleaned (``--cleanenv``) and home is not mounted
(``--no-home``), so the image's own settings are what is measured; variables reach the
container as ``APPTAINERENV_NAME`` (no value on a command line). The checkout is bound
read-only at ``/imagebench``. Apptainer shares the host's network and process ids: the
workers are ordinary processes of this host, killed as such.

The image's identity is its file: SHA-256 of its content, size, and the labels
``apptainer inspect`` reads from it (the build date among them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
from pathlib import Path
from typing import Any

from collector.stacks.base import (
    CHECKOUT_MOUNT,
    PACKAGE_ROOT,
    Launcher,
    Stack,
    StackError,
    find_runtime,
    last_line,
    merge_flags,
    passed_environment,
    run_runtime,
)

DEFAULT_INTERPRETER = "python3"
NO_NV_FILES = re.compile(r"Could not find any nv(idia)? (files|libraries|binaries)", re.I)
NO_INTERPRETER = re.compile(r"executable file not found|no such file or directory", re.I)


class ApptainerLauncher(Launcher):
    kind = "apptainer"
    what = "worker container"

    def __init__(self, stack: Stack, **kwargs: Any) -> None:
        super().__init__(stack, **kwargs)
        self.image = stack.target
        self.interpreter = stack.interpreter or DEFAULT_INTERPRETER
        self._path: str | None = None
        self._facts: list[tuple[str, str, str]] = []

    def check(self) -> None:
        self._path = find_runtime("apptainer", self.stack)
        image = Path(self.image)
        if not image.is_file():
            raise StackError(f"--stack {self.stack.spec}: no such image file")
        version = run_runtime([self._path, "--version"], self.stack)
        if version.returncode != 0:
            raise StackError(f"--stack {self.stack.spec}: apptainer --version failed: {last_line(version.stderr)}")
        inspect = run_runtime([self._path, "inspect", "--json", str(image)], self.stack)
        labels = _labels(inspect.stdout) if inspect.returncode == 0 else {}
        self._facts = [
            ("container", "runtime", "apptainer"),
            ("container", "runtime_version", version.stdout.strip()),
            ("container", "image", self.image),
            ("container", "image_id", f"sha256:{_sha256(image)}"),
            ("container", "image_size_bytes", str(image.stat().st_size)),
            ("container", "image_created", str(labels.get("org.label-schema.build-date")
                                               or labels.get("org.opencontainers.image.created") or "")),
            ("container", "image_labels", json.dumps(labels, sort_keys=True) if labels else ""),
            ("container", "run_flags", shlex.join(self._argv())),
        ]

    def identity(self) -> list[tuple[str, str, str]]:
        return [r for r in self._facts if r[2]]

    def default_label(self) -> str:
        return Path(self.image).name.removesuffix(".sif")

    def image_name(self) -> str:
        return self.image

    def flags(self) -> list[str]:
        defaults = ["--nv"] if self.device != "cpu" else []
        return merge_flags(defaults, self.stack.runtime_args, {})

    def _argv(self) -> list[str]:
        binds = [f"--bind={PACKAGE_ROOT}:{CHECKOUT_MOUNT}:ro"]
        if self.data_dir:
            binds.append(f"--bind={self.data_dir}:{self.data_dir}:ro")
        return [self._path or "apptainer", "exec", *self.flags(), "--cleanenv", "--no-home", *binds,
                f"--pwd={CHECKOUT_MOUNT}", self.image, self.interpreter, "-m", "collector.worker"]

    def command(self, env: dict[str, str], name: str) -> tuple[list[str], dict[str, str]]:
        inner = {"PYTHONPATH": CHECKOUT_MOUNT, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                 **passed_environment(), **env}
        client = {k: v for k, v in os.environ.items() if not k.startswith(("APPTAINERENV_", "SINGULARITYENV_"))}
        client.update({f"APPTAINERENV_{k}": v for k, v in inner.items()})
        return self._argv(), client

    def start_failure(self, log: str) -> str | None:
        line = next((ln.strip() for ln in log.splitlines() if NO_NV_FILES.search(ln)), "")
        if line and "--nv" in self.flags():
            return (f"--stack {self.stack.spec}: apptainer found no NVIDIA driver on this host for --nv ({line}); "
                    "measure the CPU with --device cpu")
        line = next((ln.strip() for ln in log.splitlines() if NO_INTERPRETER.search(ln) and self.interpreter in ln), "")
        if line:
            return (f"--stack {self.stack.spec}: the image cannot run {self.interpreter} ({line}); "
                    "give the image's Python with --interpreter PATH")
        return None

    def exit_reason(self, code: int | None, name: str) -> str | None:
        if code is None:
            return None
        number = -code if code < 0 else code - 128 if code > 128 else 0
        if number == signal.SIGKILL:
            return "was killed by signal SIGKILL (from outside the collector: often the kernel's out-of-memory killer)"
        if number:
            try:
                return f"was killed by signal {signal.Signals(number).name}"
            except ValueError:
                return f"was killed by signal {number}"
        return f"exited with code {code}"


def _labels(text: str) -> dict[str, str]:
    """The labels of ``apptainer inspect --json`` (``data.attributes.labels``)."""
    try:
        labels = json.loads(text)["data"]["attributes"]["labels"]
        return {str(k): str(v) for k, v in dict(labels).items()}
    except (ValueError, TypeError, KeyError):
        return {}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
