"""Inference, concurrent inference and DataLoader workloads run for real on the CPU at smoke scale."""

from __future__ import annotations

import pytest

from collector.context import SkipCase
from collector.suites import SUITES
from collector.workloads import registry

from workload_support import INFO, make_ctx, recorded  # noqa: E402

def test_inference_records_one_latency_per_request():
    from collector.workloads.inference import REQUESTS

    (params,) = registry()["inference"].cases("smoke", INFO)
    ctx = make_ctx()
    registry()["inference"].run(params, ctx)
    values = recorded(ctx)
    assert set(values) == {"latency"}
    assert len(values["latency"]) == REQUESTS["tiny"]  # a fixed count, so percentiles compare
    assert all(0 < v < 10 for v in values["latency"])
    assert ctx.recorded.items == params["batch"] and ctx.recorded.timing == "wall"
    assert all(it == 1 for _, _, it in ctx.recorded.samples)

def test_inference_bf16_channels_last_on_the_cpu():
    params = dict(model="resnet50", image_size=32, batch=2, precision="bf16", channels_last=True)
    ctx = make_ctx()
    registry()["inference"].run(params, ctx)
    assert len(recorded(ctx)["latency"]) > 0

def test_dataloader_throughput_with_and_without_workers():
    listed = registry()["dataloader"].cases("smoke", INFO)
    assert [p["num_workers"] for p in listed] == [0, 2]
    for params in listed:
        ctx = make_ctx()
        registry()["dataloader"].run(params, ctx)
        values = recorded(ctx)
        assert set(values) == {"throughput"}  # no GPU: no gpu_util
        policy = SUITES["smoke"].policy
        assert policy.min_samples <= len(values["throughput"]) <= policy.max_samples
        assert all(v > 0 for v in values["throughput"])
        assert ctx.recorded.items == params["batch"] and ctx.recorded.items_unit == "samples"

def test_dataloader_pin_memory_needs_a_gpu():
    with pytest.raises(SkipCase, match="pin_memory"):
        registry()["dataloader"].run(dict(shape="cifar", batch=8, num_workers=0, pin_memory=True, model="none"), make_ctx())

def test_augmented_dataset_does_real_crops_flips_and_normalises():
    import torch

    from collector.workloads._data import make_dataset

    ds = make_dataset(stored=4, size=40, crop=32, length=100)
    assert len(ds) == 100
    x, y = ds[57]  # past the stored images: wraps around
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and 0 <= int(y) < 10
    assert x.abs().max() < 3.0  # normalised from [0, 255]
    crops = {tuple(ds[0][0][0, 0, :4].tolist()) for _ in range(20)}
    assert len(crops) > 1  # random crop and flip change what item 0 looks like

def test_concurrent_inference_runs_two_tasks_forked_from_a_server_that_imported_torch():
    import multiprocessing.forkserver as forkserver

    (params,) = registry()["concurrent_inference"].cases("smoke", INFO)
    assert params["tasks"] == 2
    for attempt in range(2):  # the second case reuses the fork server the first started
        ctx = make_ctx()
        registry()["concurrent_inference"].run(params, ctx)
        values = recorded(ctx)
        assert values["tasks_ok"] == [2], ctx.recorded.notes
        assert 1 <= len(values["throughput"]) <= round(params["duration_s"] / 0.5)
        assert all(v > 0 for v in values["throughput"])
        assert ctx.recorded.timing == "wall" and not ctx.recorded.notes
        server = forkserver._forkserver._forkserver_pid
        assert server is not None and (attempt == 0 or server == first)
        first = server
