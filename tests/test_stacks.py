"""Several stacks on one host: ``--python`` runs the suite under another interpreter, and
``--interleave`` alternates cases between stacks (A B, then B A) so machine drift falls on both alike."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

from runformat import schema as s
from runformat.archive import read_table


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
    groups = set()
    for folder in folders:
        env, _ = read_table(folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
        rows = {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}
        # each run's fingerprint comes from its own interpreter
        assert rows[("python", "executable")] == str(a if folder.parent.name == "stack-a" else b)
        assert rows[("run", "interleaved")] == "True"
        assert rows[("run", "status")] == "complete"
        cases, _ = read_table(folder / s.CASES_FILE, s.CASES_FILE)
        assert {r["status"] for r in cases.to_pylist()} == {"ok"}
        assert rows[("run", "interleave_group")]
        groups.add(rows[("run", "interleave_group")])
        starts += [(r["started_at"], folder.parent.name, r["round"], r["position"]) for r in cases.to_pylist()]
    assert len(groups) == 1  # one id pairs the two runs
    order = sorted(starts)
    # Round p is process p: A B in even rounds, B A in odd ones; position says which came first.
    for _, label, rnd, pos in order:
        assert pos == (0 if (label == "stack-a") == (rnd % 2 == 0) else 1)
    pairs = [order[i:i + 2] for i in range(0, len(order), 2)]
    assert all(x[2] == y[2] and x[1] != y[1] for x, y in pairs), order


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


def test_interleave_plan_alternates_the_order_between_rounds():
    """Runner.tasks: per round (process index), case by case, A B in even rounds and B A in odd ones."""
    from collector.run.plan import plan_tasks
    from collector.runner import Planned, RunOptions, Stack
    from collector.workloads import Case

    cases = [Case("matmul", {"n": 64, "dtype": "fp32"}), Case("matmul", {"n": 128, "dtype": "fp32"})]
    stacks = [Stack("python-a", "a"), Stack("python-b", "b")]
    planned = [Planned(st, None, [], None, cases) for st in stacks]  # planning reads only the cases
    tasks = plan_tasks(planned, RunOptions(out=Path("."), stacks=stacks, processes=3, interleave=True), set())
    assert len(tasks) == 2 * 3 * 2
    seen = [(t.process, t.stack_index, t.position) for t in tasks]
    for i in range(0, len(seen), 2):
        (p1, s1, pos1), (p2, s2, pos2) = seen[i], seen[i + 1]
        assert p1 == p2 and (pos1, pos2) == (0, 1)
        assert (s1, s2) == ((0, 1) if p1 % 2 == 0 else (1, 0))
    assert [t.process for t in tasks] == sorted(t.process for t in tasks)
    plain = plan_tasks(planned, RunOptions(out=Path("."), stacks=stacks, processes=3), set())
    assert all(t.position is None for t in plain)
