"""Square matrix multiply by size and dtype (the published write-ups' section 2.1)."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._common import DTYPE_BYTES, Precision, matmul_dtypes, torch_dtype

SIZES = {
    "smoke": (64, 128),
    "cpu": (256, 512, 1024),
    "quick": (1024, 4096, 8192),
    "standard": (256, 512, 1024, 2048, 4096, 8192),
    "full": (256, 512, 1024, 2048, 4096, 8192),
}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    dtypes = matmul_dtypes(device)
    if suite in ("smoke", "cpu") and not device.is_cuda:
        # bf16 matmul on a CPU without AMX is slow and says little: one size of it.
        out = [{"n": n, "dtype": "fp32"} for n in SIZES[suite]]
        return out + [{"n": SIZES[suite][0], "dtype": "bf16"}]
    if suite in ("smoke", "cpu"):
        return [{"n": n, "dtype": d} for n in (256, 1024) for d in dtypes]
    return [{"n": n, "dtype": d} for n in SIZES[suite] for d in dtypes]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    n, name = int(params["n"]), params["dtype"]
    dtype = torch_dtype(torch, name)
    a = torch.randn(n, n, device=ctx.device, dtype=dtype)
    b = torch.randn(n, n, device=ctx.device, dtype=dtype)
    c = torch.empty(n, n, device=ctx.device, dtype=dtype)
    ctx.set_work(flops=2.0 * n**3, bytes=3.0 * n * n * DTYPE_BYTES[name])
    with Precision(torch, name):
        ctx.time(lambda: torch.mm(a, b, out=c))


WORKLOAD = Workload(
    name="matmul",
    family="basic",
    title="Matrix multiply (n x n by n x n)",
    method=(
        "`torch.mm(a, b, out=c)` on square random matrices (never zeros) of each size and dtype; "
        "`fp32` runs at the stack's own defaults (no TF32 flag or matmul precision touched), `fp32-strict` with TF32 "
        "off everywhere, `tf32` with TF32 matrix units on; each case records the precision settings it ran with. "
        "After warm-up, blocks of k back-to-back calls are timed (CUDA events around the block on a GPU, "
        "`perf_counter_ns` on the CPU), k calibrated so a block is long against timer resolution and launch overhead. "
        "Work per call: 2n³ FLOPs and 3n² elements moved, from which TFLOP/s is derived."
    ),
    title_zh="矩阵乘法（n×n 乘 n×n）",
    method_zh=(
        "对每种尺寸和数据类型的随机方阵（从不用全零）执行 `torch.mm(a, b, out=c)`；`fp32` 使用软件栈自身的默认设置"
        "（不改动任何 TF32 开关或矩阵乘精度），`fp32-strict` 全部关闭 TF32，`tf32` 为 float32 存储并开启 TF32 矩阵单元；每个用例记录其实际生效的精度设置。预热后按块计时：一块为 k 次连续调用（GPU 上用 CUDA 事件包围整块，"
        "CPU 上用 `perf_counter_ns`），k 经过标定，使一块的时长远大于计时器分辨率和启动开销。每次调用的工作量为 2n³ 次浮点运算，据此换算 TFLOP/s。"
    ),
    cases=cases,
    run=run,
    timeout_s=300,
)
