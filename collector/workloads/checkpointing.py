"""Activation checkpointing: step time and peak memory of a transformer stack with and without it."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import Training, at_least, check_precision, measure_training, tier


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        shapes = [dict(layers=2, d_model=32, heads=2, seq=16, batch=2, precision="fp32")]
    elif level == "small":
        shapes = [dict(layers=4, d_model=64, heads=4, seq=32, batch=4, precision="fp32")]
    else:
        shapes = [dict(layers=16, d_model=1024, heads=16, seq=512, batch=8, precision="fp32")]
        if at_least(level, "full") and device.bf16:
            shapes.append(dict(layers=16, d_model=1024, heads=16, seq=1024, batch=8, precision="bf16"))
        if level == "quick":
            return []  # a memory trade-off, not a headline: standard and full measure it
    return [{**s, "checkpoint": c} for s in shapes for c in (False, True)]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    check_precision(ctx, params["precision"])
    d = int(params["d_model"])
    with torch.device(ctx.device):  # initialise the weights where they will live: seconds on a CPU
        layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, int(params["heads"]), 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(int(params["layers"]))
        )
    use_checkpoint = bool(params["checkpoint"])

    def forward(x: Any) -> Any:
        for layer in layers:
            # Non-reentrant checkpointing keeps only each layer's input and recomputes the rest
            # of its activations during backward.
            x = checkpoint(layer, x, use_reentrant=False) if use_checkpoint else layer(x)
        return x

    x = torch.randn(int(params["batch"]), int(params["seq"]), d, device=ctx.device)
    optimizer = torch.optim.SGD(layers.parameters(), lr=1e-4)
    training = Training(
        torch,
        layers,
        forward,
        optimizer,
        lambda b: forward(b).float().pow(2).mean(),
        lambda: x,
        ctx.device,
        params["precision"],
        int(params["batch"]) * int(params["seq"]),
        "tokens",
    )
    if ctx.device != "cuda":
        ctx.note("peak memory is measured on CUDA only: this CPU case records step time")
    measure_training(ctx, training)


WORKLOAD = Workload.described(
    "checkpointing",
    cases=cases,
    run=run,
    timeout_s=600.0,
)
