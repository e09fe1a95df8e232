"""3x3 convolution, forward and forward+backward, NCHW and channels_last (the published write-ups' 2.2)."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._common import DTYPE_BYTES, Precision, torch_dtype
from collector.workloads._models import cudnn_default

# (batch, channels, height/width): the published write-ups' 16x64x224x224 on a GPU, smaller on a CPU.
SHAPES = {"smoke": (2, 8, 16), "cpu": (4, 32, 56), "gpu": (16, 64, 224)}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    if device.is_cuda:
        n, c, hw = SHAPES["smoke"] if suite == "smoke" else SHAPES["gpu"]
        dtypes = ["fp32", "bf16"] if device.bf16 else ["fp32"]
        if suite in ("standard", "full") and device.tf32:
            dtypes[1:1] = ["fp32-strict", "tf32"]
    else:
        n, c, hw = SHAPES["smoke"] if suite == "smoke" else SHAPES["cpu"]
        dtypes = ["fp32"]
    return [
        {"batch": n, "channels": c, "size": hw, "kernel": 3, "dtype": d, "layout": layout, "pass": p}
        for d in dtypes
        for layout in ("nchw", "channels_last")
        for p in ("forward", "forward_backward")
    ]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    n, c, hw, k = (int(params[x]) for x in ("batch", "channels", "size", "kernel"))
    name = params["dtype"]
    dtype = torch_dtype(torch, name)
    memory_format = torch.channels_last if params["layout"] == "channels_last" else torch.contiguous_format
    conv = torch.nn.Conv2d(c, c, k, padding=k // 2, bias=False).to(ctx.device, dtype=dtype, memory_format=memory_format)
    x = torch.randn(n, c, hw, hw, device=ctx.device, dtype=dtype).contiguous(memory_format=memory_format)
    forward_flops = 2.0 * n * c * c * k * k * hw * hw
    activation_bytes = 2.0 * n * c * hw * hw * DTYPE_BYTES[name]
    if params["pass"] == "forward":
        def fn() -> None:
            with torch.no_grad():
                conv(x)

        flops = forward_flops
    else:
        x.requires_grad_(True)
        grad = torch.randn_like(x)

        def fn() -> None:
            conv.weight.grad = None
            x.grad = None
            conv(x).backward(grad)

        flops = 3.0 * forward_flops  # forward, grad wrt input, grad wrt weight
    ctx.set_work(flops=flops, bytes=activation_bytes)
    # cuDNN picks the algorithm by its heuristics, as it does for a user's script (and the
    # published write-ups) unless they turn the autotuner on. The autotuner's search cost 30 of
    # conv2d's 43 s on an H200, and it may pick a different algorithm in each process.
    with Precision(torch, name), cudnn_default(torch):
        ctx.time(fn)


WORKLOAD = Workload.described(
    "conv2d",
    cases=cases,
    run=run,
    timeout_s=300,
)
