"""BERT sequence-classification training steps (the published write-ups' MRPC fine-tuning shape)."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, bert_training, measure_training, require, tier


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        return [dict(model="bert-tiny", batch=2, seq=16)]
    if level == "small":
        return [dict(model="bert-mini", batch=4, seq=32)]
    out = [dict(model="bert-base", batch=8, seq=128)]
    if at_least(level, "standard"):
        out.append(dict(model="bert-base", batch=32, seq=128))
    if at_least(level, "full"):
        out.append(dict(model="bert-base", batch=8, seq=512))
    return out


def run(params: Mapping[str, Any], ctx: Any) -> None:
    require(ctx, "transformers", "BertForSequenceClassification")
    training = bert_training(ctx, model=params["model"], batch=params["batch"], seq=params["seq"])
    try:
        measure_training(ctx, training)
    finally:
        training.close()


WORKLOAD = Workload(
    name="bert_train",
    family="training",
    title="BERT-base fine-tuning step (batch 8, sequence 128)",
    method=(
        "transformers' BertForSequenceClassification is built from BertConfig() (BERT-base: 12 "
        "layers, hidden size 768, two labels as in GLUE MRPC) with random weights; nothing is "
        "downloaded. Each step feeds the same random token ids (batch 8, sequence length 128, the "
        "MRPC fine-tuning shape of the published write-ups; larger shapes in the standard and full suites) with "
        "an all-ones attention mask and random labels, and runs forward, loss, backward and an "
        "AdamW update (lr 2e-5) in FP32. After warm-up, every whole step is timed on its own with "
        "the host clock after a device synchronisation, until the 95% CI of the median is narrow "
        "or the time budget is spent; peak allocated and reserved GPU memory are recorded. "
        "Sequences per step are stored as the work. The CPU suites use smaller configurations, "
        "named in the parameters: bert-mini (2 layers, hidden 128) and bert-tiny (2 layers, hidden "
        "64, vocabulary 1024); their times are not BERT-base times."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    title_zh="BERT-base 微调训练步（批大小 8，序列长度 128）",
    method_zh=(
        "用 BertConfig()（BERT-base：12 层，隐藏维度 768，与 GLUE MRPC 一样两个标签）构建 transformers 的 "
        "BertForSequenceClassification，随机权重，不下载任何东西。每一步输入相同的随机 token id（批大小 8、"
        "序列长度 128，即种子文章的 MRPC 微调尺寸；standard 与 full 套件另有更大的尺寸）、全 1 的 attention "
        "mask 和随机标签，以 FP32 执行前向、损失、反向和 AdamW 更新（lr 2e-5）。预热之后，每个完整训练步在设备"
        "同步后用主机时钟单独计时，直到中位数的 95% 置信区间足够窄或用完时间预算；同时记录 GPU 峰值已分配与"
        "已保留显存。每步的序列数作为工作量保存。CPU 套件使用更小的配置（写在参数里）：bert-mini（2 层，隐藏"
        "维度 128）与 bert-tiny（2 层，隐藏维度 64，词表 1024），其耗时不是 BERT-base 的耗时。"
    ),
)
