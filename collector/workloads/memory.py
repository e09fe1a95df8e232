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


WORKLOAD = Workload(
    name="memory",
    family="basic",
    title="Memory bandwidth: clone and broadcast add",
    method=(
        "`x.clone()` of a float32 vector, and `torch.add(x, row, out=y)` of a (n/1024)x1024 matrix and a broadcast row, "
        "from 1M to 256M elements. Timed in calibrated blocks; GB/s is derived from 2·4·n bytes per call "
        "(each element read once and written once), the way a copy's bandwidth is counted."
    ),
    title_zh="显存带宽：拷贝与广播加法",
    method_zh=(
        "对 float32 向量执行 `x.clone()`，以及 (n/1024)×1024 矩阵与广播行向量的 `torch.add(x, row, out=y)`，元素数从 1M 到 256M。"
        "按块计时；带宽按每次调用 2·4·n 字节（每个元素读一次、写一次）换算为 GB/s。"
    ),
    cases=cases,
    run=run,
    timeout_s=300,
)
