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


WORKLOAD = Workload.described(
    "bert_train",
    cases=cases,
    run=run,
    timeout_s=600.0,
)
