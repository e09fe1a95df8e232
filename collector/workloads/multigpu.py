"""Data-parallel training scaling: nn.DataParallel and DDP through torchrun, 1..N replicas, 1..M nodes."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import cudnn_default, image_training, require, tier
from collector.workloads._procs import child_env, free_port

DDP_SCRIPT = Path(__file__).with_name("_ddp.py")
# torchrun arguments for the multi-node cases, set by `collector run --nnodes ...` (or by hand):
# the worker processes inherit it, and the fingerprint records it among the IMAGEBENCH_ variables.
TORCHRUN_ARGS_ENV = "IMAGEBENCH_TORCHRUN_ARGS"
# torchrun flags that take no value (every other option is followed by its value).
_TORCHRUN_FLAGS = {"--standalone", "--no-python", "--module", "-m", "--run-path", "--redirects-none"}
# Options the workload sets per case; the user's values of these are read, not passed on.
_PER_CASE = {"--nnodes", "--nproc-per-node", "--rdzv-id", "--standalone"}
# How long a process group waits for a peer before it fails the step (gloo and NCCL): a node
# that dies mid-step turns into a failed case within this time rather than a hung one.
PG_TIMEOUT_S = 300


@dataclass(frozen=True)
class TorchrunSettings:
    """What ``IMAGEBENCH_TORCHRUN_ARGS`` asks for: node count, processes per node, the rest as given."""

    nnodes: int = 1
    nproc_per_node: int | None = None
    rdzv_id: str = "imagebench"
    extra: tuple[str, ...] = field(default_factory=tuple)


def _option_name(token: str) -> str:
    """``--nproc_per_node=2`` -> ``--nproc-per-node``: torchrun accepts both spellings."""
    return token.split("=", 1)[0].replace("_", "-") if token.startswith("--") else token


def parse_torchrun_args(text: str) -> TorchrunSettings:
    """Split torchrun arguments into the node count, processes per node, rendezvous id and the rest.

    Raises ``ValueError`` naming the option when ``--nnodes`` or ``--nproc-per-node`` is not a
    positive integer (an elastic range such as ``1:4`` would make the world size, and so the
    case, vary from run to run).
    """
    tokens = shlex.split(text)
    values: dict[str, str] = {}
    extra: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = _option_name(token)
        if "=" in token and token.startswith("--"):
            value, step = token.split("=", 1)[1], 1
        elif name in _TORCHRUN_FLAGS or i + 1 >= len(tokens) or not token.startswith("-"):
            value, step = None, 1
        else:
            value, step = tokens[i + 1], 2
        if name in _PER_CASE:
            if value is not None:
                values[name] = value
        else:
            extra += tokens[i : i + step]
        i += step
    counts = {}
    for name in ("--nnodes", "--nproc-per-node"):
        if name in values:
            try:
                counts[name] = int(values[name])
            except ValueError:
                raise ValueError(f"{TORCHRUN_ARGS_ENV}: {name} {values[name]!r} must be a whole number") from None
            if counts[name] < 1:
                raise ValueError(f"{TORCHRUN_ARGS_ENV}: {name} {values[name]!r} must be at least 1")
    return TorchrunSettings(
        nnodes=counts.get("--nnodes", 1),
        nproc_per_node=counts.get("--nproc-per-node"),
        rdzv_id=values.get("--rdzv-id", "imagebench"),
        extra=tuple(extra),
    )


def torchrun_settings() -> TorchrunSettings:
    """The settings of this node's multi-node run (one node when the variable is unset)."""
    return parse_torchrun_args(os.environ.get(TORCHRUN_ARGS_ENV, ""))


def replica_counts(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    counts, k = [], 1
    while k < n:
        counts.append(k)
        k *= 2
    return counts + [n]


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    settings = torchrun_settings()
    single = _single_node_cases(suite, device, settings.nproc_per_node)
    if settings.nnodes < 2:
        return single
    # Every node lists the same multi-node cases (same parameters, same order), so the
    # nodes meet in each case's rendezvous; replicas is the number of processes per node.
    ddp = [c for c in single if c["mode"] == "ddp"]
    if not ddp:  # the quick suite lists no DDP on one GPU; across nodes there is something to scale
        ddp = [c for c in _single_node_cases("standard", device, settings.nproc_per_node) if c["mode"] == "ddp"]
    return single + [dict(c, nodes=settings.nnodes) for c in ddp]


def _single_node_cases(suite: str, device: DeviceInfo, nproc: int | None) -> list[dict[str, Any]]:
    level = tier(suite, device)
    if not device.is_cuda:
        procs = replica_counts(nproc or min(2, max(1, device.cpu_count)))
        batch = 8 if level == "tiny" else 16
        return [dict(mode="ddp", replicas=k, model="cnn-tiny", image_size=32, batch_per_replica=batch) for k in procs]
    n = max(1, nproc or device.count)
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
    if n >= 2:  # DataParallel as the published write-ups use it; its 1-GPU case is the baseline of its scaling
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


def torchrun_command(nproc: int, script_args: list[str], *, nodes: int = 1, case_key: str = "") -> list[str]:
    """``python -m torch.distributed.run`` for one case.

    One node: a private rendezvous on a free local port. Several nodes: the user's torchrun
    arguments (``IMAGEBENCH_TORCHRUN_ARGS``: rendezvous backend and endpoint, node rank, ...)
    with this case's node count and processes per node, and a rendezvous id of its own
    (``<--rdzv-id>-<hash of the case>``), so that consecutive cases never join each other's
    rendezvous. Underscore spellings: every torchrun since 1.10 accepts them.
    """
    base = [sys.executable, "-m", "torch.distributed.run"]
    if nodes < 2:
        return base + ["--nproc_per_node", str(nproc), "--master_port", str(free_port()), str(DDP_SCRIPT), *script_args]
    settings = torchrun_settings()
    rdzv_id = f"{settings.rdzv_id}-{hashlib.sha256(case_key.encode()).hexdigest()[:12]}"
    return base + [
        "--nnodes", str(nodes), *settings.extra, "--nproc_per_node", str(nproc), "--rdzv_id", rdzv_id,
        str(DDP_SCRIPT), *script_args,
    ]  # fmt: skip


RENDEZVOUS_LOST = ("RendezvousConnectionError", "RendezvousClosedError", "RendezvousTimeoutError")


def _root_cause(output: str) -> str:
    """``: first failure rank 1, exit code -9 (SIGKILL)`` from torchrun's failure summary, or, when
    this node's agent lost the rendezvous itself (the node that held the c10d store died before its
    ranks could report), that instead; empty if neither is in the output."""
    if "Root Cause" not in output:
        lost = next((e for e in RENDEZVOUS_LOST if e in output), None)
        return f": this node's agent lost the rendezvous ({lost}); another node died or left" if lost else ""
    block = output[output.rindex("Root Cause"):].splitlines()
    fields = {}
    for line in block[1:12]:
        key, _, value = line.partition(":")
        if key.strip() in ("rank", "exitcode") and value.strip():
            fields[key.strip()] = value.strip().split(" (pid")[0] + (" (SIGKILL)" if "SIGKILL" in value else "")
    return f": first failure rank {fields['rank']}, exit code {fields.get('exitcode', '?')}" if "rank" in fields else ""


def run_ddp(params: Mapping[str, Any], ctx: Any, *, script: Path | None = None, workload: str = "multigpu") -> None:
    """One DDP case through torchrun; ``script`` replaces ``_ddp.py`` (tests inject faults with it)."""
    from runformat.schema import TIMING_WALL, case_id_for

    k = int(params["replicas"])
    nodes = int(params.get("nodes", 1))
    cuda = ctx.device == "cuda"
    if cuda and ctx.torch.cuda.device_count() < k:
        ctx.skip(f"DDP with {k} processes needs {k} visible GPUs; this worker sees {ctx.torch.cuda.device_count()}")
    if nodes > 1 and torchrun_settings().nnodes != nodes:
        ctx.skip(f"a {nodes}-node case needs `collector run --nnodes {nodes}` on every node; this run has "
                 f"{torchrun_settings().nnodes}")
    p = ctx.policy
    env: dict[str, str | None] = {}
    threads = 0
    if not cuda:
        # Split the cores between the processes, so k=1 and k=2 use the same CPUs.
        threads = max(1, ctx.info.cpu_count // k)
        env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory(prefix="imagebench-ddp-") as folder:
        # torchrun keeps its per-run log folder (``torchelastic_*``) in the temp folder and
        # never removes it: one per case, left in /tmp. Here it goes with the case's folder.
        env["TMPDIR"] = folder
        out = os.path.join(folder, "node.json")
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
            "--pg-timeout-s", str(PG_TIMEOUT_S),
            "--out", out,
        ]  # fmt: skip
        cmd = torchrun_command(k, script_args, nodes=nodes, case_key=case_id_for(workload, params))
        if script is not None:
            cmd[cmd.index(str(DDP_SCRIPT))] = str(script)
        proc = subprocess.run(cmd, env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if proc.returncode != 0:
            where = f" on this node of {nodes}" if nodes > 1 else ""
            raise RuntimeError(f"torchrun exited with code {proc.returncode}{where}{_root_cause(proc.stdout)}; "
                               f"its last output:\n{proc.stdout.strip()[-3000:]}")
        if not os.path.exists(out):
            raise RuntimeError(f"torchrun finished but this node's first rank wrote no result; its last output:\n{proc.stdout.strip()[-3000:]}")
        with open(out) as f:
            result = json.load(f)
    world = int(result["world_size"])
    if world != nodes * k:
        raise RuntimeError(f"the rendezvous formed a world of {world} processes; this case needs {nodes} x {k}")
    ctx.set_work(items=world * int(params["batch_per_replica"]), items_unit="images")
    ctx.set_timing(TIMING_WALL)
    if nodes > 1:
        ctx.note(f"node {result['group_rank']} of {nodes} (ranks {result['rank']}..{result['rank'] + k - 1} of {world})")
    if int(result["rank"]) == 0:
        ctx.record("time", result["times"])  # the scaling result: rank 0's steps
    else:
        # Another node holds rank 0 and records the case's time; this node's steps (the same
        # synchronised steps, seen here) are kept as its own part, never as a second replicate.
        ctx.record("wall_time", result["times"])
    if "peak_allocated" in result:
        ctx.record("peak_allocated", [result["peak_allocated"]])
        ctx.record("peak_reserved", [result["peak_reserved"]])


WORKLOAD = Workload.described(
    "multigpu",
    cases=cases,
    run=run,
    timeout_s=900.0,
    max_processes=1,  # each case starts k processes through torchrun: a one-off measurement
)
