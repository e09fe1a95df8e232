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


WORKLOAD = Workload.described(
    "cpu_vs_gpu",
    cases=cases,
    run=run,
    timeout_s=300,
)
