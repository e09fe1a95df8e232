"""Child processes of the end-to-end workloads (not a workload).

``python -m collector.workloads._children MODE ...`` runs one of:

* ``allocator``: a variable-size allocation pattern under the environment's allocator settings
  (the parent sets ``PYTORCH_CUDA_ALLOC_CONF``), reporting peak allocated and reserved memory;
* ``probe``: one training step at one batch size, reporting whether it ran out of memory;
* ``numerics``: a fixed-seed model trained with deterministic algorithms, reporting the loss
  at every step and a checksum of the trained model's output.

Each prints one result line for ``_procs.run_child``, or, forked from the worker's fork
server (``forked_main``), sends it to ``_procs.run_forked``. ``concurrent_task`` is the
multiprocessing target of the concurrent_inference workload (started from that fork server).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from types import SimpleNamespace
from typing import Any

from collector.protocol import print_result


def is_oom(e: BaseException) -> bool:
    """True for out-of-memory errors of the GPU (OutOfMemoryError) and of the CPU allocator."""
    text = str(e).lower()
    return "OutOfMemoryError" in type(e).__name__ or "out of memory" in text or "can't allocate memory" in text


def describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


def memory_peaks(torch: Any, device: str) -> dict[str, Any]:
    if device != "cuda":
        return {}
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    return {
        "peak_allocated": torch.cuda.max_memory_allocated(),
        "peak_reserved": torch.cuda.max_memory_reserved(),
        "alloc_retries": stats.get("num_alloc_retries", 0),
        "ooms": stats.get("num_ooms", 0),
    }


# -- allocator -------------------------------------------------------------------------------
def run_allocator(a: argparse.Namespace) -> dict[str, Any]:
    import os

    import torch

    device = a.device
    rng = random.Random(a.seed)
    torch.manual_seed(a.seed)
    if a.pattern == "random_tensors":
        live: list[Any] = []
        lo, hi = math.log(a.min_bytes), math.log(a.max_bytes)

        def iteration() -> None:
            # Log-uniform sizes: many small blocks and a few large ones, freed in random order,
            # leave holes the caching allocator may not be able to reuse.
            numel = max(1, int(math.exp(rng.uniform(lo, hi))) // 4)
            live.append(torch.empty(numel, device=device).fill_(1.0))
            if len(live) > a.live:
                live.pop(rng.randrange(len(live)))

    elif a.pattern == "varlen_transformer":
        layer = torch.nn.TransformerEncoderLayer(a.d_model, a.heads, 4 * a.d_model, dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
        batches = [int(b) for b in a.batches.split(",")]

        def iteration() -> None:
            # Variable-length training batches, as with unpadded text: every step a new shape.
            b, s = rng.choice(batches), rng.randint(a.min_seq, a.max_seq)
            x = torch.randn(b, s, a.d_model, device=device)
            optimizer.zero_grad(set_to_none=True)
            model(x).float().pow(2).mean().backward()
            optimizer.step()

    else:
        raise ValueError(f"unknown allocator pattern {a.pattern!r}")

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    round_times = []
    for r in range(a.rounds + 1):
        rng.seed(a.seed)  # every round replays the same sequence of sizes
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            iteration()
        sync()
        if r > 0:  # round 0 warms up (kernels, first cudaMallocs)
            round_times.append(time.perf_counter() - t0)
    return {
        "round_times": round_times,
        "steps": a.steps,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "expandable_segments": expandable_segments(torch, device),
        **memory_peaks(torch, device),
    }


def expandable_segments(torch: Any, device: str) -> bool | None:
    """Whether the CUDA caching allocator's segments are expandable, as its snapshot says.

    What the allocator did, not what the environment asked for: the parent checks that the
    setting took effect. ``None`` off CUDA or where the snapshot does not say.
    """
    if device != "cuda":
        return None
    flags = [seg.get("is_expandable") for seg in torch.cuda.memory_snapshot()]
    if not flags or any(f is None for f in flags):
        return None
    return any(flags)


# -- max_batch probes ------------------------------------------------------------------------
def run_probe(a: argparse.Namespace) -> dict[str, Any]:
    import torch

    from collector.workloads import _models

    ctx = SimpleNamespace(torch=torch, device=a.device)
    try:
        if _models.is_bert(a.model):
            training = _models.bert_training(ctx, model=a.model, batch=a.batch, seq=a.seq, precision=a.precision)
        else:
            training = _models.image_training(
                ctx,
                model=a.model,
                batch=a.batch,
                image_size=a.image_size,
                num_classes=a.num_classes,
                precision=a.precision,
                channels_last=a.channels_last,
            )
        # Two steps: the optimizer's state (momentum, Adam moments) exists only from the first
        # update on, so the second step is the one with the steady-state footprint.
        for _ in range(2):
            training.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
    except Exception as e:
        if is_oom(e):
            return {"ok": False, "oom": True, "error": describe(e)}
        raise
    result = {"ok": True, "oom": False, **memory_peaks(torch, a.device)}
    if a.device == "cuda":
        # What stays whatever the batch (weights, gradients, optimizer state: the step's
        # activations are freed by now) and what this process could hold at most, for the
        # search's first guess at the limit.
        free, _ = torch.cuda.mem_get_info()
        result["resident"] = torch.cuda.memory_allocated()
        result["capacity"] = free + torch.cuda.memory_reserved()
    return result


# -- numerics --------------------------------------------------------------------------------
def run_numerics(a: argparse.Namespace) -> dict[str, Any]:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    device = a.device

    class SmallCNN(nn.Module):
        """Conv-BN-ReLU twice, a mean over space, a linear head: all ops with deterministic
        CUDA kernels (AdaptiveAvgPool2d's backward has none, so the mean stands in for it)."""

        def __init__(self) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
            self.c2, self.b2 = nn.Conv2d(16, 32, 3, padding=1, stride=2, bias=False), nn.BatchNorm2d(32)
            self.fc = nn.Linear(32, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = F.relu(self.b1(self.c1(x)))
            x = F.relu(self.b2(self.c2(x)))
            return self.fc(x.mean(dim=(2, 3)))

    # Weights and data come from the CPU generator, then move: the same start on every device.
    torch.manual_seed(a.seed)
    model = SmallCNN()
    g = torch.Generator().manual_seed(a.seed)
    xs = torch.randn(4, a.batch, 3, 32, 32, generator=g)
    ys = torch.randint(0, 10, (4, a.batch), generator=g)
    x_eval = torch.randn(a.batch, 3, 32, 32, generator=g)
    model = model.to(device)
    xs, ys, x_eval = xs.to(device), ys.to(device), x_eval.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    dtype = {"fp32": None, "bf16": torch.bfloat16}[a.precision]
    losses = []
    for step in range(a.steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(model(xs[step % 4]), ys[step % 4])
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    model.eval()
    with torch.no_grad():
        checksum = float(model(x_eval).double().sum().item())
    return {"losses": losses, "checksum": checksum, "deterministic": torch.are_deterministic_algorithms_enabled()}


# -- concurrent inference (multiprocessing target) ---------------------------------------------
def concurrent_task(index: int, spec: dict[str, Any], ready: Any, results: Any, go: Any, start_at: Any) -> None:
    """One inference task: load, warm up, report ready, then run until the shared deadline.

    Reports the time of every completed request relative to the common start (monotonic
    clocks agree across processes on one host) so the parent can sum throughput per window.
    """
    try:
        import torch

        from collector.workloads._models import build_image_model

        if spec.get("threads"):
            torch.set_num_threads(spec["threads"])
        device = spec["device"]
        if device == "cuda" and spec.get("memory_fraction"):
            torch.cuda.set_per_process_memory_fraction(float(spec["memory_fraction"]))
        model = build_image_model(spec["model"], 1000).eval().to(device)
        x = torch.randn(spec["batch"], 3, spec["image_size"], spec["image_size"], device=device)

        def request() -> None:
            with torch.inference_mode():
                model(x)
            if device == "cuda":
                torch.cuda.synchronize()

        for _ in range(3):
            request()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
    except BaseException as e:
        ready.put((index, describe(e)))
        return
    ready.put((index, None))
    if not go.wait(spec["ready_timeout_s"]):
        results.put((index, {"error": "never told to start"}))
        return
    t_start = start_at.value
    end = t_start + spec["duration_s"]
    while time.monotonic() < t_start:
        time.sleep(0.0005)
    done: list[float] = []
    try:
        while True:
            request()
            now = time.monotonic()
            if now >= end:
                break
            done.append(now - t_start)
        results.put((index, {"error": None, "completions": done, **memory_peaks(torch, device)}))
    except BaseException as e:
        results.put((index, {"error": describe(e)}))


# -- forked from the fork server (``_procs.run_forked``) ---------------------------------------
def forked_main(argv: list[str], env: dict[str, str | None], conn: Any) -> None:
    """Run one mode as ``main`` would, in a process forked from the fork server.

    Sends ``(None, result)`` on ``conn``, or ``(error text, None)`` and exits with code 1.
    Sets ``env`` first, before anything touches CUDA, and dies with the fork server (which
    ends with its worker), so a killed worker leaves no child running.
    """
    import os
    import traceback

    _die_with_parent()
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        a = parse(argv)
        result = MODES[a.mode](a)
    except BaseException:
        conn.send((traceback.format_exc()[-2000:].strip(), None))
        conn.close()
        raise SystemExit(1) from None
    conn.send((None, result))
    conn.close()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent ends (elsewhere, nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# -- command line ----------------------------------------------------------------------------
def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m collector.workloads._children")
    sub = p.add_subparsers(dest="mode", required=True)
    al = sub.add_parser("allocator")
    al.add_argument("--pattern", required=True)
    al.add_argument("--device", default="cuda")
    al.add_argument("--steps", type=int, default=500)
    al.add_argument("--rounds", type=int, default=3)
    al.add_argument("--seed", type=int, default=0)
    al.add_argument("--min-bytes", type=int, default=1 << 16)
    al.add_argument("--max-bytes", type=int, default=1 << 28)
    al.add_argument("--live", type=int, default=32)
    al.add_argument("--d-model", type=int, default=512)
    al.add_argument("--heads", type=int, default=8)
    al.add_argument("--layers", type=int, default=4)
    al.add_argument("--batches", default="4,8,16,32")
    al.add_argument("--min-seq", type=int, default=32)
    al.add_argument("--max-seq", type=int, default=512)
    pr = sub.add_parser("probe")
    pr.add_argument("--model", required=True)
    pr.add_argument("--batch", type=int, required=True)
    pr.add_argument("--device", default="cuda")
    pr.add_argument("--image-size", type=int, default=224)
    pr.add_argument("--num-classes", type=int, default=1000)
    pr.add_argument("--seq", type=int, default=128)
    pr.add_argument("--precision", default="fp32")
    pr.add_argument("--channels-last", action="store_true")
    nu = sub.add_parser("numerics")
    nu.add_argument("--device", default="cuda")
    nu.add_argument("--steps", type=int, default=50)
    nu.add_argument("--batch", type=int, default=32)
    nu.add_argument("--precision", default="fp32")
    nu.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


MODES = {"allocator": run_allocator, "probe": run_probe, "numerics": run_numerics}


def main(argv: list[str] | None = None) -> None:
    a = parse(sys.argv[1:] if argv is None else argv)
    print_result(MODES[a.mode](a))


if __name__ == "__main__":
    main()
