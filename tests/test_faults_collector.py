"""Fault injection on a real collector: crashes, hangs, out-of-memory, signals, SIGKILL, a full disk.

Every test runs ``python -m collector run`` in a subprocess, as a user would, with the
test-only workloads of ``tests/fault_workloads.py`` registered through
``IMAGEBENCH_EXTRA_WORKLOADS``. Runs go to pytest's temporary folders, never to runs/.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from runformat import schema as s
from runformat.archive import read_run as read_run_tables
from runformat.archive import read_table
from collector.lock import LOCK_FILE
from reporter.data.load import load_archive

ROOT = Path(__file__).resolve().parent.parent
GATE_ENV = "IMAGEBENCH_TEST_GATE"
MATMUL = "matmul[dtype=fp32,n=64]"  # the smallest real case of the smoke suite

pytestmark = pytest.mark.slow


def collector_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["IMAGEBENCH_EXTRA_WORKLOADS"] = "tests.fault_workloads"
    env.pop("IMAGEBENCH_IMAGE", None)
    env.update(extra)
    return env


def collector(*args: str, env: dict[str, str], **popen: Any) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "collector", "run", "--no-progress", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, **popen,
    )


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"collector did not finish in {timeout} s:\n{err[-3000:]}")
    return proc.returncode, out, err


def run_folder(out: Path) -> Path | None:
    folders = [p for p in out.glob("*/*") if s.is_valid_run_id(p.name)]
    assert len(folders) <= 1, folders
    return folders[0] if folders else None


def read_run(folder: Path) -> tuple[dict[tuple[str, str], str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The three tables, each read and validated as the reporter would."""
    tables = read_run_tables(folder)  # part files of a killed run merged in
    env, meta = tables[s.ENVIRONMENT_FILE]
    assert meta["run_id"] == folder.name
    cases, cmeta = tables[s.CASES_FILE]
    samples, smeta = tables[s.SAMPLES_FILE]
    assert cmeta["run_id"] == smeta["run_id"] == folder.name
    return {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}, cases.to_pylist(), samples.to_pylist()


def attempts(cases: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    return {(c["case_id"], c["process"]): c["status"] for c in cases}


def wait_until(predicate: Callable[[], Any], proc: subprocess.Popen, timeout: float = 180) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (OSError, AssertionError, Exception):  # a file not there yet
            value = None
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"collector ended (rc {proc.returncode}) before the test could act:\n{proc.stderr.read()[-3000:]}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail("timed out waiting for the collector")


def finished_attempts(out: Path) -> dict[tuple[str, int], str]:
    folder = run_folder(out)
    if folder is None or not (folder / s.CASES_FILE).exists():
        return {}
    return attempts(read_run_tables(folder)[s.CASES_FILE][0].to_pylist())


def workers_of(pid: int) -> list[int]:
    """Processes started by the collector ``pid`` (its workers carry IMAGEBENCH_PARENT_PID)."""
    mark = f"IMAGEBENCH_PARENT_PID={pid}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


# -- isolation ------------------------------------------------------------------------


def test_crashes_hangs_and_out_of_memory_cost_one_case_each(tmp_path):
    out = tmp_path / "runs"
    only = ["fault_segfault", "fault_abort", "fault_hang", "fault_oom", "fault_cuda_error", "fault_after_cuda_error",
            "fault_exit", "fault_bad_value", "fault_ok"]
    args = ["--suite", "smoke", "--processes", "1", "--label", "faults", "--out", str(out)]
    for pattern in only:
        args += ["--only", pattern]
    rc, stdout, stderr = finish(collector(*args, env=collector_env()))
    assert rc == 0, stderr
    assert "Traceback" not in stderr
    folder = Path(stdout.strip().splitlines()[-1])
    env, cases, samples = read_run(folder)
    assert env[("run", "status")] == "complete"
    by_id = {c["case_id"]: c for c in cases}
    assert len(by_id) == len(cases) == 14, sorted(by_id)

    for how in ("ctypes", "kill"):
        c = by_id[f"fault_segfault[how={how}]"]
        assert c["status"] == "failed"
        assert c["error"].startswith("worker process was killed by signal SIGSEGV")
        # faulthandler's Python stack of the crash is kept with the case
        assert "Segmentation fault" in c["error"] and "run_segfault" in c["error"]
    c = by_id["fault_abort"]
    assert c["status"] == "failed" and "killed by signal SIGABRT" in c["error"] and "run_abort" in c["error"]

    c = by_id["fault_hang"]  # timeout_s 4 on the workload, halved by the smoke suite
    assert c["status"] == "timeout"
    assert c["error"].startswith("case did not finish within its timeout of 2 s; the worker was killed")
    assert "run_hang" in c["error"]  # where it hung: the stack the worker printed on SIGUSR1
    assert 2 <= c["duration_s"] < 20

    for kind, text in (("host", "MemoryError"), ("torch_cpu", "can't allocate memory"), ("cuda", "CUDA out of memory")):
        c = by_id[f"fault_oom[kind={kind}]"]
        assert c["status"] == "failed"
        assert c["error"].startswith("out of memory: "), c["error"]
        assert text in c["error"]

    # a sticky CUDA error fails its case, and the next case runs in a fresh process
    c = by_id["fault_cuda_error"]
    assert c["status"] == "failed" and c["error"].startswith("RuntimeError: CUDA error: an illegal memory access")
    assert by_id["fault_after_cuda_error"]["status"] == "ok", by_id["fault_after_cuda_error"]["error"]

    assert by_id["fault_exit"]["status"] == "failed"
    assert by_id["fault_exit"]["error"] == "the workload called sys.exit(3)"
    assert by_id["fault_bad_value[value=nan]"]["error"] == "invalid sample: metric 'time' recorded a non-finite value (nan)"
    assert by_id["fault_bad_value[value=0]"]["error"] == "invalid sample: metric 'time' recorded 0.0 s, which must be positive"

    # the run went on after every fault: the good cases come last and are fine
    ok = [by_id["fault_ok[i=0]"], by_id["fault_ok[i=1]"]]
    assert all(c["status"] == "ok" and c["error"] is None for c in ok)
    assert min(c["started_at"] for c in ok) > max(c["started_at"] for c in cases if c["status"] != "ok")
    assert {x["case_id"] for x in samples} == {"fault_ok[i=0]", "fault_ok[i=1]", "fault_after_cuda_error"}
    # and the reporter reads the whole run without a problem
    archive = load_archive(out)
    assert archive.problems == []
    assert archive.runs.iloc[0][["cases_ok", "cases_failed", "cases_total"]].tolist() == [3, 11, 14]


# -- SIGKILL, then --resume -----------------------------------------------------------------


def test_sigkill_part_way_then_resume_matches_an_uninterrupted_run(tmp_path):
    gate = tmp_path / "gate"
    args = ["--suite", "smoke", "--only", MATMUL, "--only", "fault_gate[gate=1]", "--processes", "2", "--label", "killed"]

    # the reference: the same run, never interrupted (its gate open from the start)
    Path(f"{gate}.1").touch()
    ref_out = tmp_path / "reference"
    rc, stdout, stderr = finish(collector(*args, "--out", str(ref_out), env=collector_env(**{GATE_ENV: str(gate)})))
    assert rc == 0, stderr
    _, ref_cases, _ = read_run(run_folder(ref_out))
    expected = attempts(ref_cases)
    assert set(expected.values()) == {"ok"}
    assert expected.keys() == {(c, p) for c in (MATMUL, "fault_gate[gate=1]") for p in (0, 1)}
    Path(f"{gate}.1").unlink()

    # process 0 runs the matmul, then waits at the gate: kill -9 the collector there
    out = tmp_path / "runs"
    # TMPDIR: the worker logs a SIGKILLed collector cannot remove stay in the test's folder
    proc = collector(*args, "--out", str(out), env=collector_env(**{GATE_ENV: str(gate), "TMPDIR": str(tmp_path)}))
    wait_until(lambda: finished_attempts(out) == {(MATMUL, 0): "ok"}, proc)
    wait_until(lambda: workers_of(proc.pid), proc)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    rc, _, _ = finish(proc, timeout=30)
    assert rc == -signal.SIGKILL

    folder = run_folder(out)
    env, cases, samples = read_run(folder)  # every file still reads and validates
    assert env[("run", "status")] == "running"  # nobody could mark it
    assert attempts(cases) == {(MATMUL, 0): "ok"}
    assert {(x["case_id"], x["process"]) for x in samples} == {(MATMUL, 0)}
    # no temporary file left; the lock file stays, naming the killed writer (a later resume takes it over)
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [LOCK_FILE]
    assert (folder / LOCK_FILE).read_text().strip() == str(proc.pid)
    assert load_archive(out).problems == []
    # the workers died with their collector (PR_SET_PDEATHSIG): none is left running a case
    deadline = time.monotonic() + 10
    while workers_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers_of(proc.pid) == []
    kept = next(c for c in cases if c["case_id"] == MATMUL)

    Path(f"{gate}.1").touch()
    rc, stdout, stderr = finish(collector("--resume", str(folder), env=collector_env(**{GATE_ENV: str(gate)})))
    assert rc == 0, stderr
    assert Path(stdout.strip().splitlines()[-1]) == folder  # the same run, the same run id
    env, cases, samples = read_run(folder)
    assert env[("run", "status")] == "complete" and env[("run", "run_id")] == folder.name
    assert env[("run", "resumes")] == "1"
    assert attempts(cases) == expected  # case by case, the same attempts as the uninterrupted run
    assert {(x["case_id"], x["process"]) for x in samples} == set(expected)
    # the case finished before the kill was kept, not measured again
    assert next(c for c in cases if c["case_id"] == MATMUL and c["process"] == 0)["started_at"] == kept["started_at"]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no second run folder
    assert "took over a stale lock of process" in stderr and not (folder / LOCK_FILE).exists()


# -- SIGINT and SIGTERM ----------------------------------------------------------------------


def test_sigint_then_sigterm_mark_the_run_interrupted_and_resume_completes_it(tmp_path):
    gate = tmp_path / "gate"
    env = collector_env(**{GATE_ENV: str(gate)})
    out = tmp_path / "runs"
    args = ["--suite", "smoke", "--only", MATMUL, "--only", "fault_gate", "--processes", "1", "--label", "signals"]
    gate1, gate2 = ("fault_gate[gate=1]", 0), ("fault_gate[gate=2]", 0)

    # 1. Ctrl-C while the first gate is in flight: exit 130, the matmul kept
    proc = collector(*args, "--out", str(out), env=env)
    wait_until(lambda: finished_attempts(out) == {(MATMUL, 0): "ok"}, proc)
    time.sleep(1.0)  # the runner has sent the gate case to its worker
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, _, stderr = finish(proc, timeout=60)
    assert rc == 130, stderr
    assert time.monotonic() - t0 < 15  # the worker in flight is killed, not waited for
    assert "interrupted by SIGINT" in stderr and "--resume" in stderr and "Traceback" not in stderr
    folder = run_folder(out)
    run, cases, _ = read_run(folder)
    assert run[("run", "status")] == "interrupted"
    assert attempts(cases) == {(MATMUL, 0): "ok", gate1: "interrupted"}
    assert workers_of(proc.pid) == []

    # 2. resume; SIGTERM while the second gate is in flight: exit 143, the first gate kept
    Path(f"{gate}.1").touch()
    proc = collector("--resume", str(folder), env=env)
    wait_until(lambda: finished_attempts(out).get(gate1) == "ok", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    rc, _, stderr = finish(proc, timeout=60)
    assert rc == 143, stderr
    assert "interrupted by SIGTERM" in stderr
    run, cases, _ = read_run(folder)
    assert run[("run", "status")] == "interrupted"
    assert attempts(cases) == {(MATMUL, 0): "ok", gate1: "ok", gate2: "interrupted"}

    # 3. resume again: only the missing case runs, and the run is complete
    Path(f"{gate}.2").touch()
    rc, stdout, stderr = finish(collector("--resume", str(folder), env=env))
    assert rc == 0, stderr
    run, cases, samples = read_run(folder)
    assert run[("run", "status")] == "complete" and run[("run", "resumes")] == "2"
    assert attempts(cases) == {(MATMUL, 0): "ok", gate1: "ok", gate2: "ok"}
    assert {x["case_id"] for x in samples} == {MATMUL, gate1[0], gate2[0]}
    assert [p.name for p in out.glob("*/*")] == [folder.name]

    # a complete run is not resumed again
    rc, _, stderr = finish(collector("--resume", str(folder), env=env))
    assert rc == 2 and "already complete" in stderr


# -- disk trouble --------------------------------------------------------------------------------


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: writes past `limit` bytes fail with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_write_failing_mid_run_is_a_clear_error_and_keeps_what_was_written(tmp_path):
    """RLIMIT_FSIZE makes the write of a large samples.parquet fail part-way through, the
    way a full disk does (EFBIG instead of ENOSPC; it works for root and in any container)."""
    out = tmp_path / "runs"
    args = ["--suite", "smoke", "--only", "fault_ok[i=0]", "--only", "fault_big", "--processes", "1",
            "--label", "full", "--out", str(out)]
    rc, _, stderr = finish(collector(*args, env=collector_env(), preexec_fn=_file_size_limit(400_000)))
    assert rc == 2, stderr
    assert "Traceback" not in stderr
    folder = run_folder(out)
    line = stderr.strip().splitlines()[-1]
    # the attempt's samples part is what failed to write (each attempt is appended as parts)
    assert line.startswith(f"collector: error: cannot write {folder / s.PARTS_FOLDER}/")
    assert f"{s.SAMPLES_FILE}: File too large" in line
    assert f"resume with: collector run --resume {folder}" in line
    # what was written before stays whole: three valid files, the first case in them
    env, cases, samples = read_run(folder)
    assert attempts(cases) == {("fault_ok[i=0]", 0): "ok"}
    assert {x["case_id"] for x in samples} == {"fault_ok[i=0]"}
    assert env[("run", "status")] == "interrupted"
    assert sorted(p.name for p in folder.iterdir()) == sorted(s.RUN_FILES)  # no temp file left


def test_an_unusable_output_folder_is_a_clear_error(tmp_path):
    from runformat.archive import ArchiveError, check_writable

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ArchiveError, match="output path .* is not a folder|cannot create output folder"):
        check_writable(a_file)
    with pytest.raises(ArchiveError, match=r"cannot create output folder .*/file/runs: Not a directory"):
        check_writable(a_file / "runs")
    if os.geteuid() != 0:  # root writes through permissions; the cases above work for root too
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(ArchiveError, match="is not writable"):
            check_writable(ro)
    proc = collector("--suite", "smoke", "--only", "fault_ok", "--out", str(a_file / "runs"), env=collector_env())
    rc, _, stderr = finish(proc, timeout=120)
    assert rc == 2
    assert stderr.strip() == f"collector: error: --out: cannot create output folder {a_file / 'runs'}: Not a directory"
    assert a_file.read_text() == "x"


def test_resume_refuses_what_it_cannot_resume(tmp_path):
    env = collector_env()
    not_a_run = tmp_path / "empty"
    not_a_run.mkdir()
    rc, _, stderr = finish(collector("--resume", str(not_a_run), env=env), timeout=120)
    assert rc == 2 and f"--resume: {not_a_run} is not a run folder: environment.parquet is missing" in stderr
    rc, _, stderr = finish(collector("--resume", str(tmp_path / "nope"), env=env), timeout=120)
    assert rc == 2 and "is not a run folder" in stderr
    assert "Traceback" not in stderr


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _has_gpu(), reason="real CUDA faults need a GPU; the CPU tests above simulate them")
def test_real_cuda_out_of_memory_and_device_assert_on_a_gpu(tmp_path):
    """A 64 TiB allocation and an out-of-bounds index (a sticky device-side assert), then a
    real kernel: each process goes on, and the kernel after the assert runs in a fresh one."""
    out = tmp_path / "runs"
    rc, stdout, stderr = finish(collector("--suite", "smoke", "--only", "fault_gpu", "--processes", "2",
                                          "--label", "gpu", "--out", str(out), env=collector_env()))
    assert rc == 0, stderr
    _, cases, _ = read_run(run_folder(out))
    by = {(c["case_id"], c["process"]): c for c in cases}
    for p in (0, 1):
        assert by[("fault_gpu[kind=oom]", p)]["error"].startswith("out of memory: ")
        assert by[("fault_gpu[kind=assert]", p)]["status"] == "failed"
        assert by[("fault_gpu[kind=ok]", p)]["status"] == "ok", by[("fault_gpu[kind=ok]", p)]["error"]
