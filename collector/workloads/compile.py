"""torch.compile against eager for the training models: compile time, step time, breaks, recompiles."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import cudnn_default, fresh_compile_caches, measure_training, tier, training_for


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level in ("tiny", "small"):
        # Inductor's CPU backend compiles C++ with the system compiler: a cold compile of even a
        # tiny CNN takes tens of seconds on two cores, so the CPU suites compile only that.
        batch = 4 if level == "tiny" else 16
        models = [dict(model="cnn-tiny", image_size=32, num_classes=10, batch=batch, precision="fp32")]
    else:
        precision = "bf16" if device.bf16 else "fp32"
        if level == "quick":
            # A cold compile of ResNet-50 alone takes 45-65 s on an H200: more than the quick
            # suite's budget allows. standard and full measure it.
            return []
        resnet = dict(model="resnet50", image_size=224, num_classes=1000, batch=256, channels_last=True)
        models = [{**resnet, "precision": precision}, dict(model="bert-base", batch=8, seq=128, precision=precision)]
    return [{**m, "mode": mode} for m in models for mode in ("eager", "compile")]


def compile_counts(torch: Any) -> tuple[int, int | None]:
    """(graph breaks, recompilations) that torch._dynamo counted since its last reset.

    Recompilations are the compilations whose metrics carry a recompile reason; ``None`` when
    this torch keeps no compilation metrics.
    """
    from torch._dynamo.utils import counters

    breaks = int(sum(counters["graph_break"].values()))
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except ImportError:
        return breaks, None
    return breaks, sum(1 for m in get_compilation_metrics() if getattr(m, "recompile_reason", None))


def reset_dynamo(torch: Any) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    try:
        from torch._dynamo.utils import clear_compilation_metrics

        clear_compilation_metrics()
    except ImportError:
        pass


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    if params["mode"] == "eager":
        training = training_for(ctx, params)
        try:
            measure_training(ctx, training)
        finally:
            training.close()
        return
    if params["mode"] != "compile":
        raise ValueError(f"unknown mode {params['mode']!r}; known: eager, compile")
    reset_dynamo(torch)
    with fresh_compile_caches():
        training = training_for(ctx, params, compile_model=True)
        try:
            ctx.set_work(items=training.items, items_unit=training.items_unit)
            ctx.reset_peak_memory()
            with cudnn_default(torch):
                # The first step traces, compiles the forward and (during backward) the backward graph.
                ctx.time_once(training.step, metric_name="compile_time")
                ctx.time_steps(training.step, warmup=3)
            ctx.record_peak_memory()
            breaks, recompiles = compile_counts(torch)
            ctx.record("graph_breaks", [breaks])
            if recompiles is None:
                ctx.note("recompilations not recorded: this torch has no torch._dynamo.utils.get_compilation_metrics")
            else:
                ctx.record("recompiles", [recompiles])
        finally:
            training.close()
            reset_dynamo(torch)


WORKLOAD = Workload.described(
    "compile",
    cases=cases,
    run=run,
    timeout_s=1200.0,
    max_processes=1,
)
