"""Workloads that work through child processes, run for real on the CPU: numerics, max_batch,
allocator (its child), and DDP through a real torchrun with gloo and two processes."""

from __future__ import annotations


import pytest

from collector.context import SkipCase
from collector.suites import SUITES
from collector.workloads import registry
from collector.workloads._procs import ChildFailed, run_child, run_forked

from workload_support import INFO, make_ctx, recorded  # noqa: E402


def test_numerics_records_a_loss_per_step_and_a_checksum_that_repeat_exactly():
    (params,) = registry()["numerics"].cases("smoke", INFO)
    ctx = make_ctx()
    registry()["numerics"].run(params, ctx)
    values = recorded(ctx)
    assert len(values["loss"]) == params["steps"] and len(values["checksum"]) == 1
    assert all(0 < v < 10 for v in values["loss"])
    assert ctx.recorded.timing == "none"
    # Deterministic algorithms, fixed seeds: a child in a fresh interpreter gives the same
    # bits as the workload's child, forked from the fork server that imported torch.
    import multiprocessing.forkserver as forkserver

    assert forkserver._forkserver._forkserver_pid is not None
    again = run_child(
        ["numerics", "--device", "cpu", "--steps", str(params["steps"]), "--batch", str(params["batch"]), "--seed", "0"],
        env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
    )
    assert again["losses"] == values["loss"] and again["checksum"] == values["checksum"][0]
    assert again["deterministic"] is True


def test_a_forked_child_that_fails_or_overruns_is_a_child_failure_naming_why():
    with pytest.raises(ChildFailed, match="exited with code 1 without a result; its error:(.|\n)*nonesuch"):
        run_forked(["numerics", "--device", "nonesuch", "--steps", "1"], timeout=120)
    with pytest.raises(ChildFailed, match="exited with code 1(.|\n)*unknown allocator pattern"):
        run_forked(["allocator", "--pattern", "no-such-pattern", "--device", "cpu"], timeout=120)
    with pytest.raises(ChildFailed, match="did not finish within 1 s"):
        run_forked(["numerics", "--device", "cpu", "--steps", "1000000"], timeout=1)


def test_a_forked_child_gets_its_environment_and_leaves_the_worker_s_alone(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "from-the-worker")
    args = ["allocator", "--pattern", "random_tensors", "--device", "cpu", "--steps", "5", "--rounds", "1", "--live", "2"]
    assert run_forked(args, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})["alloc_conf"] == "expandable_segments:True"
    assert run_forked(args, env={"PYTORCH_CUDA_ALLOC_CONF": None})["alloc_conf"] in (None, "")


def test_only_the_worker_processes_that_run_forking_cases_start_a_fork_server(monkeypatch):
    import json
    import os
    import subprocess
    import sys

    from collector import worker
    from collector.run.plan import forks_in

    assert forks_in("numerics", 0) and forks_in("concurrent_inference", 0) and forks_in("max_batch", 0)
    assert not forks_in("numerics", 1)  # one worker process measures it
    assert forks_in("allocator", 0) and not forks_in("matmul", 0)
    env = {**os.environ, worker.FORK_SERVER_ENV: "1", worker.PRELOAD_ENV: ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "collector.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(worker.PROTOCOL_PREFIX)
        server = json.loads(line[len(worker.PROTOCOL_PREFIX):])["fork_server"]
        assert isinstance(server, int) and server > 0
        os.kill(server, 0)  # running, its imports done
    finally:
        proc.communicate('{"cmd": "exit"}\n', timeout=60)
    # The worker ends its fork server before it exits: nothing of it is left to share the
    # CPU with the next worker's first cases.
    with pytest.raises(ProcessLookupError):
        os.kill(server, 0)


def test_max_batch_smoke_search_probes_in_children():
    (params,) = registry()["max_batch"].cases("smoke", INFO)
    ctx = make_ctx()
    registry()["max_batch"].run(params, ctx)
    values = recorded(ctx)
    assert values["max_batch"] == [params["cap"]]  # a tiny CNN never runs out of memory here
    assert ctx.recorded.timing == "oneshot"
    assert any("probed batch sizes in order: [8, 16]" in n for n in ctx.recorded.notes)
    assert any("stopped at its cap" in n for n in ctx.recorded.notes)


def test_child_failures_carry_the_reason():
    with pytest.raises(ChildFailed, match="unknown allocator pattern"):
        run_child(["allocator", "--pattern", "no-such-pattern", "--device", "cpu"], timeout=120)


def test_allocator_is_gpu_only_but_its_child_runs_anywhere():
    assert registry()["allocator"].cases("smoke", INFO) == []
    with pytest.raises(SkipCase, match="GPUs only"):
        registry()["allocator"].run(dict(pattern="random_tensors", alloc_conf="default", scale="tiny"), make_ctx())
    result = run_child(
        ["allocator", "--pattern", "random_tensors", "--device", "cpu", "--steps", "50", "--rounds", "2",
         "--max-bytes", str(1 << 20), "--live", "4"],
        env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    )  # fmt: skip
    assert len(result["round_times"]) == 2 and all(t > 0 for t in result["round_times"])
    assert result["alloc_conf"] == "expandable_segments:True"  # the setting reached the child
    assert "peak_allocated" not in result  # no CUDA: no peaks
    assert result["expandable_segments"] is None  # no CUDA allocator to ask


def test_the_allocator_case_trusts_a_forked_child_only_where_its_allocator_did_what_was_asked(monkeypatch):
    """A forked child whose allocator did not take the setting (or cannot say) is measured again fresh."""
    from collector.workloads import allocator

    def result(expandable):
        return {"round_times": [0.1, 0.1], "steps": 10, "expandable_segments": expandable,
                "peak_allocated": 1 << 20, "peak_reserved": 2 << 20}

    for setting, forked, fresh_runs in [("expandable_segments", True, 0), ("default", False, 0),
                                        ("expandable_segments", False, 1), ("default", None, 1)]:
        calls = []
        monkeypatch.setattr(allocator, "_FORK_TRUSTED", True)
        monkeypatch.setattr(allocator, "run_forked", lambda args, env, timeout, forked=forked: calls.append("forked") or result(forked))
        monkeypatch.setattr(allocator, "run_child", lambda args, env, timeout, s=setting: calls.append("fresh") or result(s == "expandable_segments"))
        ctx = make_ctx()
        ctx.device = "cuda"
        allocator.run(dict(pattern="random_tensors", alloc_conf=setting, scale="gpu"), ctx)
        assert calls == ["forked"] + ["fresh"] * fresh_runs, (setting, forked)
        assert recorded(ctx)["peak_reserved"] == [2 << 20]
        # After a forked child that did not show the setting, the worker's later cases start fresh at once.
        assert allocator._FORK_TRUSTED is (fresh_runs == 0)
    calls.clear()
    allocator.run(dict(pattern="random_tensors", alloc_conf="default", scale="gpu"), ctx)
    assert calls == ["fresh"]
    monkeypatch.setattr(allocator, "run_child", lambda args, env, timeout: result(False))
    ctx = make_ctx()
    ctx.device = "cuda"
    with pytest.raises(RuntimeError, match="did not take effect"):
        allocator.run(dict(pattern="random_tensors", alloc_conf="expandable_segments", scale="gpu"), ctx)


def test_ddp_with_torchrun_gloo_two_processes():
    listed = registry()["multigpu"].cases("smoke", INFO)
    assert [p["replicas"] for p in listed] == [1, 2]
    params = listed[1]
    ctx = make_ctx()
    registry()["multigpu"].run(params, ctx)
    values = recorded(ctx)
    assert set(values) == {"time"}  # no GPU memory on the CPU
    policy = SUITES["smoke"].policy
    assert policy.min_samples <= len(values["time"]) <= policy.max_samples
    assert all(0 < t < 30 for t in values["time"])
    assert ctx.recorded.items == 2 * params["batch_per_replica"]  # the global batch
    assert ctx.recorded.timing == "wall"


def test_data_parallel_needs_gpus():
    with pytest.raises(SkipCase, match="visible GPUs"):
        registry()["multigpu"].run(
            dict(mode="dp", replicas=2, model="cnn-tiny", image_size=32, batch_per_replica=4), make_ctx()
        )
