"""CUDA caching allocator: fragmentation under variable sizes, default against expandable segments."""

from __future__ import annotations

from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload
from collector.workloads._models import at_least, tier
from collector.workloads._procs import run_child, run_forked

ALLOC_CONF = {"default": None, "expandable_segments": "expandable_segments:True"}

# Child arguments per pattern and scale.
PATTERNS: dict[str, dict[str, dict[str, Any]]] = {
    "random_tensors": {
        "tiny": dict(steps=200, rounds=2, min_bytes=1 << 12, max_bytes=1 << 22, live=16),
        "gpu": dict(steps=2000, rounds=3, min_bytes=1 << 16, max_bytes=1 << 28, live=32),
    },
    "varlen_transformer": {
        "tiny": dict(steps=5, rounds=2, d_model=64, heads=4, layers=2, batches="2,4", min_seq=8, max_seq=64),
        "gpu": dict(steps=40, rounds=3, d_model=1024, heads=16, layers=4, batches="4,8,16,32", min_seq=64, max_seq=1024),
    },
}


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    if not device.is_cuda:
        return []  # the caching allocator and its settings exist on CUDA only
    level = tier(suite, device)
    if level in ("tiny", "small"):
        patterns = ["random_tensors", "varlen_transformer"]
        scale = "tiny"
    elif level == "quick":
        return []  # a memory diagnosis, not a headline: standard and full measure it
    else:
        # The transformer pattern trains for ~20 s per setting: the full suite adds it.
        patterns = ["random_tensors"] + (["varlen_transformer"] if at_least(level, "full") else [])
        scale = "gpu"
    return [dict(pattern=p, alloc_conf=c, scale=scale) for p in patterns for c in ALLOC_CONF]


# Whether a forked child's allocator has shown the setting asked for; once it has not (or
# could not say) in this worker, its later cases start a fresh interpreter at once.
_FORK_TRUSTED = True


def _distrust_fork() -> None:
    global _FORK_TRUSTED
    _FORK_TRUSTED = False


def run(params: Mapping[str, Any], ctx: Any) -> None:
    import os

    from runformat.schema import TIMING_WALL

    if ctx.device != "cuda":
        ctx.skip("the CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF) exists on GPUs only")
    setting = params["alloc_conf"]
    if setting not in ALLOC_CONF:
        raise ValueError(f"unknown alloc_conf {setting!r}; known: {', '.join(ALLOC_CONF)}")
    inherited = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    if inherited:
        ctx.note(f"the stack's PYTORCH_CUDA_ALLOC_CONF={inherited!r} is replaced in this case's child")
    args = ["allocator", "--pattern", params["pattern"], "--device", "cuda", "--seed", "0"]
    for key, value in PATTERNS[params["pattern"]][params["scale"]].items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    env = {"PYTORCH_CUDA_ALLOC_CONF": ALLOC_CONF[setting]}
    # A child forked from the fork server starts with torch imported and sets the variable
    # before it touches CUDA (3.5 s less than a fresh interpreter on an H200 host). The
    # allocator reads it when CUDA first allocates; the child reports what the allocator
    # did, and where that is not what was asked for, or cannot be read, a fresh interpreter
    # measures the case instead.
    result = run_forked(args, env=env, timeout=300) if _FORK_TRUSTED else None
    if result is None or result.get("expandable_segments") != (setting == "expandable_segments"):
        if result is not None:
            _distrust_fork()  # this stack's later cases go to a fresh interpreter at once
        result = run_child(args, env=env, timeout=300)
        if result.get("expandable_segments") not in (None, setting == "expandable_segments"):
            raise RuntimeError(
                f"PYTORCH_CUDA_ALLOC_CONF={env['PYTORCH_CUDA_ALLOC_CONF']!r} did not take effect: the allocator's "
                f"snapshot reports expandable_segments={result['expandable_segments']}"
            )
    steps = int(result["steps"])
    ctx.set_work(items=steps, items_unit="allocations" if params["pattern"] == "random_tensors" else "steps")
    ctx.record("time", [t / steps for t in result["round_times"]], iterations=steps)
    ctx.set_timing(TIMING_WALL)
    ctx.record("peak_allocated", [result["peak_allocated"]])
    ctx.record("peak_reserved", [result["peak_reserved"]])
    if result.get("alloc_retries") or result.get("ooms"):
        ctx.note(f"allocator retries (cudaMalloc failed, cache freed, tried again): {result.get('alloc_retries')}; OOMs: {result.get('ooms')}")


WORKLOAD = Workload.described(
    "allocator",
    cases=cases,
    run=run,
    timeout_s=600.0,
    max_processes=1,
    fork_server=True,
)
