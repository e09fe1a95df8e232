"""Mixed precision: FP32 against bf16 and fp16 autocast training steps, with their memory."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, measure_training, tier, training_for

PRECISIONS = ("fp32", "bf16", "fp16")


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        models = [dict(model="resnet50", image_size=32, num_classes=10, batch=2), dict(model="bert-tiny", batch=2, seq=16)]
    elif level == "small":
        models = [dict(model="resnet50", image_size=32, num_classes=10, batch=4), dict(model="bert-mini", batch=4, seq=32)]
    else:
        models = [dict(model="resnet50", image_size=224, num_classes=1000, batch=256, channels_last=True)]
        if at_least(level, "standard"):
            models.append(dict(model="bert-base", batch=8, seq=128))
        if at_least(level, "full"):
            models.append(dict(model="bert-base", batch=32, seq=128))
    # fp16 stays listed on the CPU so that the run records why it was not measured.
    out = [{**m, "precision": p} for m in models for p in PRECISIONS]
    if at_least(level, "standard"):
        # bf16 in NCHW, the published write-ups' layout: tensor cores want channels_last, and this shows the cost.
        out.append({**models[0], "precision": "bf16", "channels_last": False})
    return out


def run(params: Mapping[str, Any], ctx: Any) -> None:
    training = training_for(ctx, params)
    try:
        measure_training(ctx, training)
    finally:
        training.close()


WORKLOAD = Workload(
    name="amp",
    family="amp",
    title="Automatic mixed precision: FP32, bf16 and fp16 training",
    method=(
        "The ResNet-50 training step of the training workloads (224x224, batch 256) and, in the "
        "standard and full suites, the BERT-base step (batch 8, sequence 128) run in three "
        "precisions: FP32; torch.autocast with bfloat16; and torch.autocast with float16 plus "
        "torch.amp.GradScaler for loss scaling, the recipe of the seed articles. Weights and "
        "optimizer state stay FP32 in all three; ResNet-50 runs in channels_last layout on GPUs and "
        "cuDNN's autotuner stays at its default (off). Each whole step is timed on its own after "
        "warm-up with the host clock after a device synchronisation, and peak allocated and peak "
        "reserved GPU memory over the steps are recorded, so the speedup and the memory saved by each"
        " precision are derived at report time against the FP32 case with the same parameters. The "
        "full suite adds BERT-base at batch 32; the standard and full suites add bf16 ResNet-50 in "
        "the NCHW layout of the published write-ups' code, which tensor cores run far slower. On the CPU, fp32 and "
        "bf16 run at small sizes and fp16 is recorded as skipped with the reason."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    title_zh="自动混合精度：FP32、bf16 与 fp16 训练",
    method_zh=(
        "训练类负载中的 ResNet-50 训练步（224x224，批大小 256）以及 standard "
        "与 full 套件中的 BERT-base 训练步（批大小 8，序列长度 128）以三种精度运行：FP32"
        "；torch.autocast 配 bfloat16；torch.autocast 配 float16"
        " 并用 torch.amp.GradScaler 做损失缩放，即种子文章的做法。三种精度下权重与优化"
        "器状态都保持 FP32；GPU 上 ResNet-50 使用 channels_last 布局，cuDNN"
        " 自动调优保持默认（关闭）。预热后每个完整训练步在设备同步后用主机时钟单独计时，并记录训练期间 GPU"
        " 峰值已分配与峰值已保留显存，因此各精度相对参数相同的 FP32 用例的加速比与节省的显存在生成报告"
        "时推导。full 套件另加批大小 32 的 BERT-base；standard 与 full 套件"
        "另加种子代码所用 NCHW 布局下的 bf16 ResNet-50（张量核心在该布局下慢得多）。CPU"
        " 上以小尺寸运行 fp32 与 bf16，fp16 记录为跳过并写明原因。"
    ),
)
