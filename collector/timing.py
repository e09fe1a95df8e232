"""The timing core: warm-up, calibrated blocks, CUDA events or perf_counter, adaptive stop.

Only measures and returns raw per-iteration values (like ``torch.utils.benchmark.Timer``);
the one statistic computed here is the distribution-free CI of the median that decides
when to stop sampling, never something that is stored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from runformat.policy import TimingPolicy
from runformat.schema import TIMING_CUDA_EVENT, TIMING_PERF_COUNTER

# The version of how this module measures, recorded with every run (``timing_method``):
# the reporter pools run-to-run variation only between runs measured the same way.
# Raise it whenever a change here or in the worker can move what a case reads.
# 2: blocks pre-filled on the GPU, at most 256 calls a block, warm-up until steady.
# 3: on a GPU, the L2 cache is flushed before every call and each call is timed between its
#    own events (as triton's do_bench does); at most 128 calls a block.
# 4: as 3, without the pre-fill pause before a flushed block (the GPU never idles within it).
TIMING_METHOD = "4"
# Bytes written before each timed GPU call to evict its inputs from the L2 cache: triton's
# do_bench uses 256 MB, several times the L2 of any GPU so far (60 MB on an H200).
FLUSH_BYTES = 256 * 1024 * 1024

STOP_CI = "ci"
STOP_BUDGET = "budget"
STOP_MAX_SAMPLES = "max_samples"


@dataclass(frozen=True)
class Timed:
    """Raw result of timing one function: per-iteration values of every block."""

    per_iter: list[float]
    wall_per_iter: list[float] | None
    iterations: int
    method: str
    warmup_calls: int
    stopped: str


class BlockTimer(Protocol):
    """Times ``k`` back-to-back calls of ``fn``; returns (seconds, host wall seconds or None)."""

    method: str

    def time_block(self, fn: Callable[[], Any], k: int) -> tuple[float, float | None]: ...

    def sync(self) -> None: ...


class PerfCounterTimer:
    """CPU timing with ``time.perf_counter_ns`` around a block."""

    method = TIMING_PERF_COUNTER

    def time_block(self, fn: Callable[[], Any], k: int) -> tuple[float, float | None]:
        t0 = time.perf_counter_ns()
        for _ in range(k):
            fn()
        return (time.perf_counter_ns() - t0) * 1e-9, None

    def sync(self) -> None:
        pass


class CudaEventTimer:
    """GPU timing: CUDA events around each call of a block of k calls, one synchronisation per block.

    Every call starts with a cold L2 cache: a 256 MB buffer is zeroed before it, outside
    its events, as ``triton.testing.do_bench`` does. Calls back to back would find their
    inputs in the L2 the previous call left them in: a 1024x1024 fp32 matmul (12 MB of
    operands) then reads 13% faster, and a copy of a few MB reports more than the memory's
    bandwidth. A kernel inside a model reads inputs the layers before it wrote through a
    cache many times smaller than the model's working set, which the flushed call is
    closer to. The device time of a block is the sum of its calls' event intervals, so the
    flushes are never counted. A flush keeps the GPU busy longer than the host takes to
    queue the next call, so even a kernel shorter than its launch is not timed at the
    launch rate.

    ``flush_l2=False`` (the method of ``TIMING_METHOD`` 2) keeps the cache warm and times
    the k calls back to back between two events: timing each short kernel between its
    own events would then measure launch latency, and a block amortises it. For kernels
    shorter than the host's time to launch them, a block would still measure the launch
    rate, so before each block a ``torch.cuda._sleep`` kernel holds the GPU while the host
    queues the k calls
    (sized from the previous block's measured issue time): the events then time the
    kernels back to back, as a real pipeline runs them. The host wall time of the block
    (minus that pause, measured by its own event) is returned beside the device time.

    A stream accepts about a thousand pending launches before the host blocks, so a
    pre-filled block holds at most ``max_k`` calls: past the queue the host would wait for
    the pause to end and the rest of the block would be timed at the launch rate. The issue
    time that sizes the pause is measured on the first calls of a block, before the queue
    can fill.
    """

    method = TIMING_CUDA_EVENT
    max_pause_s = 0.2
    max_k = 256  # calls per pre-filled block: room for four launches a call in the queue
    _issue_probe = 32  # calls whose host time gives the issue time per call
    _cycles_per_s: float | None = None

    def __init__(self, torch_module: Any, device: Any = None, flush_l2: bool = True) -> None:
        self._torch = torch_module
        self._device = device
        cuda = torch_module.cuda
        self._mark = cuda.Event(enable_timing=True)
        self._start = cuda.Event(enable_timing=True)
        self._end = cuda.Event(enable_timing=True)
        self._issue_s: float | None = None  # host seconds to launch one call
        self._sleep = getattr(cuda, "_sleep", None)
        self._flush: Any = None
        self._starts: list[Any] = []
        self._ends: list[Any] = []
        if flush_l2:
            # Held only while this timer lives (one case's timing): a buffer kept for the
            # worker's life would count in every later case's peak memory.
            self._flush = torch_module.empty(FLUSH_BYTES // 4, dtype=torch_module.int32, device=device or "cuda")
            # Each call is timed on its own: a block needs no more calls than make its
            # mean steady (the flushes cost the GPU a 256 MB write per call).
            self.max_k = 128
        elif self._sleep is None:
            self.max_k = 1_000_000  # no pre-fill: long blocks amortise the launches instead

    def _cycles(self, seconds: float) -> int:
        cls = type(self)
        if cls._cycles_per_s is None:
            cycles = 20_000_000
            self._mark.record()
            self._sleep(cycles)
            self._start.record()
            self._start.synchronize()
            cls._cycles_per_s = cycles / max(1e-6, self._mark.elapsed_time(self._start) * 1e-3)
        return int(seconds * cls._cycles_per_s)

    def time_block(self, fn: Callable[[], Any], k: int) -> tuple[float, float | None]:
        if self._flush is not None:
            return self._time_flushed(fn, k)
        cuda = self._torch.cuda
        cuda.synchronize(self._device)
        pause = 0.0
        if self._sleep is not None and self._issue_s is not None:
            pause = min(self.max_pause_s, 1.5 * k * self._issue_s + 50e-6)
            cycles = self._cycles(pause)
        w0 = time.perf_counter_ns()
        if pause:
            self._mark.record()
            self._sleep(cycles)
        self._start.record()
        probe = min(k, self._issue_probe)
        i0 = time.perf_counter_ns()
        for _ in range(probe):
            fn()
        self._issue_s = (time.perf_counter_ns() - i0) * 1e-9 / probe
        for _ in range(k - probe):
            fn()
        self._end.record()
        self._end.synchronize()
        wall = (time.perf_counter_ns() - w0) * 1e-9
        if pause:
            wall -= self._mark.elapsed_time(self._start) * 1e-3
        return self._start.elapsed_time(self._end) * 1e-3, wall

    def _time_flushed(self, fn: Callable[[], Any], k: int) -> tuple[float, None]:
        """k calls, each after an L2 flush and between its own events; no host wall time
        (the block's wall time would be mostly flushing)."""
        cuda = self._torch.cuda
        while len(self._starts) < k:
            self._starts.append(cuda.Event(enable_timing=True))
            self._ends.append(cuda.Event(enable_timing=True))
        cuda.synchronize(self._device)
        flush, starts, ends = self._flush, self._starts, self._ends
        # No pre-fill pause: each flush keeps the GPU busy longer than the host takes to
        # queue the next call, so the calls are never timed at the launch rate, and the GPU
        # works without a break, as in a real pipeline (and in do_bench).
        for i in range(k):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        ends[k - 1].synchronize()
        return sum(starts[i].elapsed_time(ends[i]) for i in range(k)) * 1e-3, None

    def sync(self) -> None:
        self._torch.cuda.synchronize(self._device)


def median_ci_rel_width(values: list[float], z: float = 1.959964) -> float:
    """Width of the distribution-free 95% CI of the median, relative to the median.

    Uses the order statistics at ranks n/2 -/+ z*sqrt(n)/2 (normal approximation to the
    binomial), which needs no distributional assumption. Returns ``inf`` for n < 6,
    where the interval is the whole sample range or wider.
    """
    n = len(values)
    if n < 6:
        return math.inf
    s = sorted(values)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    if med <= 0:
        return math.inf
    return (s[hi] - s[lo]) / med


STEADY_CALLS = 3
STEADY_REL = 0.10


def is_steady(times: list[float], calls: int = STEADY_CALLS, rel: float = STEADY_REL) -> bool:
    """True when the last ``calls`` warm-up calls took times within ``rel`` of each other.

    Warm-up exists for first-call costs (kernel selection, allocation, lazy loading): once
    consecutive calls agree, they are paid, and warming up longer measures nothing new.
    """
    if len(times) < calls:
        return False
    last = times[-calls:]
    low = min(last)
    return low > 0 and max(last) <= low * (1 + rel)


def calibrate_k(fn: Callable[[], Any], timer: BlockTimer, policy: TimingPolicy) -> int:
    """Smallest power-of-two-ish k whose block lasts at least ``policy.min_block_s``.

    Never more than the policy's ``max_k`` or the timer's own ``max_k`` (a pre-filled CUDA
    block must fit the launch queue; its events need no longer block to be precise).
    """
    if policy.fixed_k is not None:
        return policy.fixed_k
    max_k = min(policy.max_k, getattr(timer, "max_k", policy.max_k))
    k = 1
    while k < max_k:
        elapsed, _ = timer.time_block(fn, k)
        if elapsed >= policy.min_block_s:
            return k
        if elapsed <= 0:
            k = min(max_k, k * 10)
            continue
        # Aim a little past the target so the next try usually suffices.
        k = min(max_k, max(k * 2, math.ceil(k * 1.2 * policy.min_block_s / elapsed)))
    return max_k


def time_fn(
    fn: Callable[[], Any],
    timer: BlockTimer,
    policy: TimingPolicy,
    clock: Callable[[], float] = time.perf_counter,
    on_measure: Callable[[bool], None] | None = None,
) -> Timed:
    """Warm up ``fn``, calibrate a block size, then time blocks until the stopping rule.

    Warm-up waits for each call to finish, so ``warmup_s`` bounds the work done, not
    just the host's time to queue it.

    The stopping rule: at least ``min_samples`` blocks; then stop as soon as the 95% CI
    of the median per-iteration time is within ``target_rel_ci`` of the median, or the
    budget is spent, or ``max_samples`` blocks are taken.

    ``on_measure(True)`` is called as the timed blocks begin and ``on_measure(False)``
    as they end (the GPU-state sampler runs in between).
    """
    warm_start = clock()
    calls = 0
    times: list[float] = []
    while True:
        t0 = clock()
        fn()
        # On a GPU a call only queues work: without waiting for it, the host would queue
        # warmup_s worth of launches (a thousand 20 ms matmuls) and the sync after the loop
        # would take seconds per case.
        timer.sync()
        t1 = clock()
        times.append(t1 - t0)
        calls += 1
        if calls < policy.min_warmup:
            continue
        if t1 - warm_start >= policy.warmup_s or is_steady(times):
            break
    k = calibrate_k(fn, timer, policy)
    per_iter: list[float] = []
    wall: list[float] = []
    if on_measure is not None:
        on_measure(True)
    start = clock()
    stopped = STOP_MAX_SAMPLES
    try:
        while len(per_iter) < policy.max_samples:
            elapsed, host = timer.time_block(fn, k)
            per_iter.append(elapsed / k)
            if host is not None:
                wall.append(host / k)
            if len(per_iter) < policy.min_samples:
                continue
            if median_ci_rel_width(per_iter) <= policy.target_rel_ci:
                stopped = STOP_CI
                break
            if clock() - start >= policy.budget_s:
                stopped = STOP_BUDGET
                break
    finally:
        if on_measure is not None:
            on_measure(False)
    return Timed(
        per_iter=per_iter,
        wall_per_iter=wall or None,
        iterations=k,
        method=timer.method,
        warmup_calls=calls,
        stopped=stopped,
    )
