"""ResNet-50 inference latency per batch, FP32 and bf16 channels_last, for percentiles."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, build_image_model, cudnn_default, dtype_for, require, tier

BATCHES = (1, 16, 32, 64)
# Requests per case: fixed, so p95 and p99 rest on the same number of samples in every run.
REQUESTS = {"tiny": 8, "small": 20, "quick": 100, "standard": 300, "full": 300}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        return [dict(model="resnet50", image_size=64, batch=1, precision="fp32", channels_last=False)]
    if level == "small":
        # 112x112 keeps a request near 20 ms on two cores (224x224 reads 50 to 350 ms there).
        return [
            dict(model="resnet50", image_size=112, batch=1, precision="fp32", channels_last=False),
            dict(model="resnet50", image_size=112, batch=1, precision="bf16", channels_last=True),
        ]
    out = [dict(model="resnet50", image_size=224, batch=b, precision="fp32", channels_last=False) for b in BATCHES]
    # quick: bf16 at the two ends of the batch range; standard and full: all four sizes.
    bf16_batches = BATCHES if at_least(level, "standard") else (1, 64)
    if device.bf16:
        out += [dict(model="resnet50", image_size=224, batch=b, precision="bf16", channels_last=True) for b in bf16_batches]
    return out


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    require(ctx, "torchvision", "ResNet-50 (torchvision.models.resnet50)")
    precision = params["precision"]
    if precision == "bf16" and ctx.device == "cuda" and not ctx.info.bf16:
        ctx.skip(f"{ctx.info.name} does not support bf16")
    dtype = dtype_for(torch, precision)
    memory_format = torch.channels_last if params["channels_last"] else torch.contiguous_format
    model = build_image_model(params["model"], 1000).eval().to(ctx.device, dtype=dtype, memory_format=memory_format)
    size = params["image_size"]
    x = torch.randn(params["batch"], 3, size, size, device=ctx.device, dtype=dtype).contiguous(memory_format=memory_format)

    def request() -> None:
        with torch.inference_mode():
            model(x)

    n = REQUESTS[tier(ctx.suite, ctx.info)]
    ctx.set_work(items=params["batch"], items_unit="images")
    ctx.reset_peak_memory()
    with cudnn_default(torch):
        # One forward per sample, host clock around it after a sync: what a synchronous caller waits.
        ctx.time_steps(request, warmup=5, min_steps=n, max_steps=n, metric_name="latency")
    ctx.record_peak_memory()


WORKLOAD = Workload.described(
    "inference",
    cases=cases,
    run=run,
    timeout_s=300.0,
)
