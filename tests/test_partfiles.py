"""Incremental writing: part files per attempt, compaction, readers of a folder with parts, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runformat import schema as s
from runformat.archive import RunWriter, has_parts, merge_parts, read_run, read_table
from runformat.schema import CaseRecord, SampleRecord
from reporter.data.load import load_archive

ROOT = Path(__file__).resolve().parent.parent


def case(cid: str, process: int = 0, status: str = "ok") -> CaseRecord:
    return CaseRecord(case_id=cid, workload="w", params="{}", process=process, status=status, error=None,
                      timing="perf_counter", device="cpu", started_at=1.7e9, duration_s=0.1)


def samples(cid: str, process: int = 0, n: int = 3, value: float = 1e-3) -> list[SampleRecord]:
    return [SampleRecord(case_id=cid, process=process, metric="time", unit="s", better="lower", index=i,
                         value=value, iterations=1) for i in range(n)]


def gpu(cid: str, process: int = 0) -> dict:
    return {"case_id": cid, "process": process, "gpu": 0, "source": "nvml", "readings": 2, "reasons": "",
            "throttled": False, "sm_clock_mhz_median": 1980.0}


def new_run(tmp_path: Path) -> RunWriter:
    w = RunWriter.create(tmp_path / "runs", "parts")
    w.write_environment([s.EnvironmentEntry("run", "status", "running")])
    w.write_cases([], [])
    return w


def test_attempts_append_and_compaction_writes_the_same_tables(tmp_path):
    w = new_run(tmp_path)
    w.write_attempt([case("a")], samples("a"), [gpu("a")])
    w.write_attempt([case("b")], samples("b"), [])
    assert has_parts(w.folder)
    # the main files are untouched while recording: appending costs the same at any length
    assert read_table(w.folder / s.CASES_FILE, s.CASES_FILE)[0].num_rows == 0
    before = read_run(w.folder)
    assert before[s.CASES_FILE][0].column("case_id").to_pylist() == ["a", "b"]
    assert before[s.SAMPLES_FILE][0].num_rows == 6 and before[s.GPU_STATE_FILE][0].num_rows == 1
    w.compact()
    assert not has_parts(w.folder)
    assert sorted(p.name for p in w.folder.iterdir()) == sorted([*s.RUN_FILES, s.GPU_STATE_FILE])
    after = read_run(w.folder)
    for kind in (s.CASES_FILE, s.SAMPLES_FILE, s.GPU_STATE_FILE):
        assert after[kind][0].to_pylist() == before[kind][0].to_pylist()
    assert after[s.CASES_FILE][1]["run_id"] == w.run_id


def test_a_later_attempt_of_the_same_case_replaces_the_earlier_one(tmp_path):
    w = new_run(tmp_path)
    w.write_attempt([case("a", status="interrupted")], [], [])
    w.write_attempt([case("a")], samples("a", value=2e-3), [gpu("a")])
    t = read_run(w.folder)
    assert t[s.CASES_FILE][0].column("status").to_pylist() == ["ok"]
    assert set(t[s.SAMPLES_FILE][0].column("value").to_pylist()) == {2e-3}


def test_an_uncommitted_attempt_is_not_read(tmp_path):
    """Killed between the samples part and the cases part: the attempt was in flight."""
    w = new_run(tmp_path)
    w.write_attempt([case("a")], samples("a"), [])
    w.write_attempt([case("b")], samples("b"), [])
    (w.folder / s.PARTS_FOLDER / f"000001.{s.CASES_FILE}").unlink()
    t = read_run(w.folder)
    assert t[s.CASES_FILE][0].column("case_id").to_pylist() == ["a"]
    assert set(t[s.SAMPLES_FILE][0].column("case_id").to_pylist()) == {"a"}
    archive = load_archive(tmp_path / "runs")
    assert archive.problems == [] and list(archive.cases["case_id"].astype(str)) == ["a"]


def test_a_crash_during_compaction_reads_the_same(tmp_path):
    """Main files rewritten but parts not yet removed: nothing is counted twice."""
    w = new_run(tmp_path)
    w.write_attempt([case("a")], samples("a"), [gpu("a")])
    merged = merge_parts(w.folder, {k: read_table(w.folder / k, k)[0] for k in (s.CASES_FILE, s.SAMPLES_FILE)})
    for kind in (s.SAMPLES_FILE, s.GPU_STATE_FILE, s.CASES_FILE):
        from runformat.archive import write_table_atomic

        write_table_atomic(merged[kind].replace_schema_metadata(s.table_metadata(run_id=w.run_id, label=w.label)),
                           w.folder / kind)
    assert has_parts(w.folder)
    t = read_run(w.folder)
    assert t[s.CASES_FILE][0].num_rows == 1 and t[s.SAMPLES_FILE][0].num_rows == 3
    assert t[s.GPU_STATE_FILE][0].num_rows == 1


def test_reopen_for_resume_compacts_what_a_killed_run_left(tmp_path):
    w = new_run(tmp_path)
    w.write_attempt([case("a")], samples("a"), [])
    again = RunWriter.reopen(w.folder)
    assert not has_parts(again.folder)
    assert read_table(w.folder / s.CASES_FILE, s.CASES_FILE)[0].num_rows == 1


def _collector(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "collector", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_kill_9_mid_run_loses_at_most_the_case_in_flight(tmp_path):
    """kill -9 the collector while it records: every attempt finished before the kill reads back."""
    out = tmp_path / "runs"
    # TMPDIR: the worker logs a SIGKILLed collector cannot remove stay in the test's folder
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IMAGEBENCH_EXTRA_WORKLOADS": "tests.fault_workloads", "TMPDIR": str(tmp_path)}
    proc = _collector("run", "--suite", "smoke", "--only", "fault_ok", "--only", "matmul[dtype=fp32,n=64]",
                      "--processes", "3", "--label", "kill9", "--out", str(out), "--no-progress", env=env)
    deadline = time.monotonic() + 240
    folder = None
    committed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        runs = [p for p in (out / "kill9").glob("2*")] if (out / "kill9").is_dir() else []
        if runs:
            folder = runs[0]
            committed = len(list((folder / s.PARTS_FOLDER).glob(f"*.{s.CASES_FILE}"))) if has_parts(folder) else 0
            if committed >= 3:
                break
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()[-2000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    committed_at_kill = len(list((folder / s.PARTS_FOLDER).glob(f"*.{s.CASES_FILE}")))
    tables = read_run(folder)
    cases = tables[s.CASES_FILE][0].to_pylist()
    assert len(cases) == committed_at_kill >= 3
    assert all(c["status"] == "ok" for c in cases)
    sampled = {(x["case_id"], x["process"]) for x in tables[s.SAMPLES_FILE][0].to_pylist()}
    assert {(c["case_id"], c["process"]) for c in cases} <= sampled
    archive = load_archive(out)
    assert [p for p in archive.problems if "part" in p.reason] == []
    assert int(archive.runs.iloc[0]["cases_total"]) >= 1
    # the planned attempts: 3 cases x 3 processes; what is missing is at most the one in flight
    # plus those never started, and --resume finishes them
    rc = subprocess.run([sys.executable, "-m", "collector", "run", "--resume", str(folder), "--no-progress"],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rc.returncode == 0, rc.stderr[-2000:]
    final = read_run(folder)[s.CASES_FILE][0].to_pylist()
    assert len(final) == 9 and {c["status"] for c in final} == {"ok"}
    kept = {(c["case_id"], c["process"]): c["started_at"] for c in cases}
    assert all(kept[k] == c["started_at"] for c in final if (k := (c["case_id"], c["process"])) in kept)
    assert not has_parts(folder)
