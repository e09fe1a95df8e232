"""The largest training batch that fits: doubling, then binary search, one child process per probe."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import ChildFailed, at_least, require_model, run_child, tier


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if level == "tiny":
        # One tiny case (CPU or GPU) that exercises the search and its child processes; its cap
        # is reached long before memory runs out, so it records the cap as a lower bound.
        return [dict(model="cnn-tiny", image_size=32, num_classes=10, precision="fp32", start=8, cap=16, resolution=4)]
    if not device.is_cuda or level == "small":
        return []  # out-of-memory is a GPU question; a CPU would swap long before it failed
    if not at_least(level, "full"):
        return []  # a minute or two of probing per model: the full suite measures it
    # Each probe costs ~10 s on an H200 (a fresh process); starting at 512 keeps a search to
    # about six probes there (ResNet-50 FP32 fits 1024, not 4096), and a smaller GPU only
    # bisects further down. 128 is under 10% of an H200's ResNet-50 limit.
    return [
        dict(model="resnet50", image_size=224, num_classes=1000, channels_last=True, precision="fp32", start=512, cap=8192, resolution=128),
        dict(model="bert-base", seq=128, precision="fp32", start=512, cap=8192, resolution=128),
    ]


def search_max_batch(fits: Callable[[int], bool], *, start: int, cap: int, resolution: int) -> tuple[int, list[int]]:
    """The largest batch size ``b <= cap`` with ``fits(b)``, assuming fitting is monotone.

    Doubles from ``start`` until a probe fails or ``cap`` is reached, then halves the gap
    between the largest size that fit and the smallest that failed until it is at most
    ``resolution``. Returns (that size, the sizes probed in order); 0 when even 1 fails.
    """
    probed: list[int] = []

    def probe(b: int) -> bool:
        probed.append(b)
        return fits(b)

    good, bad = 0, None
    b = max(1, min(start, cap))
    while True:
        if probe(b):
            good = b
            if b >= cap:
                return good, probed
            b = min(2 * b, cap)
        else:
            bad = b
            break
    step = max(1, resolution)
    while bad - good > step:
        mid = (good + bad) // 2
        if probe(mid):
            good = mid
        else:
            bad = mid
    if good == 0 and bad > 1:  # even the smallest size tried failed: does batch 1 fit at all?
        if probe(1):
            good = 1
    return good, probed


def run(params: Mapping[str, Any], ctx: Any) -> None:
    from collector.schema import TIMING_ONESHOT

    model = params["model"]
    require_model(ctx, model)
    base = ["probe", "--model", model, "--device", ctx.device, "--precision", params.get("precision", "fp32")]
    if "image_size" in params:
        base += ["--image-size", str(params["image_size"]), "--num-classes", str(params.get("num_classes", 1000))]
    if params.get("channels_last"):
        base += ["--channels-last"]
    if "seq" in params:
        base += ["--seq", str(params["seq"])]
    deaths: list[str] = []
    peaks: dict[int, dict[str, Any]] = {}

    def fits(batch: int) -> bool:
        try:
            result = run_child(base + ["--batch", str(batch)], timeout=600)
        except ChildFailed as e:
            # A child killed outright (the driver or the kernel's OOM killer) counts as not fitting.
            deaths.append(f"batch {batch}: {str(e).splitlines()[0]}")
            return False
        if result.get("ok"):
            peaks[batch] = result
        return bool(result.get("ok"))

    best, probed = search_max_batch(fits, start=params["start"], cap=params["cap"], resolution=params["resolution"])
    if best == 0:
        raise RuntimeError(f"not even batch 1 ran a training step of {model}; " + "; ".join(deaths))
    ctx.record("max_batch", [best])
    ctx.set_timing(TIMING_ONESHOT)
    if best in peaks and "peak_allocated" in peaks[best]:
        ctx.record("peak_allocated", [peaks[best]["peak_allocated"]])
        ctx.record("peak_reserved", [peaks[best]["peak_reserved"]])
    ctx.note(f"probed batch sizes in order: {probed}")
    if best >= params["cap"]:
        ctx.note(f"the search stopped at its cap of {params['cap']}: the true limit is at least that")
    if deaths:
        ctx.note("children that died without reporting (counted as not fitting): " + "; ".join(deaths))


WORKLOAD = Workload(
    name="max_batch",
    family="memory",
    title="Largest training batch without out-of-memory",
    method=(
        "For ResNet-50 (224x224, FP32, channels_last, SGD with momentum) and BERT-base (sequence 128,"
        " FP32, AdamW), the largest batch size that runs a training step without running out of GPU "
        "memory (full suite only: a search takes a minute or two). Each probe is a fresh child "
        "process that builds the model and runs two whole training steps at one batch size (the "
        "second step holds the optimizer state too), set up as in the training workloads; it reports "
        "success or an out-of-memory error, and a child that dies without reporting counts as out of "
        "memory. The search doubles from a start size until a probe fails (or a cap of 8192 is "
        "reached), then bisects between the largest size that fit and the smallest that failed until "
        "they are 128 apart; the largest size that fit is recorded (max_batch), with its peak memory."
        " The probed sizes are kept in the case's notes. GPU only; the smoke suite runs one tiny "
        "capped search, which records its cap as a lower bound."
    ),
    cases=cases,
    run=run,
    timeout_s=1500.0,
    max_processes=1,
    title_zh="不发生显存溢出的最大训练批大小",
    method_zh=(
        "对 ResNet-50（224x224，FP32，channels_last，带动量的 SGD）和 "
        "BERT-base（序列长度 128，FP32，AdamW），求不耗尽 GPU 显存即可完成一个训练"
        "步的最大批大小（只在 full 套件中：一次搜索要一两分钟）。每次探测都是一个新的子进程：构建模型，"
        "在某个批大小下运行两个完整训练步（第二步还持有优化器状态），设置与训练类负载相同，报告成功或显存溢出"
        "；未报告就退出的子进程按显存溢出计。搜索从起始值开始翻倍，直到探测失败（或达到上限 8192），再在"
        "能容纳的最大值与失败的最小值之间二分，直到两者相差不超过 128；记录能容纳的最大批大小（max_batch"
        "）及其峰值显存。探测过的批大小写入用例备注。仅 GPU；smoke 套件运行一个很小的、有上限的搜索"
        "，记录的上限只是下界。"
    ),
)
