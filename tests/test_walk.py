"""The archive's path is taken in few places: the walk of ``runs_dir`` from ``reporter build``.

``benchmarks/walk.py`` traces every call of the project that receives the archive's path
(its docstring defines a step, a stay and a return); the build of the golden archive must
enter at most 10 modules with it and return to a module at most 12 times.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MAX_MODULES = 10
MAX_RETURNS = 12


def test_the_archive_path_enters_few_modules_and_returns_rarely(tmp_path):
    out = subprocess.run(  # in a folder of its own: no imagebench.toml, the default chain of comparisons
        [sys.executable, str(ROOT / "benchmarks" / "walk.py"), "--runs", str(ROOT / "tests" / "data" / "golden_runs"),
         "--no-mkdocs"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    total = out.stdout.split("runs_dir itself:")[1]
    figures = {k: int(v) for k, v in re.findall(r"^  (steps|modules entered|stays|returns): (\d+)$", total, re.M)}
    assert figures["steps"] > 0, out.stdout
    assert figures["modules entered"] <= MAX_MODULES, out.stdout
    assert figures["returns"] <= MAX_RETURNS, out.stdout
