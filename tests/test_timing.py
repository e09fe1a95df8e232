"""The timing core: calibration, stopping rules, and real CPU timing."""

from __future__ import annotations

import math
import statistics
import time

import pytest

from collector.timing import (
    STOP_BUDGET,
    STOP_CI,
    STOP_MAX_SAMPLES,
    PerfCounterTimer,
    TimingPolicy,
    calibrate_k,
    median_ci_rel_width,
    time_fn,
)


class FakeTimer:
    """A block timer whose blocks take ``per_call`` seconds per call (like torch's _MockTimer)."""

    method = "fake"

    def __init__(self, per_call, clock):
        self.per_call = per_call
        self.clock = clock
        self.blocks = []

    def time_block(self, fn, k):
        for _ in range(k):
            fn()
        value = self.per_call(len(self.blocks)) * k
        self.blocks.append(k)
        self.clock.now += value
        return value, None

    def sync(self):
        pass


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_calibration_picks_a_block_at_least_min_block_long():
    clock = FakeClock()
    timer = FakeTimer(lambda i: 1e-6, clock)
    k = calibrate_k(lambda: None, timer, TimingPolicy(min_block_s=0.001))
    assert k * 1e-6 >= 0.001
    assert k <= 2 * 1.2 * 1000  # not wildly past the target


def test_fixed_k_is_respected():
    timer = FakeTimer(lambda i: 1.0, FakeClock())
    assert calibrate_k(lambda: None, timer, TimingPolicy(fixed_k=1)) == 1


def test_stops_on_ci_when_samples_are_steady():
    clock = FakeClock()
    timer = FakeTimer(lambda i: 1e-3 * (1 + 0.001 * (i % 3)), clock)
    timed = time_fn(lambda: None, timer, TimingPolicy(min_samples=10, max_samples=500, target_rel_ci=0.02, budget_s=100, warmup_s=0), clock=clock)
    assert timed.stopped == STOP_CI
    assert len(timed.per_iter) == 10
    assert all(v == pytest.approx(1e-3, rel=0.01) for v in timed.per_iter)


def test_stops_on_budget_when_samples_are_noisy():
    clock = FakeClock()
    timer = FakeTimer(lambda i: 1e-3 * (1 + (i % 2)), clock)  # alternating 1 ms / 2 ms
    policy = TimingPolicy(min_samples=5, max_samples=10_000, target_rel_ci=0.01, budget_s=0.5, warmup_s=0, min_block_s=0.001)
    timed = time_fn(lambda: None, timer, policy, clock=clock)
    assert timed.stopped == STOP_BUDGET
    assert 5 <= len(timed.per_iter) < 10_000


def test_stops_at_max_samples():
    clock = FakeClock()
    timer = FakeTimer(lambda i: 1e-3 * (1 + (i % 2)), clock)
    timed = time_fn(lambda: None, timer, TimingPolicy(min_samples=3, max_samples=7, target_rel_ci=0.0, budget_s=1e9, warmup_s=0), clock=clock)
    assert timed.stopped == STOP_MAX_SAMPLES and len(timed.per_iter) == 7


def test_warmup_runs_at_least_min_warmup_calls():
    calls = []
    clock = FakeClock()
    timer = FakeTimer(lambda i: 1e-3, clock)
    timed = time_fn(lambda: calls.append(1), timer, TimingPolicy(min_warmup=4, warmup_s=0, min_samples=3, max_samples=3), clock=clock)
    assert timed.warmup_calls == 4


class QueueingTimer(FakeTimer):
    """A GPU-like timer: ``fn`` returns at once and its work runs on ``sync``."""

    def __init__(self, per_call, clock, launch_s):
        super().__init__(per_call, clock)
        self.launch_s = launch_s
        self.queued = 0
        self.synced_work_s = 0.0

    def launch(self):
        self.clock.now += self.launch_s
        self.queued += 1

    def sync(self):
        work = self.queued * self.per_call(0)
        self.synced_work_s += work
        self.clock.now += work
        self.queued = 0


def test_warmup_waits_for_queued_work():
    """A 20 ms kernel launched in 50 us: warm-up of 0.1 s must run ~0.1 s of kernels, not 2,000."""
    clock = FakeClock()
    timer = QueueingTimer(lambda i: 20e-3, clock, launch_s=50e-6)
    policy = TimingPolicy(warmup_s=0.1, min_warmup=2, min_samples=3, max_samples=3, min_block_s=0.005)
    timed = time_fn(timer.launch, timer, policy, clock=clock)
    assert timed.warmup_calls <= 7  # 0.1 s / 20 ms, plus the call that crosses the line
    assert timer.synced_work_s <= 0.15


def test_median_ci_width():
    assert median_ci_rel_width([1.0] * 5) == math.inf
    assert median_ci_rel_width([1.0] * 50) == 0.0
    values = [1.0 + 0.01 * i for i in range(100)]
    w = median_ci_rel_width(values)
    assert 0.1 < w < 0.3  # about ±1 sqrt(n) ranks around the middle of a 1% ramp


def test_real_cpu_timing_of_a_known_delay():
    """A busy-wait of 200 us timed for real with perf_counter_ns comes back near 200 us."""

    def busy(seconds=200e-6):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    policy = TimingPolicy(warmup_s=0.01, min_block_s=0.002, min_samples=10, max_samples=30, budget_s=0.5)
    timed = time_fn(busy, PerfCounterTimer(), policy)
    assert 1 <= timed.iterations <= 13  # about a 2 ms block of 200 us calls (1.2x the target)
    median = sorted(timed.per_iter)[len(timed.per_iter) // 2]
    # Never faster than the delay; slower only by what other processes take from this
    # one (a loaded 2-core machine can double it).
    assert 199e-6 <= median <= 1e-3
    assert sum(v * timed.iterations for v in timed.per_iter) >= 0.002 * len(timed.per_iter) * 0.99
    assert timed.method == "perf_counter" and timed.wall_per_iter is None


class SimulatedGpu:
    """A CUDA stream in real time: kernels run one after another, launches queue up to ``queue``.

    ``fn`` costs the host ``issue_s`` (a busy wait) and queues a kernel of ``kernel_s``; when
    ``queue`` launches are pending the host blocks until the oldest finishes, as CUDA's
    launch queue does. Events and ``_sleep`` are queued like kernels.
    """

    cycles_per_s = 1e9

    def __init__(self, kernel_s, issue_s, queue):
        from collections import deque

        self.kernel_s, self.issue_s, self.queue = kernel_s, issue_s, queue
        self.pending = deque()
        self.tail = 0.0
        gpu = self

        class Event:
            def __init__(self, enable_timing=True):
                self.t = None

            def record(self):
                self.t = gpu.enqueue(0.0)

            def synchronize(self):
                gpu.wait_until(self.t)

            def elapsed_time(self, other):
                return (other.t - self.t) * 1e3

        class Cuda:
            pass

        class Buffer:  # the L2 flush buffer: zeroing it queues a kernel of flush_s
            def zero_(self):
                gpu.enqueue(gpu.flush_s)

        self.flush_s = 0.0
        self.int32 = "int32"
        self.empty = lambda n, dtype=None, device=None: Buffer()
        self.cuda = Cuda()
        self.cuda.Event = Event
        self.cuda.synchronize = lambda device=None: self.wait_until(self.tail)
        self.cuda._sleep = lambda cycles: self.enqueue(cycles / self.cycles_per_s)

    @staticmethod
    def wait_until(t):
        while time.perf_counter() < t:
            pass

    def enqueue(self, duration):
        now = time.perf_counter()
        while self.pending and self.pending[0] <= now:
            self.pending.popleft()
        if len(self.pending) >= self.queue:
            self.wait_until(self.pending.popleft())
            now = time.perf_counter()
        end = max(now, self.tail) + duration
        self.tail = end
        self.pending.append(end)
        return end

    def fn(self):
        self.wait_until(time.perf_counter() + self.issue_s)
        self.enqueue(self.kernel_s)


def test_cuda_timer_times_short_kernels_back_to_back_within_the_launch_queue():
    """A 20 us kernel that takes the host 40 us to launch reads 20 us, not the launch rate.

    With calls up to ``max_k`` a block fits the launch queue, so the pre-fill pause holds
    the GPU until the whole block is queued; blocks past the queue would read 40 us.
    """
    from collector.timing import CudaEventTimer

    gpu = SimulatedGpu(kernel_s=20e-6, issue_s=40e-6, queue=1024)
    timer = CudaEventTimer(gpu, flush_l2=False)
    policy = TimingPolicy(warmup_s=0.0, min_warmup=2, min_block_s=0.05, min_samples=5, max_samples=5)
    timed = time_fn(gpu.fn, timer, policy)
    assert timed.iterations <= CudaEventTimer.max_k
    assert statistics.median(timed.per_iter) == pytest.approx(20e-6, rel=0.15)


def test_cuda_timer_counts_each_call_and_not_the_l2_flush_before_it():
    """A 20 us kernel behind a 70 us flush reads 20 us: only the call's own events count."""
    from collector.timing import CudaEventTimer

    gpu = SimulatedGpu(kernel_s=20e-6, issue_s=10e-6, queue=1024)
    gpu.flush_s = 70e-6
    timer = CudaEventTimer(gpu)
    policy = TimingPolicy(warmup_s=0.0, min_warmup=2, min_block_s=0.002, min_samples=5, max_samples=5)
    timed = time_fn(gpu.fn, timer, policy)
    assert timed.iterations <= 128
    assert statistics.median(timed.per_iter) == pytest.approx(20e-6, rel=0.15)
    assert timed.wall_per_iter is None  # a flushed block's wall time is mostly flushing


def test_cuda_timer_pause_stays_short_when_blocks_are_long():
    """The issue time comes from the first calls, so a pause never grows past what queueing takes."""
    from collector.timing import CudaEventTimer

    gpu = SimulatedGpu(kernel_s=5e-6, issue_s=10e-6, queue=64)  # a queue shorter than a block
    timer = CudaEventTimer(gpu, flush_l2=False)
    for _ in range(4):
        timer.time_block(gpu.fn, 256)
    assert timer._issue_s == pytest.approx(10e-6, rel=0.5)


def test_warmup_stops_once_calls_agree_and_not_before():
    """First calls pay one-time costs (kernel selection, allocation): warm-up goes on while
    they are slow, stops as soon as three calls agree, and never runs past warmup_s."""
    clock = FakeClock()
    costs = iter([50e-3, 20e-3, 5e-3, 1e-3, 1e-3, 1e-3] + [1e-3] * 1000)

    def fn():
        clock.now += next(costs)

    timer = FakeTimer(lambda i: 1e-3, clock)
    timed = time_fn(fn, timer, TimingPolicy(min_warmup=2, warmup_s=1.0, min_samples=3, max_samples=3), clock=clock)
    assert timed.warmup_calls == 6  # the three slow calls, then three that agree

    clock = FakeClock()
    noisy = iter([1e-3, 2e-3] * 1000)  # never steady: warm-up ends at warmup_s

    def jittery():
        clock.now += next(noisy)

    timed = time_fn(jittery, FakeTimer(lambda i: 1e-3, clock), TimingPolicy(min_warmup=2, warmup_s=0.05, min_samples=3, max_samples=3), clock=clock)
    assert 30 <= timed.warmup_calls <= 40  # 0.05 s of 1.5 ms calls
