"""ResNet-50 training steps on synthetic CIFAR-10- and ImageNet-shaped batches, and on real CIFAR-10."""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, image_training, measure_training, require, tier

CIFAR_MEAN_STD = ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    cifar = dict(model="resnet50", data="synthetic", image_size=32, num_classes=10)
    imagenet = dict(model="resnet50", data="synthetic", image_size=224, num_classes=1000)
    real = dict(model="resnet50", data="cifar10", image_size=32, num_classes=10)
    if level == "tiny":
        return [{**cifar, "batch": 2}, {**real, "batch": 2, "loader_workers": 0}]
    if level == "small":
        # The ImageNet shape costs seconds a step on two cores: the CPU suite keeps CIFAR-10's.
        return [{**cifar, "batch": 8}, {**real, "batch": 8, "loader_workers": min(2, device.cpu_count)}]
    # channels_last on GPUs: the layout tensor cores run convolutions in (the H200 reference's
    # 3,100 img/s FP32 is channels_last; NCHW, as the published write-ups' code has it, reads 2,200).
    cl = dict(channels_last=True)
    out = [{**cifar, **cl, "batch": 128}, {**imagenet, **cl, "batch": 256}]
    if at_least(level, "standard"):
        out.append({**real, **cl, "batch": 128, "loader_workers": min(4, device.cpu_count)})
        out.append({**imagenet, "channels_last": False, "batch": 256})
    if at_least(level, "full"):
        out += [{**imagenet, **cl, "batch": 64}, {**imagenet, **cl, "batch": 128}]
    return out


def cifar10_batches(
    ctx: Any, batch: int, workers: int, channels_last: bool = False
) -> tuple[Callable[[], Any], Callable[[], None]]:
    """Batches of the real CIFAR-10 training set, as the published write-ups load it (ToTensor, Normalize).

    Reads torchvision's format (``cifar-10-batches-py``) from ``ctx.data_dir`` or
    ``ctx.data_dir/cifar10``; never downloads. Skips the case when it is not there.
    """
    torchvision = require(ctx, "torchvision", "the real CIFAR-10 case")
    from torch.utils.data import DataLoader
    from torchvision import transforms

    if not ctx.data_dir:
        ctx.skip("real CIFAR-10 needs --data-dir with torchvision's cifar-10-batches-py in it; imagebench never downloads datasets")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(*CIFAR_MEAN_STD)])
    dataset = None
    tried = []
    for root in (ctx.data_dir, os.path.join(ctx.data_dir, "cifar10"), os.path.join(ctx.data_dir, "CIFAR10")):
        tried.append(root)
        if not os.path.isdir(os.path.join(root, "cifar-10-batches-py")):
            continue
        try:
            dataset = torchvision.datasets.CIFAR10(root, train=True, download=False, transform=transform)
            break
        except RuntimeError as e:  # torchvision's integrity check failed
            ctx.skip(f"CIFAR-10 under {root} is incomplete or corrupted ({e}); imagebench never downloads datasets")
    if dataset is None:
        ctx.skip(f"CIFAR-10 (torchvision's cifar-10-batches-py) not found under {', '.join(tried)}; imagebench never downloads datasets")
    cuda = ctx.device == "cuda"
    loader = DataLoader(
        dataset,
        batch_size=batch,
        shuffle=True,
        num_workers=workers,
        pin_memory=cuda,
        drop_last=True,
        persistent_workers=workers > 0,
    )
    state: dict[str, Any] = {"it": iter(loader)}

    def next_batch() -> Any:
        try:
            x, y = next(state["it"])
        except StopIteration:  # an epoch ended: start the next one (workers persist)
            state["it"] = iter(loader)
            x, y = next(state["it"])
        x = x.to(ctx.device, non_blocking=cuda)
        if channels_last:
            x = x.contiguous(memory_format=ctx.torch.channels_last)
        return x, y.to(ctx.device, non_blocking=cuda)

    def close() -> None:
        it = state.pop("it", None)
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()

    return next_batch, close


def run(params: Mapping[str, Any], ctx: Any) -> None:
    require(ctx, "torchvision", "ResNet-50 (torchvision.models.resnet50)")
    next_batch, close = None, None
    channels_last = bool(params.get("channels_last", False))
    if params["data"] == "cifar10":
        next_batch, close = cifar10_batches(ctx, params["batch"], params.get("loader_workers", 0), channels_last)
        ctx.note(f"real CIFAR-10 through a DataLoader with {params.get('loader_workers', 0)} workers; the step includes waiting for the batch")
    training = image_training(
        ctx,
        model=params["model"],
        batch=params["batch"],
        image_size=params["image_size"],
        num_classes=params["num_classes"],
        channels_last=channels_last,
        next_batch=next_batch,
    )
    if close is not None:
        training.closers.append(close)
    try:
        measure_training(ctx, training)
    finally:
        training.close()


WORKLOAD = Workload.described(
    "resnet50_train",
    cases=cases,
    run=run,
    timeout_s=600.0,
)
