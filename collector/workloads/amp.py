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


WORKLOAD = Workload.described(
    "amp",
    cases=cases,
    run=run,
    timeout_s=600.0,
)
