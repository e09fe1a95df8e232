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


WORKLOAD = Workload.described(
    "numerics",
    cases=cases,
    run=run,
    timeout_s=600.0,
    max_processes=1,
    fork_server=True,
)
