"""`collector` as a user runs it: bad input gives one line and exit 2; a real run writes a readable run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runformat import schema as s
from runformat.archive import read_table


@pytest.mark.parametrize(
    "args, message",
    [
        (["--suite", "nope"], "--suite 'nope' is not a suite"),
        (["--only", "no-such-case-xyz", "--suite", "smoke"], "no cases matching --only 'no-such-case-xyz'"),
        (["--label", ""], "--label '' has no letters or digits"),
        (["--label", "!!!"], "--label '!!!' has no letters or digits"),
        (["--processes", "0"], "--processes: must be a whole number at least 1, not '0'"),
        (["--out", "/proc/imagebench-cannot-write-here"], "--out: cannot create output folder /proc/imagebench-cannot-write-here"),
        (["--python", "/nonexistent/python"], "--python '/nonexistent/python' is not an executable file"),
        (["--interleave"], "--interleave needs at least two stacks (--stack or --python), not 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path, args, message):
    out = tmp_path / "runs"
    if "--out" not in args:
        args = [*args, "--out", str(out)]
    result = run_cli("collector", "run", *args, timeout=120)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_device_cuda_without_a_gpu_is_refused(run_cli, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = run_cli("collector", "run", "--device", "cuda", "--out", str(tmp_path), timeout=120)
    assert result.returncode == 2
    assert "--device cuda was given but torch.cuda.is_available() is False" in result.stderr
    assert "Traceback" not in result.stderr
    assert not any(tmp_path.rglob("*.parquet"))


def test_list_prints_case_ids(run_cli):
    result = run_cli("collector", "list", "--suite", "smoke", "--only", "matmul", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    cases = json.loads(result.stdout)
    assert cases and all(c["workload"] == "matmul" for c in cases)


def test_fingerprint_json(run_cli):
    result = run_cli("collector", "fingerprint", "--json", "--image", "my/image:1", timeout=120)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {"section": "container", "key": "image", "value": "my/image:1"} in rows


def test_a_real_cpu_run_is_recorded_and_reads_back(run_cli, tmp_path):
    out = tmp_path / "runs"
    result = run_cli(
        "collector", "run", "--suite", "smoke", "--only", "matmul", "--only", "memory", "--only", "conv2d",
        "--processes", "2", "--label", "PyTorch CPU test", "--image", "local/test:1", "--out", str(out), timeout=300,
    )
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])  # the run folder is the last line
    assert folder.parent == out / "PyTorch-CPU-test"
    assert s.is_valid_run_id(folder.name)
    assert sorted(p.name for p in folder.iterdir()) == sorted(s.RUN_FILES)

    env, meta = read_table(folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    assert meta["run_id"] == folder.name and meta["label"] == "PyTorch-CPU-test"
    env_rows = {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}
    assert env_rows[("run", "status")] == "complete"
    assert env_rows[("run", "suite")] == "smoke"
    assert env_rows[("container", "image")] == "local/test:1"

    cases, _ = read_table(folder / s.CASES_FILE, s.CASES_FILE)
    rows = cases.to_pylist()
    case_ids = {r["case_id"] for r in rows}
    assert {r["workload"] for r in rows} == {"matmul", "memory", "conv2d"}
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["status"] != "ok"]
    # every case measured in each of the 2 worker processes
    assert sorted((r["case_id"], r["process"]) for r in rows) == sorted((c, p) for c in case_ids for p in (0, 1))
    assert all(r["timing"] == "perf_counter" and r["device"] == "cpu" for r in rows)
    mm = next(r for r in rows if r["workload"] == "matmul")
    n = json.loads(mm["params"])["n"]
    assert mm["flops"] == 2 * n**3

    samples, _ = read_table(folder / s.SAMPLES_FILE, s.SAMPLES_FILE)
    df = samples.to_pandas()
    assert set(df["case_id"]) == case_ids
    assert set(df["process"]) == {0, 1}
    assert (df["value"] > 0).all() and (df["iterations"] >= 1).all()
    per = df.groupby(["case_id", "process"]).size()
    assert (per >= 3).all()  # the smoke policy requires at least 3 samples
    # the rotated order: process 1 does not start with the same case as process 0
    first = {p: min((r for r in rows if r["process"] == p), key=lambda r: r["started_at"])["case_id"] for p in (0, 1)}
    assert first[0] != first[1]
    assert pq.read_metadata(folder / s.SAMPLES_FILE).metadata[b"schema_version"] == str(s.SCHEMA_VERSION).encode()
