"""Numerical drift between stacks: a fixed-seed deterministic training run's losses and checksum."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import check_precision, tier
from collector.workloads._procs import run_forked

STEPS = {"tiny": 5, "small": 20, "quick": 50, "standard": 100, "full": 200}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    level = tier(suite, device)
    out = [dict(model="small-cnn", steps=STEPS[level], batch=32, precision="fp32", seed=0)]
    # bf16 drifts more than fp32 between stacks; quick keeps the one fp32 child (start-up dominates).
    if level in ("standard", "full") and device.bf16:
        out.append(dict(model="small-cnn", steps=STEPS[level], batch=32, precision="bf16", seed=0))
    return out


def run(params: Mapping[str, Any], ctx: Any) -> None:
    check_precision(ctx, params["precision"])
    args = [
        "numerics",
        "--device", ctx.device,
        "--steps", str(params["steps"]),
        "--batch", str(params["batch"]),
        "--precision", params["precision"],
        "--seed", str(params["seed"]),
    ]  # fmt: skip
    # cuBLAS needs a fixed workspace layout to be deterministic; a child keeps the worker's own
    # settings (and torch.use_deterministic_algorithms) untouched.
    result = run_forked(args, env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, timeout=600)
    ctx.record("loss", result["losses"])
    ctx.record("checksum", [result["checksum"]])


WORKLOAD = Workload(
    name="numerics",
    family="numerics",
    title="Numerical drift: losses and output checksum of a fixed-seed run",
    method=(
        "A small CNN (two conv-BatchNorm-ReLU blocks, a spatial mean and a linear head) is created "
        "from a fixed seed on the CPU and moved to the device, so every stack starts from the same "
        "weights, and trains with SGD (lr 0.05, momentum 0.9) for a fixed number of steps (50 in the "
        "quick suite, 100 in standard, 200 in full) on four fixed synthetic batches of 32 images "
        "drawn from a seeded CPU generator, in FP32 and, in the standard and full suites on GPUs with"
        " bf16, under bf16 autocast. It runs in a child process with "
        "torch.use_deterministic_algorithms(True), cuDNN benchmarking off and "
        "CUBLAS_WORKSPACE_CONFIG=:4096:8, so repeated runs on one stack give the same bits. The loss "
        "after every step is recorded (sample index = step), then the sum of the trained model's "
        "outputs on a fixed evaluation batch (checksum). Nothing is timed: the reporter shows where "
        "two stacks' loss curves and checksums part. One worker process."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    max_processes=1,
    fork_server=True,
    title_zh="数值漂移：固定种子训练的损失与输出校验和",
    method_zh=(
        "一个小 CNN（两个 conv-BatchNorm-ReLU 块、空间均值和一个线性头）在 CPU "
        "上以固定种子创建后移到设备，因此每个软件栈都从相同的权重出发；它在四个固定的合成批次（每批 32 张"
        "图像，由固定种子的 CPU 生成器产生）上用 SGD（lr 0.05，momentum 0.9）训练"
        "固定步数（quick 50 步，standard 100 步，full 200 步），用 FP32，"
        "standard 与 full 套件在支持 bf16 的 GPU 上另用 bf16 autocast"
        "。它在子进程中运行，开启 torch.use_deterministic_algorithms(True)"
        "，关闭 cuDNN benchmark，并设置 CUBLAS_WORKSPACE_CONFIG=:4096:8"
        "，使同一软件栈上的重复运行得到相同的比特。记录每一步之后的损失（样本序号即步数），以及训练后模型在固"
        "定评估批次上输出之和（checksum）。不计时：报告展示两个软件栈的损失曲线与校验和从哪里开始分开"
        "。只用一个工作进程。"
    ),
)
