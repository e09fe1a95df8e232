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


WORKLOAD = Workload(
    name="inference",
    family="inference",
    title="ResNet-50 inference latency (batch 1 to 64)",
    method=(
        "torchvision's ResNet-50 with random weights runs in eval mode under torch.inference_mode on "
        "a fixed random batch of 224x224 images, at batch sizes 1, 16, 32 and 64 (the published write-ups' sizes; "
        "bf16 at 1 and 64 only in the quick suite), in FP32 (NCHW) and with weights and inputs in "
        "bfloat16 and channels_last layout, cuDNN's autotuner at its default (off). Every sample is "
        "one request: one forward pass of one batch, timed with the host clock from a synchronised "
        "device to the synchronisation after the forward, i.e. the latency a synchronous caller sees,"
        " launch overhead included. A fixed number of requests follows five warm-up requests (100 in "
        "the quick suite, 300 in standard and full), so the reporter computes p50, p95 and p99 "
        "from the raw samples; images per request are stored so throughput is derived. Peak GPU "
        "memory is recorded. The CPU suites time batch 1 at 112x112."
    ),
    cases=cases,
    run=run,
    timeout_s=300.0,
    title_zh="ResNet-50 推理延迟（批大小 1 到 64）",
    method_zh=(
        "随机权重的 torchvision ResNet-50 在 eval 模式和 torch.inference_mode"
        " 下，对固定的 224x224 随机图像批次推理，批大小为 1、16、32、64（种子文章的尺寸；quick"
        " 套件中 bf16 只测 1 和 64），分别用 FP32，以及权重与输入均为 bfloat16 且"
        "采用 channels_last 布局，cuDNN 自动调优保持默认（关闭）。每个样本是一次请求：对"
        "一个批次做一次前向，从设备已同步开始、到前向后再次同步为止用主机时钟计时，即同步调用者看到的延迟（包"
        "括 kernel 启动开销）。五次预热请求之后执行固定次数的请求（quick 100 次，standard"
        " 300 次，full 也是 300 次），报告据原始样本计算 p50、p95、p99；每次请求的图像数被"
        "保存，以便推导吞吐。同时记录 GPU 峰值显存。CPU 套件只测 112x112、批大小 1。"
    ),
)
