"""Several stacks on one host: ``--python`` runs the suite under another interpreter, and
``--interleave`` alternates cases between stacks so machine drift falls on both alike."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

from collector import schema as s
from collector.archive import read_table


def make_venv(folder: Path) -> Path:
    """A real second interpreter (its own venv) that sees this environment's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "parent-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


@pytest.fixture(scope="module")
def two_venvs(tmp_path_factory):
    base = tmp_path_factory.mktemp("venvs")
    return make_venv(base / "stack-a"), make_venv(base / "stack-b")


def test_interleaved_runs_of_two_stacks(run_cli, tmp_path, two_venvs):
    a, b = two_venvs
    out = tmp_path / "runs"
    result = run_cli(
        "collector", "run", "--python", str(a), "--label", "stack-a", "--python", str(b), "--label", "stack-b",
        "--interleave", "--suite", "smoke", "--only", "matmul", "--processes", "2", "--out", str(out), timeout=300,
    )
    assert result.returncode == 0, result.stderr
    folders = [Path(line) for line in result.stdout.strip().splitlines()[-2:]]
    assert [f.parent.name for f in folders] == ["stack-a", "stack-b"]
    starts = []
    for folder in folders:
        env, _ = read_table(folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
        rows = {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}
        # each run's fingerprint comes from its own interpreter
        assert rows[("python", "executable")] == str(a if folder.parent.name == "stack-a" else b)
        assert rows[("run", "interleaved")] == "True"
        assert rows[("run", "status")] == "complete"
        cases, _ = read_table(folder / s.CASES_FILE, s.CASES_FILE)
        assert {r["status"] for r in cases.to_pylist()} == {"ok"}
        starts += [(r["started_at"], folder.parent.name) for r in cases.to_pylist()]
    order = [label for _, label in sorted(starts)]
    # A B A B ...: no two consecutive cases from the same stack
    assert all(x != y for x, y in zip(order, order[1:])), order
    assert order.count("stack-a") == order.count("stack-b") == len(order) // 2


def test_python_must_be_paired_with_labels(run_cli, tmp_path, two_venvs):
    a, b = two_venvs
    result = run_cli("collector", "run", "--python", str(a), "--python", str(b), "--label", "only-one", "--out", str(tmp_path))
    assert result.returncode == 2
    assert "give one --label per --python (2 --python, 1 --label)" in result.stderr


def test_a_python_without_torch_is_a_clear_error(run_cli, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    result = run_cli("collector", "run", "--python", str(bare / "bin" / "python"), "--label", "bare", "--out", str(tmp_path / "runs"), timeout=120)
    assert result.returncode == 2
    assert "could not start a worker" in result.stderr and "No module named" in result.stderr
    assert "Traceback" not in result.stderr.splitlines()[0]
    assert not any((tmp_path / "runs").rglob("*.parquet"))
