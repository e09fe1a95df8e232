"""Shared fixtures: the repository root and a way to run the CLIs as a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def run_cli():
    """Run ``python -m <module> args...`` in a subprocess; returns the CompletedProcess."""

    def run(module: str, *args: str, env: dict[str, str] | None = None, timeout: float = 600, cwd: Path | None = None):
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full_env.get("PYTHONPATH")) if p)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", module, *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=cwd or ROOT,
        )

    return run


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory):
    """The reporter's caches (runs, object-store mirrors) of this test session, in a folder of its own."""
    previous = os.environ.get("IMAGEBENCH_CACHE")
    os.environ["IMAGEBENCH_CACHE"] = str(tmp_path_factory.mktemp("imagebench-cache"))
    yield
    if previous is None:
        os.environ.pop("IMAGEBENCH_CACHE", None)
    else:
        os.environ["IMAGEBENCH_CACHE"] = previous
