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


WORKLOAD = Workload(
    name="compile",
    family="compile",
    title="torch.compile: compile time and speedup over eager",
    method=(
        "Each model is trained twice with the same parameters, differing only in mode: eager, and "
        "torch.compile(model) with the default inductor backend and mode (the optimizer step stays "
        "eager, as in the published write-ups). ResNet-50 (224x224, batch 256, channels_last) and BERT-base (batch "
        "8, sequence 128) train under bf16 autocast on GPUs that support it. On GPUs this runs in the"
        " standard and full suites only: a cold compile of ResNet-50 alone takes 45 to 65 s on an "
        "H200, more than the quick suite's budget. The CPU suites compile a tiny two-layer CNN only, "
        "since inductor's CPU backend compiles C++ and a cold compile of a larger model takes minutes"
        " on two cores. Compile time is the wall time of the first training step, which traces the "
        "model and compiles the forward and backward graphs, measured with inductor's and triton's "
        "caches pointed at an empty folder, so it is a cold compile as in a fresh container. Then "
        "steady-state steps are timed one by one after warm-up, as in the training workloads; the "
        "speedup over eager is derived at report time from the eager case with the same parameters. "
        "Graph breaks and recompilations are read from torch._dynamo's counters and compilation "
        "metrics after the steps. Compiling is expensive, so the case runs in one worker process."
    ),
    cases=cases,
    run=run,
    timeout_s=1200.0,
    max_processes=1,
    title_zh="torch.compile：编译时间与相对 eager 的加速",
    method_zh=(
        "每个模型用相同参数训练两次，只有 mode 不同：eager，以及使用默认 inductor 后端与"
        "默认模式的 torch.compile(model)（优化器更新仍是 eager，与种子文章一致）。"
        "ResNet-50（224x224，批大小 256，channels_last）与 BERT-base"
        "（批大小 8，序列长度 128）在支持 bf16 的 GPU 上以 bf16 autocast 训练"
        "。GPU 上只在 standard 与 full 套件中运行：在 H200 上仅 ResNet-50"
        " 的冷编译就要 45 到 65 秒，超出 quick 套件的预算。CPU 套件只编译一个很小的两层 "
        "CNN，因为 inductor 的 CPU 后端要编译 C++，在两个核上冷编译更大的模型要几分钟。"
        "编译时间是第一个训练步的墙钟时间（追踪模型并编译前向与反向图），测量时 inductor 与 triton"
        " 的缓存指向空目录，因此是与全新容器相同的冷编译。之后像训练类负载一样，在预热后逐步计时稳定状态的训"
        "练步；相对 eager 的加速比在生成报告时与参数相同的 eager 用例比较得出。训练步结束后从 "
        "torch._dynamo 的计数器与编译指标读取图中断（graph break）与重新编译次数。编"
        "译代价高，因此该用例只在一个工作进程中运行。"
    ),
)
