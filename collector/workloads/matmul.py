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


WORKLOAD = Workload.described(
    "matmul",
    cases=cases,
    run=run,
    timeout_s=300,
)
