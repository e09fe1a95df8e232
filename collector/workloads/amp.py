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
        models = [dict(model="resnet50", image_size=32, num_classes=10, batch=8), dict(model="bert-mini", batch=4, seq=32)]
    else:
        models = [dict(model="resnet50", image_size=224, num_classes=1000, batch=256), dict(model="bert-base", batch=8, seq=128)]
        if at_least(level, "full"):
            models += [dict(model="resnet50", image_size=32, num_classes=10, batch=128), dict(model="bert-base", batch=32, seq=128)]
    # fp16 stays listed on the CPU so that the run records why it was not measured.
    out = [{**m, "precision": p} for m in models for p in PRECISIONS]
    if at_least(level, "standard"):
        # bf16 with channels_last: the memory layout tensor cores prefer for convolutions.
        out.append({**models[0], "precision": "bf16", "channels_last": True})
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
        "The ResNet-50 (224x224, batch 256) and BERT-base (batch 8, sequence 128) training steps of "
        "the training workloads run in three precisions: FP32; torch.autocast with bfloat16; and "
        "torch.autocast with float16 plus torch.amp.GradScaler for loss scaling, the recipe of the "
        "seed articles. Weights and optimizer state stay FP32 in all three. Each whole step is "
        "timed on its own after warm-up with the host clock after a device synchronisation, and "
        "peak allocated and peak reserved GPU memory over the steps are recorded, so the speedup "
        "and the memory saved by each precision are derived at report time against the FP32 case "
        "with the same parameters. The standard and full suites add bf16 with channels_last "
        "tensors for ResNet-50. On the CPU, fp32 and bf16 run at small sizes and fp16 is recorded "
        "as skipped with the reason."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    title_zh="自动混合精度：FP32、bf16 与 fp16 训练",
    method_zh=(
        "训练类负载中的 ResNet-50（224x224，批大小 256）与 BERT-base（批大小 8，序列长度 128）训练步以三种精度"
        "运行：FP32；torch.autocast 配 bfloat16；torch.autocast 配 float16 并用 torch.amp.GradScaler 做损失"
        "缩放，即种子文章的做法。三种精度下权重与优化器状态都保持 FP32。预热后每个完整训练步在设备同步后用主机"
        "时钟单独计时，并记录训练期间 GPU 峰值已分配与峰值已保留显存，因此各精度相对参数相同的 FP32 用例的加速"
        "比与节省的显存在生成报告时推导。standard 与 full 套件另加 ResNet-50 的 bf16 + channels_last。CPU 上以"
        "小尺寸运行 fp32 与 bf16，fp16 记录为跳过并写明原因。"
    ),
)
