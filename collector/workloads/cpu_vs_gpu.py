"""The same float32 matmul on the host CPU and on the GPU (the published write-ups' CPU-versus-GPU table)."""

from __future__ import annotations

from typing import Any, Mapping

from collector.timing import PerfCounterTimer, time_fn
from collector.workloads import DeviceInfo, Workload
from collector.workloads._common import Precision

SIZES = {"smoke": (128,), "quick": (1024, 2048), "standard": (512, 1024, 2048), "full": (512, 1024, 2048, 4096)}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    if not device.is_cuda:
        return []  # without a GPU there is nothing to set the CPU against (matmul covers it)
    return [{"n": n, "on": on} for n in SIZES.get(suite, SIZES["quick"]) for on in ("cpu", "cuda")]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    n, on = int(params["n"]), params["on"]
    a = torch.randn(n, n, device=on)
    b = torch.randn(n, n, device=on)
    c = torch.empty(n, n, device=on)
    ctx.set_work(flops=2.0 * n**3, bytes=3.0 * n * n * 4)
    # Strict float32 on both sides (the CPU has no TF32), restored for the worker's next case.
    with Precision(torch, "fp32-strict"):
        if on == "cuda":
            ctx.time(lambda: torch.mm(a, b, out=c))
        else:
            ctx.capture_settings()
            timed = time_fn(lambda: torch.mm(a, b, out=c), PerfCounterTimer(), ctx.policy)
            ctx.record("time", timed.per_iter, iterations=timed.iterations)
            ctx.set_timing(timed.method)


WORKLOAD = Workload(
    name="cpu_vs_gpu",
    family="basic",
    title="CPU against GPU: float32 matmul",
    method=(
        "The same float32 `torch.mm` (TF32 off) on the host CPU, with torch's default threads, and on the GPU. "
        "The CPU side is timed with `perf_counter_ns`, the GPU side with CUDA events, both in calibrated blocks. "
        "Recorded only on machines with a GPU."
    ),
    title_zh="CPU 与 GPU 对比：float32 矩阵乘法",
    method_zh=(
        "同一个 float32 `torch.mm`（关闭 TF32）分别在主机 CPU（torch 默认线程数）和 GPU 上运行。CPU 端用 `perf_counter_ns` 计时，"
        "GPU 端用 CUDA 事件计时，均为标定后的块计时。仅在有 GPU 的机器上记录。"
    ),
    cases=cases,
    run=run,
    timeout_s=300,
)
