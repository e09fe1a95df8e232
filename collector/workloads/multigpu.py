"""Data-parallel training scaling: nn.DataParallel and DDP through torchrun, 1..N replicas."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import child_env, cudnn_default, free_port, image_training, require, tier

DDP_SCRIPT = Path(__file__).with_name("_ddp.py")
TORCHRUN_ARGS_ENV = "IMAGEBENCH_TORCHRUN_ARGS"
# torchrun options that already say where the rendezvous is: then no --master_port is added.
RENDEZVOUS_OPTIONS = ("--master_port", "--master-port", "--rdzv_endpoint", "--rdzv-endpoint", "--standalone")


def replica_counts(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    counts, k = [], 1
    while k < n:
        counts.append(k)
        k *= 2
    return counts + [n]


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if not device.is_cuda:
        procs = replica_counts(min(2, max(1, device.cpu_count)))
        batch = 8 if level == "tiny" else 16
        return [dict(mode="ddp", replicas=k, model="cnn-tiny", image_size=32, batch_per_replica=batch) for k in procs]
    n = max(1, device.count)
    if level in ("tiny", "small"):
        ks = replica_counts(min(n, 2))
        return [dict(mode="ddp", replicas=k, model="cnn-tiny", image_size=32, batch_per_replica=16) for k in ks]
    gpu = dict(model="resnet50", image_size=224, batch_per_replica=64, channels_last=True)
    if level == "quick":
        if n < 2:
            return []  # one GPU has nothing to scale across; standard records DDP's overhead
        ks = [1, n]
    else:
        ks = replica_counts(n)
    out = [dict(mode="ddp", replicas=k, **gpu) for k in ks]
    if n >= 2:  # DataParallel as the seeds use it; its 1-GPU case is the baseline of its scaling
        out += [dict(mode="dp", replicas=k, **gpu) for k in ks]
    return out


def run(params: Mapping[str, Any], ctx: Any) -> None:
    if params["model"] != "cnn-tiny":
        require(ctx, "torchvision", params["model"])
    if params["mode"] == "dp":
        run_data_parallel(params, ctx)
    elif params["mode"] == "ddp":
        run_ddp(params, ctx)
    else:
        raise ValueError(f"unknown mode {params['mode']!r}; known: dp, ddp")


def run_data_parallel(params: Mapping[str, Any], ctx: Any) -> None:
    torch = ctx.torch
    k = int(params["replicas"])
    if ctx.device != "cuda" or torch.cuda.device_count() < k:
        ctx.skip(f"DataParallel over {k} GPUs needs {k} visible GPUs; this worker sees {torch.cuda.device_count() if ctx.device == 'cuda' else 0}")
    import torch.nn.functional as F

    batch = k * int(params["batch_per_replica"])
    training = image_training(
        ctx,
        model=params["model"],
        batch=batch,
        image_size=params["image_size"],
        num_classes=params.get("num_classes", 1000),
        channels_last=bool(params.get("channels_last", False)),
    )
    dp = torch.nn.DataParallel(training.model, device_ids=list(range(k)))
    training.loss_of_batch = lambda b: F.cross_entropy(dp(b[0]), b[1])
    ctx.set_work(items=batch, items_unit="images")
    ctx.reset_peak_memory()  # device 0: it holds the master copy, the gathered outputs and the loss
    with cudnn_default(torch):
        ctx.time_steps(training.step, warmup=5)
    ctx.record_peak_memory()
    training.close()


def torchrun_command(nproc: int, script_args: list[str]) -> list[str]:
    """``python -m torch.distributed.run`` with the user's extra arguments (multi-node) passed through."""
    extra = shlex.split(os.environ.get(TORCHRUN_ARGS_ENV, ""))
    cmd = [sys.executable, "-m", "torch.distributed.run", *extra, "--nproc_per_node", str(nproc)]
    if not any(a.split("=")[0] in RENDEZVOUS_OPTIONS for a in extra):
        cmd += ["--master_port", str(free_port())]
    return cmd + [str(DDP_SCRIPT), *script_args]


def run_ddp(params: Mapping[str, Any], ctx: Any) -> None:
    from collector.schema import TIMING_WALL

    k = int(params["replicas"])
    cuda = ctx.device == "cuda"
    if cuda and ctx.torch.cuda.device_count() < k:
        ctx.skip(f"DDP with {k} processes needs {k} visible GPUs; this worker sees {ctx.torch.cuda.device_count()}")
    p = ctx.policy
    env: dict[str, str | None] = {}
    threads = 0
    if not cuda:
        # Split the cores between the processes, so k=1 and k=2 use the same CPUs.
        threads = max(1, ctx.info.cpu_count // k)
        env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory(prefix="imagebench-ddp-") as folder:
        out = os.path.join(folder, "rank0.json")
        script_args = [
            "--model", params["model"],
            "--batch", str(params["batch_per_replica"]),
            "--image-size", str(params["image_size"]),
            "--num-classes", str(params.get("num_classes", 1000)),
            "--device", "cuda" if cuda else "cpu",
            "--threads", str(threads),
            "--channels-last", "1" if params.get("channels_last") else "0",
            "--warmup", str(5 if cuda else 2),
            "--min-steps", str(p.min_samples),
            "--max-steps", str(p.max_samples),
            "--budget-s", str(p.budget_s),
            "--target-rel-ci", str(p.target_rel_ci),
            "--out", out,
        ]  # fmt: skip
        cmd = torchrun_command(k, script_args)
        proc = subprocess.run(cmd, env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"torchrun exited with code {proc.returncode}; its last output:\n{proc.stdout.strip()[-3000:]}")
        if not os.path.exists(out):
            if os.environ.get(TORCHRUN_ARGS_ENV):
                ctx.skip("rank 0 ran on another node (IMAGEBENCH_TORCHRUN_ARGS): that node's run records this case")
            raise RuntimeError(f"torchrun finished but rank 0 wrote no result; its last output:\n{proc.stdout.strip()[-3000:]}")
        with open(out) as f:
            result = json.load(f)
    world = int(result["world_size"])
    if world != k:
        ctx.note(f"world size {world} (multi-node): {k} processes on this node")
    ctx.set_work(items=world * int(params["batch_per_replica"]), items_unit="images")
    ctx.record("time", result["times"])
    ctx.set_timing(TIMING_WALL)
    if "peak_allocated" in result:
        ctx.record("peak_allocated", [result["peak_allocated"]])
        ctx.record("peak_reserved", [result["peak_reserved"]])


WORKLOAD = Workload(
    name="multigpu",
    family="multigpu",
    title="Multi-GPU training scaling: DataParallel and DDP",
    method=(
        "ResNet-50 (224x224, FP32, channels_last, SGD with momentum) trains on a synthetic batch of "
        "64 images per replica, so the global batch grows with the replica count (weak scaling). DDP "
        "cases start `python -m torch.distributed.run --nproc_per_node k` (torchrun) as a subprocess "
        "for k = 1, 2, 4, ... up to the GPU count (1 and the GPU count in the quick suite; none there"
        " on a single GPU): each process drives one GPU through DistributedDataParallel with NCCL "
        "(gloo and a tiny CNN on the CPU, with the cores split between the processes). Rank 0 times "
        "each whole step after warm-up with the host clock after a device synchronisation; after each"
        " step it broadcasts whether to stop (outside the timed region) so that every rank runs the "
        "same steps, and returns its step times and peak memory through a file. Multi-node runs pass "
        "torchrun arguments through the IMAGEBENCH_TORCHRUN_ARGS environment variable. With two or "
        "more GPUs, nn.DataParallel cases (as in the seeds) time the same step in the worker process,"
        " the batch split over k GPUs. The global batch is stored as the work, so throughput and the "
        "scaling efficiency (throughput at k over k times throughput at 1) are derived at report "
        "time. The cases run in one worker process: each starts k processes of its own."
    ),
    cases=cases,
    run=run,
    timeout_s=900.0,
    max_processes=1,  # each case starts k processes through torchrun: a one-off measurement
    title_zh="多 GPU 训练扩展：DataParallel 与 DDP",
    method_zh=(
        "ResNet-50（224x224，FP32，channels_last，带动量的 SGD）在每个副"
        "本 64 张的合成批次上训练，全局批大小随副本数增长（弱扩展）。DDP 用例以子进程方式启动 `python"
        " -m torch.distributed.run --nproc_per_node k`（torchrun"
        "），k = 1、2、4……直到 GPU 数（quick 套件只测 1 和 GPU 数；单 GPU 时"
        " quick 不测）：每个进程通过 DistributedDataParallel 驱动一块 GPU"
        "，通信用 NCCL（CPU 上用 gloo 和一个很小的 CNN，CPU 核在进程间平分）。rank"
        " 0 在预热后于设备同步后用主机时钟为每个完整训练步计时；每步之后它广播是否停止（不计入计时），使所"
        "有 rank 运行相同的步数，并通过文件返回步时间与峰值显存。多节点运行通过环境变量 IMAGEBENCH_TORCHRUN_ARGS"
        " 传入 torchrun 参数。两块及以上 GPU 时，nn.DataParallel 用例（与种子"
        "文章相同）在工作进程内为同样的训练步计时，批次拆分到 k 块 GPU 上。全局批大小作为工作量保存，"
        "因此吞吐与扩展效率（k 个副本的吞吐除以 k 倍单副本吞吐）在生成报告时推导。这些用例只在一个工作进"
        "程中运行：每个用例自己启动 k 个进程。"
    ),
)
