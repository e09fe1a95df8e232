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


WORKLOAD = Workload(
    name="conv2d",
    family="basic",
    title="2-D convolution, 3x3, same channels in and out",
    method=(
        "A bias-free `nn.Conv2d(C, C, 3, padding=1)` on a random batch (16x64x224x224 on a GPU, as in the published write-ups; "
        "4x32x56x56 on the CPU), forward alone under `no_grad` and forward plus backward, in NCHW and "
        "`channels_last` layouts, with `cudnn.benchmark` at the stack's default (off): cuDNN picks the algorithm by its "
        "heuristics, as in a user's script and the published write-ups. "
        "`fp32` runs at the stack's own defaults (cuDNN's TF32 default included), `fp32-strict` with TF32 off, `tf32` with it on; "
        "each case records the precision settings it ran with. "
        "Timed in calibrated blocks like matmul. Work: 2·N·C²·9·H·W FLOPs forward, three times that for forward+backward."
    ),
    title_zh="二维卷积（3×3，输入输出通道相同）",
    method_zh=(
        "无偏置的 `nn.Conv2d(C, C, 3, padding=1)`，输入为随机张量（GPU 上为 16×64×224×224，与原文一致；CPU 上为 4×32×56×56），"
        "分别测前向（`no_grad`）与前向+反向，布局为 NCHW 与 `channels_last`，`cudnn.benchmark` 保持软件栈默认（关闭）：由 cuDNN 的启发式规则选择算法，与用户脚本及原文相同。"
        "`fp32` 使用软件栈默认设置（包括 cuDNN 默认的 TF32），`fp32-strict` 关闭 TF32，`tf32` 开启 TF32；每个用例记录其实际生效的精度设置。"
        "计时方式与矩阵乘法相同。工作量：前向 2·N·C²·9·H·W 次浮点运算，前向+反向为其三倍。"
    ),
    cases=cases,
    run=run,
    timeout_s=300,
)
