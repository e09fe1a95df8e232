"""``python:PATH``: a stack that is an interpreter on this host (a venv, a conda env, the system's).

The worker is that interpreter running ``-m collector.worker`` with this checkout on its
path, in the collector's own environment plus the stack's ``--env``. It dies with the
collector (``PR_SET_PDEATHSIG``, armed by ``IMAGEBENCH_PARENT_PID``).
"""

from __future__ import annotations

import os

from collector.protocol import PARENT_PID_ENV
from collector.stacks.base import PACKAGE_ROOT, Launcher


class PythonLauncher(Launcher):
    kind = "python"

    @property
    def where(self) -> str:
        return f"--python {self.stack.target}"

    def command(self, env: dict[str, str], name: str) -> tuple[list[str], dict[str, str]]:
        child = {**os.environ, **env}
        child["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, child.get("PYTHONPATH")) if p)
        child.setdefault("PYTHONUNBUFFERED", "1")
        child[PARENT_PID_ENV] = str(os.getpid())  # the worker dies with this process
        return [self.stack.target, "-m", "collector.worker"], child
