"""Memory-bound ops: clone and broadcast add, 1M to 256M elements (the published write-ups' 2.3)."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload

M = 1 << 20
SIZES = {
    "smoke": (M,),
    "cpu": (M, 4 * M, 16 * M),
    "quick": (M, 16 * M, 256 * M),
    "standard": (M, 4 * M, 16 * M, 64 * M, 256 * M),
    "full": (M, 4 * M, 16 * M, 64 * M, 256 * M),
}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    sizes = SIZES[suite] if device.is_cuda or suite in ("smoke", "cpu") else SIZES["cpu"]
    return [{"op": op, "elements": n, "dtype": "fp32"} for op in ("clone", "broadcast_add") for n in sizes]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    n = int(params["elements"])
    if params["op"] == "clone":
        x = torch.randn(n, device=ctx.device)
        fn = x.clone
    else:
        # A (rows x 1024) matrix plus a broadcast row: reads the matrix, writes the result.
        cols = 1024
        x = torch.randn(n // cols, cols, device=ctx.device)
        row = torch.randn(1, cols, device=ctx.device)
        out = torch.empty_like(x)

        def fn() -> None:
            torch.add(x, row, out=out)

    # Bytes moved per call: every element read once and written once.
    ctx.set_work(bytes=2.0 * n * 4)
    ctx.time(fn)


WORKLOAD = Workload.described(
    "memory",
    cases=cases,
    run=run,
    timeout_s=300,
)
