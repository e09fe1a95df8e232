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


WORKLOAD = Workload(
    name="checkpointing",
    family="memory",
    title="Activation checkpointing: memory saved against time spent",
    method=(
        "A stack of 16 pre-norm transformer encoder layers (d_model 1024, 16 heads, feed-forward "
        "4096, batch 8 x sequence 512, FP32; the full suite adds sequence 1024 under bf16 autocast) "
        "trains with SGD on a fixed random input, once storing all activations and once wrapping "
        "every layer in torch.utils.checkpoint.checkpoint(use_reentrant=False), which keeps each "
        "layer's input only and recomputes the rest during backward (the published write-ups' "
        "gradient-checkpointing advice). After warm-up each whole step is timed on its own with the "
        "host clock after a device synchronisation, and peak allocated and reserved GPU memory are "
        "recorded, so memory saved and time paid are derived at report time against the case without "
        "checkpointing. The CPU suites run a tiny stack and record step time only."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    title_zh="激活检查点：节省的显存与付出的时间",
    method_zh=(
        "一个由 16 层 pre-norm transformer 编码器层组成的堆叠（d_model 1024"
        "，16 头，前馈 4096，批大小 8 x 序列长度 512，FP32；full 套件另加序列长度 "
        "1024、bf16 autocast）在固定随机输入上用 SGD 训练：一次保存全部激活，一次把每一"
        "层包进 torch.utils.checkpoint.checkpoint(use_reentrant=False)"
        "，只保留每层的输入，其余激活在反向时重算（种子文章的梯度检查点建议）。预热之后每个完整训练步在设备同"
        "步后用主机时钟单独计时，并记录 GPU 峰值已分配与已保留显存，因此节省的显存与付出的时间在生成报告"
        "时与不使用检查点的用例比较得出。CPU 套件运行一个很小的堆叠，只记录步时间。"
    ),
)
