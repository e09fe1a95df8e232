"""Multi-node DDP on one machine: two `collector run` node agents on 127.0.0.1, a real c10d
rendezvous through torchrun, gloo; and a node that dies mid-step, failed on every node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runformat import schema as s
from runformat.archive import read_table
from collector.suites import SUITES
from collector.workloads._procs import free_port

from conftest import ROOT

pytestmark = pytest.mark.slow


def run_nodes(tmp_path: Path, *args: str, nnodes: int = 2, nproc: int = 2, env: dict[str, str] | None = None,
              timeout: float = 240) -> list[tuple[int, str, str]]:
    """Start one `collector run` per node at once, all meeting at one c10d endpoint; wait for all."""
    endpoint = f"127.0.0.1:{free_port()}"
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    procs = []
    for rank in range(nnodes):
        cmd = [
            sys.executable, "-m", "collector", "run", "--suite", "smoke", "--processes", "1", "--no-progress",
            "--label", "two-nodes", "--out", str(tmp_path / f"node{rank}"), "--nnodes", str(nnodes),
            "--node-rank", str(rank), "--rdzv-endpoint", endpoint, "--rdzv-id", "test", "--nproc-per-node", str(nproc),
            *args,
        ]  # fmt: skip
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd=ROOT))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


def load_run(stdout: str) -> tuple[dict[str, str], list[dict], list[dict]]:
    folder = Path(stdout.strip().splitlines()[-1])
    env = read_table(folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)[0].to_pylist()
    cases = read_table(folder / s.CASES_FILE, s.CASES_FILE)[0].to_pylist()
    samples = read_table(folder / s.SAMPLES_FILE, s.SAMPLES_FILE)[0]
    by = {(e["section"], e["key"]): e["value"] for e in env}
    metrics = samples.group_by(["case_id", "metric"]).aggregate([("value", "count")]).to_pylist()
    return by, cases, metrics


def test_two_node_agents_meet_in_a_c10d_rendezvous_and_each_records_its_part(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    results = run_nodes(tmp_path, "--only", "multigpu*nodes=2*replicas=2*", env={"TMPDIR": str(tmp)})
    for rc, out, err in results:
        assert rc == 0, err[-3000:]
    # torchrun's log folders went with each case's own scratch folder, none left behind
    assert not list(tmp.glob("torchelastic_*"))
    runs = [load_run(out) for _, out, _ in results]
    times = []
    for rank, (env, cases, metrics) in enumerate(runs):
        (case,) = cases
        assert case["status"] == s.STATUS_OK, case["error"]
        assert json.loads(case["params"])["nodes"] == 2
        assert case["items"] == 4 * 8  # the global batch: 2 nodes x 2 processes x 8 images
        assert "of 2 (ranks" in case["error"] and "of 4)" in case["error"]
        # every node's fingerprint records how it joined (its own node rank)
        assert f"--node_rank {rank}" in env[("env", "IMAGEBENCH_TORCHRUN_ARGS")]
        assert env[("run", "status")] == s.RUN_COMPLETE
        times.append({m["metric"]: m["value_count"] for m in metrics})
    # the node that held rank 0 records the case's time; the other its own view as wall_time
    assert sorted(tuple(sorted(t)) for t in times) == [("time",), ("wall_time",)]
    minimum = SUITES["smoke"].policy.min_samples
    assert all(n >= minimum for t in times for n in t.values())  # both timed the same steps
    assert len(set(times[0].values()) | set(times[1].values())) == 1
    assert len({runs[0][0][("run", "run_id")], runs[1][0][("run", "run_id")]}) == 2


def test_a_node_that_dies_mid_step_is_a_failed_case_on_every_node_and_the_run_goes_on(tmp_path):
    results = run_nodes(
        tmp_path, "--only", "ddp_node_dies", "--only", "fault_ok[i=0]", nproc=1,
        env={"IMAGEBENCH_EXTRA_WORKLOADS": "tests.fleet_faults,tests.fault_workloads"},
    )
    statuses = []
    for rc, out, err in results:
        assert rc == 0, err[-3000:]
        env, cases, _ = load_run(out)
        assert env[("run", "status")] == s.RUN_COMPLETE
        by_workload = {c["workload"]: c for c in cases}
        statuses.append({w: c["status"] for w, c in by_workload.items()})
        died = by_workload["ddp_node_dies"]
        # The surviving node sees either its own rank's failure (torchrun's root-cause summary)
        # or, when the dead node held the c10d store, its agent losing the rendezvous.
        assert "torchrun exited with code" in died["error"]
        assert ("on this node of 2: first failure rank" in died["error"]
                or "on this node of 2: this node's agent lost the rendezvous" in died["error"]), died["error"]
    assert statuses == [{"ddp_node_dies": s.STATUS_FAILED, "fault_ok": s.STATUS_OK}] * 2  # and the next case ran


def test_the_failure_of_a_node_names_its_first_failed_rank_or_the_lost_rendezvous():
    from collector.workloads.multigpu import _root_cause

    summary = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
Root Cause (first observed failure):
[0]:
  time      : 2026-12-04_10:00:00
  host      : node1
  rank      : 1 (local_rank: 0)
  exitcode  : -9 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4242
============================================================"""
    assert _root_cause(summary) == ": first failure rank 1 (local_rank: 0), exit code -9"
    lost = ("  File \".../c10d_rendezvous_backend.py\", line 110, in _call_store\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed.")
    assert _root_cause(lost) == (": this node's agent lost the rendezvous (RendezvousConnectionError); "
                                 "another node died or left")
    assert _root_cause("Traceback ...\nValueError: bad argument") == ""
