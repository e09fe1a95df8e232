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


WORKLOAD = Workload(
    name="allocator",
    family="memory",
    title="CUDA caching allocator: fragmentation, default against expandable segments",
    method=(
        "Two variable-size workloads run in a new child process per setting, once with the default "
        "caching allocator (PYTORCH_CUDA_ALLOC_CONF unset) and once with "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, the setting for fragmentation. The child is "
        "forked from a process that imported torch and never touched CUDA, and sets the variable before "
        "its first CUDA call; it reports whether the allocator's segments were expandable, and where that "
        "is not what the setting asks for, a fresh interpreter measures the case instead. "
        "random_tensors allocates tensors of log-uniform random sizes (64 KiB to 256 MiB), keeps 32 "
        "alive and frees a random one each step; varlen_transformer trains a 4-layer transformer "
        "encoder (d_model 1024) on batches of random batch size and sequence length (64 to 1024), as "
        "unpadded text does (full suite only). Both are seeded, so both settings see the same "
        "sequence. After one warm-up round, each round of steps is timed with the host clock between "
        "device synchronisations (time per step). Peak allocated memory (what tensors needed) and "
        "peak reserved memory (what the allocator held from the driver) over the whole child are "
        "recorded; their ratio, the fragmentation overhead, is derived at report time. GPU only, "
        "standard and full suites."
    ),
    cases=cases,
    run=run,
    timeout_s=600.0,
    max_processes=1,
    fork_server=True,
    title_zh="CUDA 缓存分配器：碎片化，默认设置与 expandable segments 对比",
    method_zh=(
        "两个可变尺寸负载，每种设置在一个新的子进程中运行：一次使用默认缓存分配器（不设 PYTORCH_CUDA_ALLOC_CONF"
        "），一次使用针对碎片化的 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        "。子进程由一个已导入 torch、从未使用 CUDA 的进程 fork 而来，在第一次调用 CUDA 之前设置该变量；"
        "它报告分配器的内存段是否可扩展，若与设置不符，则改用全新的解释器测量该用例。random_tensors 分配对数均匀随机大小（64 KiB 到 256 MiB）的张量，保留"
        " 32 个存活，每步随机释放一个；varlen_transformer 训练一个 4 层 transformer"
        " 编码器（d_model 1024），批大小与序列长度（64 到 1024）随机，如同不做填充的文本"
        "（只在 full 套件中）。两者都固定随机种子，因此两种设置看到相同的序列。一轮预热之后，每轮步骤在"
        "设备同步之间用主机时钟计时（每步时间）。记录整个子进程的峰值已分配显存（张量所需）与峰值已保留显存（"
        "分配器向驱动申请并持有的），两者之比即碎片化开销，在生成报告时推导。仅 GPU，standard 与"
        " full 套件。"
    ),
)
