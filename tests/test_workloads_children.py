"""Workloads that work through child processes, run for real on the CPU: numerics, max_batch,
allocator (its child), and DDP through a real torchrun with gloo and two processes."""

from __future__ import annotations


import pytest

from collector.context import SkipCase
from collector.suites import SUITES
from collector.workloads import registry
from collector.workloads._models import ChildFailed, run_child

from workload_support import INFO, make_ctx, recorded  # noqa: E402


def test_numerics_records_a_loss_per_step_and_a_checksum_that_repeat_exactly():
    (params,) = registry()["numerics"].cases("smoke", INFO)
    ctx = make_ctx()
    registry()["numerics"].run(params, ctx)
    values = recorded(ctx)
    assert len(values["loss"]) == params["steps"] and len(values["checksum"]) == 1
    assert all(0 < v < 10 for v in values["loss"])
    assert ctx.recorded.timing == "none"
    # Deterministic algorithms, fixed seeds: a second child gives the same bits.
    again = run_child(
        ["numerics", "--device", "cpu", "--steps", str(params["steps"]), "--batch", str(params["batch"]), "--seed", "0"],
        env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
    )
    assert again["losses"] == values["loss"] and again["checksum"] == values["checksum"][0]
    assert again["deterministic"] is True


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
