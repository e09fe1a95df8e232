"""The script the multigpu workload starts under torchrun: DDP training, timed per step (not a workload).

Every rank trains the same model on its own synthetic batch under DistributedDataParallel
(NCCL on GPUs, gloo on the CPU), on one node or many. Each rank times each whole step after
a device sync; after each step rank 0 broadcasts whether to stop, so every rank runs the
same number of steps. The first rank of each node (local rank 0) writes its step times, its
global rank, its node's rank and its peak memory as JSON to ``--out`` on its own node: the
node that holds rank 0 has the case's result, the others their own view of the same steps.
A peer that vanishes fails the collective within ``--pg-timeout-s`` instead of hanging.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import sys
import time
from typing import Any


def _parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch", type=int, required=True, help="batch per process")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--device", default="cuda")
    p.add_argument("--threads", type=int, default=0, help="torch threads per process (CPU)")
    p.add_argument("--channels-last", type=int, default=0)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--min-steps", type=int, default=10)
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--budget-s", type=float, default=2.0)
    p.add_argument("--target-rel-ci", type=float, default=0.02)
    p.add_argument("--pg-timeout-s", type=float, default=300.0, help="how long a collective waits for a peer")
    p.add_argument("--out", required=True)
    return p.parse_args()


def _ddp_training(a: argparse.Namespace, rank: int, local_rank: int) -> Any:
    """This rank's training step, its model wrapped in DistributedDataParallel."""
    from types import SimpleNamespace

    import torch
    import torch.nn.functional as F

    from collector.workloads._models import image_training

    cuda = a.device == "cuda"
    torch.manual_seed(1234 + rank)
    ctx = SimpleNamespace(torch=torch, device="cuda" if cuda else "cpu")
    training = image_training(
        ctx,
        model=a.model,
        batch=a.batch,
        image_size=a.image_size,
        num_classes=a.num_classes,
        precision=a.precision,
        channels_last=bool(a.channels_last),
    )
    ddp = torch.nn.parallel.DistributedDataParallel(training.model, device_ids=[local_rank] if cuda else None)
    # The step's forward goes through the DDP wrapper, which all-reduces gradients in backward.
    training.loss_of_batch = lambda b: F.cross_entropy(ddp(b[0]), b[1])
    return training


def _time_steps(a: argparse.Namespace, training: Any, rank: int, device: str) -> list[float]:
    """Warm up, then time whole steps until rank 0 says stop (the same steps on every rank)."""
    import torch
    import torch.distributed as dist

    from collector.timing import median_ci_rel_width

    cuda = a.device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    stop = torch.zeros(1, device=device)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    for _ in range(a.warmup):
        training.step()
    sync()
    dist.barrier()
    times: list[float] = []
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        training.step()
        sync()
        times.append(time.perf_counter() - t0)
        if rank == 0:
            n = len(times)
            done = n >= a.max_steps or (
                n >= a.min_steps
                and (median_ci_rel_width(times) <= a.target_rel_ci or time.perf_counter() - started >= a.budget_s)
            )
            stop.fill_(1.0 if done else 0.0)
        dist.broadcast(stop, src=0)  # outside the timed region: every rank agrees to stop
        if stop.item() > 0:
            return times


def _write_result(a: argparse.Namespace, times: list[float], rank: int) -> None:
    """This node's result (step times, ranks, peak memory) as JSON to ``--out``."""
    import torch
    import torch.distributed as dist

    result = {
        "times": times,
        "rank": rank,
        "group_rank": int(os.environ.get("GROUP_RANK", "0")),
        "world_size": dist.get_world_size(),
        "local_world_size": int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
        "host": socket.gethostname(),
        "backend": dist.get_backend(),
    }
    if a.device == "cuda":
        result["peak_allocated"] = torch.cuda.max_memory_allocated()
        result["peak_reserved"] = torch.cuda.max_memory_reserved()
    with open(a.out, "w") as f:
        json.dump(result, f)


def main() -> None:
    a = _parse_args()

    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = a.device == "cuda"
    if a.threads:
        torch.set_num_threads(a.threads)
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo", timeout=dt.timedelta(seconds=a.pg_timeout_s))
    training = _ddp_training(a, rank, local_rank)
    times = _time_steps(a, training, rank, f"cuda:{local_rank}" if cuda else "cpu")
    if local_rank == 0:  # one result per node, in that node's --out
        _write_result(a, times, rank)
    dist.barrier()  # no rank leaves while another still talks to it
    # Leave without the process-group teardown: gloo's thread shutdown at exit can abort
    # ("terminate called without an active exception") after all the work is done and
    # recorded, which torchrun would report as a failed case.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
