"""scripts/gpu_round.sh on the CPU: a suite cut at the round's deadline keeps its finished
cases, and a later round's resume step finishes that run under the same id."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu_round.sh"


def _round(out: Path, **env: str) -> str:
    done = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable, "GPU_TAG": "cpu", **env})
    assert done.returncode == 0, done.stderr
    return (out / "summary.txt").read_text()


def _runs(archive: Path, into: Path) -> dict[str, str]:
    """Run id -> its recorded status, for every run in a round's runs.tar.gz."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    out = {}
    for env_file in into.glob("runs/*/*/environment.parquet"):
        env = pq.read_table(env_file).to_pandas()
        run = env[env["section"] == "run"].set_index("key")["value"]
        out[env_file.parent.name] = run["status"]
    return out


def test_a_run_cut_at_the_deadline_is_finished_by_the_next_rounds_resume(tmp_path: Path) -> None:
    # The baseline step with this checkout's own collector: the smoke suite takes about a
    # minute on two cores, so a 20 s round stops it part way.
    first = _round(tmp_path / "first", STEPS="baseline", BASELINE=str(ROOT), SUITE="smoke", DEADLINE_S="20")
    assert "baseline: exit 124" in first and "stopped at the deadline" in first
    cut = _runs(tmp_path / "first" / "runs.tar.gz", tmp_path / "cut")
    assert len(cut) == 1 and list(cut.values()) != ["complete"]

    second = _round(tmp_path / "second", STEPS="resume", RESUME_TAR=str(tmp_path / "first" / "runs.tar.gz"),
                    DEADLINE_S="300")
    assert "resume: exit 0" in second
    assert _runs(tmp_path / "second" / "runs.tar.gz", tmp_path / "done") == {next(iter(cut)): "complete"}


def test_resume_without_an_earlier_rounds_archive_says_what_it_needs(tmp_path: Path) -> None:
    summary = _round(tmp_path / "out", STEPS="resume", RESUME_TAR=str(tmp_path / "missing.tar.gz"))
    assert "RESUME_TAR must name the runs.tar.gz of an earlier round" in summary
