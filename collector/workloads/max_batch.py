"""The largest training batch that fits: a guess from measured memory, then bracketing, one child process per probe."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, require_model, tier
from collector.workloads._procs import ChildFailed, run_forked


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
    # Each probe costs 10 to 20 s on an H200 (a fresh process). The first, at 512, measures
    # the memory a sample takes; the extrapolated limit is then bracketed within 128 (under
    # 10% of an H200's ResNet-50 limit of about 1,700), three or four probes in all. A GPU
    # too small for 512 bisects further down.
    return [
        dict(model="resnet50", image_size=224, num_classes=1000, channels_last=True, precision="fp32", start=512, cap=8192, resolution=128),
        dict(model="bert-base", seq=128, precision="fp32", start=512, cap=8192, resolution=128),
    ]


def search_max_batch(
    fits: Callable[[int], bool],
    *,
    start: int,
    cap: int,
    resolution: int,
    estimate: Callable[[int], float | None] | None = None,
) -> tuple[int, list[int]]:
    """The largest batch size ``b <= cap`` with ``fits(b)``, assuming fitting is monotone.

    Probes ``start`` first. Then, when ``estimate(start)`` predicts a larger limit (from the
    memory the first probe used), gallops from that prediction: up while sizes fit, down
    while they fail, the stride doubling from ``resolution``; otherwise doubles from
    ``start`` until a probe fails or ``cap`` is reached. Finally halves the gap between the
    largest size that fit and the smallest that failed until it is at most ``resolution``.
    Returns (that size, the sizes probed in order); 0 when even 1 fails.
    """
    probed: list[int] = []

    def probe(b: int) -> bool:
        probed.append(b)
        return fits(b)

    step = max(1, resolution)
    good, bad = 0, None
    b = max(1, min(start, cap))
    if probe(b):
        good = b
        guess = estimate(b) if estimate is not None else None
        target = min(cap, int(guess) // step * step) if guess is not None and math.isfinite(guess) else 0
        if target > good:
            good, bad = _gallop(probe, good, target, cap, step)
        else:
            good, bad = _double(probe, good, cap)
        if bad is None:
            return good, probed
    else:
        bad = b
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


def _double(probe: Callable[[int], bool], good: int, cap: int) -> tuple[int, int | None]:
    """From a size that fits, double until a probe fails: (largest fit, first failure or None at the cap)."""
    while good < cap:
        b = min(2 * good, cap)
        if not probe(b):
            return good, b
        good = b
    return good, None


def _gallop(probe: Callable[[int], bool], good: int, target: int, cap: int, step: int) -> tuple[int, int | None]:
    """Bracket the limit around a predicted size ``target > good``: (largest fit, smallest failure or None)."""
    stride = step
    if probe(target):
        good = target
        while good < cap:
            b = min(good + stride, cap)
            if not probe(b):
                return good, b
            good, stride = b, stride * 2
        return good, None
    bad = target
    while bad - stride > good:
        b = bad - stride
        if probe(b):
            return b, bad
        bad, stride = b, stride * 2
    return good, bad


def memory_estimate(result: Mapping[str, Any], batch: int) -> float | None:
    """The batch size at which a probe's memory would fill the device, extrapolated linearly.

    ``resident`` (weights, gradients, optimizer state) stays whatever the batch; the rest of
    the peak reserved memory grows with it. None when the probe reported no device memory.
    """
    try:
        resident, peak, capacity = (float(result[k]) for k in ("resident", "peak_reserved", "capacity"))
    except (KeyError, TypeError, ValueError):
        return None
    per_sample = (peak - resident) / batch
    if per_sample <= 0 or capacity <= resident:
        return None
    return (capacity - resident) / per_sample


def run(params: Mapping[str, Any], ctx: Any) -> None:
    from runformat.schema import TIMING_ONESHOT

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
            result = run_forked(base + ["--batch", str(batch)], timeout=600)
        except ChildFailed as e:
            # A child killed outright (the driver or the kernel's OOM killer) counts as not fitting.
            deaths.append(f"batch {batch}: {str(e).splitlines()[0]}")
            return False
        if result.get("ok"):
            peaks[batch] = result
        return bool(result.get("ok"))

    estimates: list[str] = []

    def estimate(batch: int) -> float | None:
        guess = memory_estimate(peaks.get(batch, {}), batch)
        if guess is not None:
            estimates.append(f"memory at batch {batch} extrapolates to a limit near {guess:.0f}")
        return guess

    best, probed = search_max_batch(
        fits, start=params["start"], cap=params["cap"], resolution=params["resolution"], estimate=estimate
    )
    if best == 0:
        raise RuntimeError(f"not even batch 1 ran a training step of {model}; " + "; ".join(deaths))
    ctx.record("max_batch", [best])
    ctx.set_timing(TIMING_ONESHOT)
    if best in peaks and "peak_allocated" in peaks[best]:
        ctx.record("peak_allocated", [peaks[best]["peak_allocated"]])
        ctx.record("peak_reserved", [peaks[best]["peak_reserved"]])
    ctx.note(f"probed batch sizes in order: {probed}")
    for line in estimates:
        ctx.note(line)
    if best >= params["cap"]:
        ctx.note(f"the search stopped at its cap of {params['cap']}: the true limit is at least that")
    if deaths:
        ctx.note("children that died without reporting (counted as not fitting): " + "; ".join(deaths))


WORKLOAD = Workload.described(
    "max_batch",
    cases=cases,
    run=run,
    timeout_s=1500.0,
    max_processes=1,
    fork_server=True,
)
