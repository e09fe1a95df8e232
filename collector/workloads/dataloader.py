"""DataLoader throughput with a real CPU-side transform, by worker count and pinned memory."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, tier

WORKER_COUNTS = (0, 2, 4, 8)
# (stored size, crop, batch): CIFAR-10-like (pad-and-crop 32 from 40) and ImageNet-like (224 from 256).
SHAPES = {"cifar": (40, 32, 128), "imagenet": (256, 224, 64)}
# How many distinct images each shape keeps in memory (items wrap around).
STORED = {"cifar": 2048, "imagenet": 256}
GPU_UTIL_PERIOD_S = 0.2  # NVML's utilisation is itself an average over 1/6 s to 1 s
GPU_UTIL_MIN_S = 1.0  # measure at least this long when sampling utilisation (a full NVML averaging period)


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    workers = [w for w in WORKER_COUNTS if w <= max(1, device.cpu_count)]
    if level == "tiny":
        return [dict(shape="cifar", batch=16, num_workers=w, pin_memory=False, model="none") for w in workers[:2]]
    if level == "small":
        return [dict(shape="cifar", batch=64, num_workers=w, pin_memory=False, model="none") for w in workers]
    _, _, batch = SHAPES["cifar"]
    pins = (True,) if level == "quick" else (False, True)
    # quick: no workers against a few (the published write-ups' 0 and 4); standard and full: the whole grid.
    grid = workers if at_least(level, "standard") else [w for w in workers if w in (0, 4)] or workers
    out = [dict(shape="cifar", batch=batch, num_workers=w, pin_memory=p, model="resnet18") for w in grid for p in pins]
    if at_least(level, "full"):
        _, _, batch = SHAPES["imagenet"]
        out += [
            dict(shape="imagenet", batch=batch, num_workers=w, pin_memory=True, model="resnet18")
            for w in workers
            if w in (0, 4, 8)
        ]
    return out


class UtilisationSampler:
    """Samples GPU utilisation through NVML (torch.cuda.utilization) on a background thread.

    ``stop`` does not wait for the thread (an NVML read can take most of a second on a
    busy GPU): ``values`` are those read before it, and a read still in flight is dropped.
    """

    def __init__(self, torch: Any, period_s: float = GPU_UTIL_PERIOD_S) -> None:
        self.torch = torch
        self.period_s = period_s
        self.values: list[float] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        device = self.torch.cuda.current_device()
        while True:  # a first sample at once, so even a short measurement gets one
            try:
                value = float(self.torch.cuda.utilization(device))
            except Exception as e:  # NVML missing or refusing: note it once, stop sampling
                with self._lock:
                    if not self._stop.is_set():
                        self.error = f"{type(e).__name__}: {e}"
                return
            with self._lock:
                if self._stop.is_set():
                    return
                self.values.append(value)
            if self._stop.wait(self.period_s):
                return

    def stop(self) -> None:
        with self._lock:  # after this, the thread appends nothing: values are final
            self._stop.set()


def _train_step(params: Mapping[str, Any], ctx: Any) -> Callable[[Any, Any], None] | None:
    """The small model's training step that consumes each batch on the device (None: ``model=none``)."""
    if params["model"] == "none":
        return None
    torch = ctx.torch
    import torch.nn.functional as F

    from collector.workloads._models import build_image_model, require

    require(ctx, "torchvision", f"the {params['model']} that consumes the batches")
    model = build_image_model(params["model"], 10).to(ctx.device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

    def train_step(x: Any, y: Any) -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return train_step


def _utilisation_sampler(ctx: Any) -> UtilisationSampler | None:
    """A GPU utilisation sampler, where NVML can be read (a note says why not, where it cannot)."""
    if ctx.device != "cuda":
        return None
    try:
        import pynvml  # noqa: F401  (torch.cuda.utilization reads NVML through it)
    except ImportError:
        ctx.note("gpu_util not recorded: pynvml (nvidia-ml-py) is not installed in this stack")
        return None
    return UtilisationSampler(ctx.torch)


def _time_windows(ctx: Any, consume: Callable[[int], None], window: int, batch: int,
                  sampler: UtilisationSampler | None) -> list[float]:
    """Samples delivered per second, one value per timed window of ``window`` batches, until the
    policy's CI target or budget (and, while sampling utilisation, at least ``GPU_UTIL_MIN_S``)."""
    from collector.timing import median_ci_rel_width

    policy = ctx.policy
    values: list[float] = []
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    while len(values) < policy.max_samples:
        t0 = time.perf_counter()
        try:
            consume(window)
        except StopIteration:
            break
        values.append(window * batch / (time.perf_counter() - t0))
        elapsed = time.perf_counter() - start
        if len(values) < policy.min_samples or (sampler is not None and elapsed < GPU_UTIL_MIN_S):
            continue
        if median_ci_rel_width(values) <= policy.target_rel_ci or elapsed >= policy.budget_s:
            break
    return values


def run(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    from torch.utils.data import DataLoader

    from runformat.schema import TIMING_WALL
    from collector.workloads._data import make_dataset
    from collector.workloads._models import cudnn_default

    cuda = ctx.device == "cuda"
    workers = int(params["num_workers"])
    pin = bool(params["pin_memory"])
    if pin and not cuda:
        ctx.skip("pin_memory only matters when batches are copied to a GPU")
    size, crop, _ = SHAPES[params["shape"]]
    batch = int(params["batch"])
    # A window spans several batches per worker, so the round-robin of workers evens out.
    window = max(4, 2 * workers)
    length = (ctx.policy.max_samples + 3) * window * batch
    dataset = make_dataset(STORED[params["shape"]], size, crop, length)
    loader = DataLoader(
        dataset,
        batch_size=batch,
        shuffle=False,  # the data are synthetic; a sampler over millions of indices is not the point
        num_workers=workers,
        pin_memory=pin,
        drop_last=True,
    )
    train_step = _train_step(params, ctx)
    sampler = _utilisation_sampler(ctx)
    it = iter(loader)

    def consume(n: int) -> None:
        for _ in range(n):
            x, y = next(it)
            x = x.to(ctx.device, non_blocking=pin)
            y = y.to(ctx.device, non_blocking=pin)
            if train_step is not None:
                train_step(x, y)
        ctx.sync()

    try:
        with cudnn_default(torch):
            consume(window)  # workers start and fill their prefetch queues; not timed
            ctx.set_work(items=batch, items_unit="samples")
            ctx.set_timing(TIMING_WALL)
            values = _time_windows(ctx, consume, window, batch, sampler)
    finally:
        if sampler is not None:
            sampler.stop()
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
    ctx.record("throughput", values)
    if sampler is not None:
        if sampler.values:
            ctx.record("gpu_util", sampler.values)
        else:
            ctx.note(f"gpu_util not recorded: {sampler.error or 'no NVML sample was taken'}")


WORKLOAD = Workload.described(
    "dataloader",
    cases=cases,
    run=run,
    timeout_s=300.0,
)
