"""What a workload's ``run`` is handed: the device, the timing policy, and the recorder.

A workload measures through ``Context`` and never writes files: the worker turns what
was recorded into one case's rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from runformat.policy import TimingPolicy
from runformat.schema import TIMING_NONE, TIMING_ONESHOT, TIMING_WALL, TIMINGS, metric
from collector.timing import CudaEventTimer, PerfCounterTimer, Timed, time_fn
from collector.workloads import DeviceInfo


class SkipCase(Exception):
    """Raised by a workload that cannot run here (missing package, unsupported dtype)."""


@dataclass
class Recorded:
    """Everything one case recorded, in the order it was recorded."""

    samples: list[tuple[str, float, int]] = field(default_factory=list)  # (metric, value, iterations)
    timing: str = TIMING_NONE
    flops: float | None = None
    bytes: float | None = None
    items: float | None = None
    items_unit: str | None = None
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] | None = None  # effective precision settings while timed


class Context:
    """The measuring API workloads use.

    Attributes:
        device: ``"cuda"`` or ``"cpu"`` (a string; ``torch.device(ctx.device)`` where needed).
        info: what the run's probe found about the device.
        suite: the suite being run (workloads scale their sizes by it).
        policy: the default timing policy for this suite.
        process: index of this worker process (0-based).
        processes: how many worker processes the run uses.
        data_dir: a folder of real datasets, when the user gave one.
    """

    def __init__(
        self,
        *,
        info: DeviceInfo,
        suite: str,
        policy: TimingPolicy,
        process: int = 0,
        processes: int = 1,
        data_dir: str | None = None,
        clock: Callable[[], float] = time.perf_counter,
        gpu_sampler: Any = None,
    ) -> None:
        self.info = info
        self.device = info.type
        self.suite = suite
        self.policy = policy
        self.process = process
        self.processes = processes
        self.data_dir = data_dir
        self.recorded = Recorded()
        self._clock = clock
        self._torch: Any = None
        # collector.gpustate.GpuSampler (or None): reads the GPU while blocks are timed.
        self.gpu_sampler = gpu_sampler

    # -- helpers -------------------------------------------------------------------
    @property
    def torch(self) -> Any:
        """The stack's torch, imported on first use."""
        if self._torch is None:
            import torch

            self._torch = torch
        return self._torch

    def skip(self, reason: str) -> None:
        """Stop this case and record it as skipped with ``reason``."""
        raise SkipCase(reason)

    def sync(self) -> None:
        """Wait for the device (no-op on CPU)."""
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def note(self, text: str) -> None:
        """Add a remark that ends up in the case's error/notes column (e.g. a fallback)."""
        self.recorded.notes.append(text)

    def set_work(
        self,
        *,
        flops: float | None = None,
        bytes: float | None = None,
        items: float | None = None,
        items_unit: str | None = None,
    ) -> None:
        """Work done by one iteration, so throughput and % of peak can be derived later."""
        r = self.recorded
        r.flops, r.bytes, r.items, r.items_unit = flops, bytes, items, items_unit

    def set_timing(self, method: str) -> None:
        """Name how this case was timed, for workloads that time outside ``time*`` (one of TIMINGS)."""
        if method not in TIMINGS:
            raise ValueError(f"unknown timing method {method!r}; one of {', '.join(TIMINGS)}")
        self.recorded.timing = method

    def capture_settings(self) -> None:
        """Record the effective precision settings now (the first call of a case wins).

        The timing methods call it as they start, inside whatever regime the workload
        put in force; a workload that times by other means calls it itself.
        """
        if self.recorded.settings is None:
            from collector.workloads._common import effective_precision

            self.recorded.settings = effective_precision(self.torch)

    def _on_measure(self, timing: bool) -> None:
        if self.gpu_sampler is not None:
            self.gpu_sampler.resume() if timing else self.gpu_sampler.pause()

    # -- measuring -----------------------------------------------------------------
    def block_timer(self) -> CudaEventTimer | PerfCounterTimer:
        """CUDA events on a GPU, perf_counter_ns on the CPU."""
        if self.device == "cuda":
            return CudaEventTimer(self.torch)
        return PerfCounterTimer()

    def time(self, fn: Callable[[], Any], *, metric_name: str = "time", **policy_changes: Any) -> Timed:
        """Time ``fn`` with the timing core and record per-iteration samples.

        On a GPU each call is timed after an L2 flush (``CudaEventTimer``); a timer that
        keeps the cache warm also returns the host wall time of each block, recorded
        beside the device time as ``wall_time``.
        """
        policy = self.policy.scaled(**policy_changes) if policy_changes else self.policy
        self.capture_settings()
        timed = time_fn(fn, self.block_timer(), policy, clock=self._clock, on_measure=self._on_measure)
        self.record(metric_name, timed.per_iter, iterations=timed.iterations)
        if timed.wall_per_iter is not None and metric_name == "time":
            self.record("wall_time", timed.wall_per_iter, iterations=timed.iterations)
        self.recorded.timing = timed.method
        return timed

    def time_steps(
        self,
        step: Callable[[], Any],
        *,
        warmup: int = 3,
        min_steps: int | None = None,
        max_steps: int | None = None,
        budget_s: float | None = None,
        metric_name: str = "time",
    ) -> list[float]:
        """Time whole steps (a training step, a batch of inference) one at a time.

        Each step is timed on its own with the host clock after a device sync (for a
        step of milliseconds the launch overhead is negligible), after at most ``warmup``
        steps (fewer once three consecutive steps agree within 10%).
        Stops by the same rule as ``time``: minimum steps, then the CI of the median or
        the budget.
        """
        from collector.timing import median_ci_rel_width

        p = self.policy
        min_steps = p.min_samples if min_steps is None else min_steps
        max_steps = p.max_samples if max_steps is None else max_steps
        budget_s = p.budget_s if budget_s is None else budget_s
        from collector.timing import is_steady

        self.capture_settings()
        # Up to ``warmup`` steps, fewer once they take the same time (their first-step
        # costs paid), never fewer than two.
        warm: list[float] = []
        for i in range(warmup):
            t0 = time.perf_counter_ns()
            step()
            self.sync()
            warm.append((time.perf_counter_ns() - t0) * 1e-9)
            if i + 1 >= 2 and is_steady(warm):
                break
        self.sync()
        values: list[float] = []
        self._on_measure(True)
        start = self._clock()
        try:
            while len(values) < max_steps:
                t0 = time.perf_counter_ns()
                step()
                self.sync()
                values.append((time.perf_counter_ns() - t0) * 1e-9)
                if len(values) < min_steps:
                    continue
                if median_ci_rel_width(values) <= p.target_rel_ci or self._clock() - start >= budget_s:
                    break
        finally:
            self._on_measure(False)
        self.record(metric_name, values, iterations=1)
        self.recorded.timing = TIMING_WALL
        return values

    def time_once(self, fn: Callable[[], Any], *, metric_name: str = "compile_time") -> float:
        """Time a single call (compile time, first step): one sample, one iteration."""
        self.capture_settings()
        self.sync()
        self._on_measure(True)
        try:
            t0 = time.perf_counter_ns()
            fn()
            self.sync()
            elapsed = (time.perf_counter_ns() - t0) * 1e-9
        finally:
            self._on_measure(False)
        self.record(metric_name, [elapsed], iterations=1)
        if self.recorded.timing == TIMING_NONE:
            self.recorded.timing = TIMING_ONESHOT
        return elapsed

    def record(self, metric_name: str, values: Iterable[float], *, iterations: int = 1) -> None:
        """Record raw values of a registered metric (each value per iteration)."""
        metric(metric_name)  # raises for unknown names
        for v in values:
            self.recorded.samples.append((metric_name, float(v), int(iterations)))

    # -- memory --------------------------------------------------------------------
    def reset_peak_memory(self) -> None:
        """Start a fresh peak-memory window (GPU only; a no-op on the CPU)."""
        if self.device == "cuda":
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()

    def record_peak_memory(self) -> None:
        """Record peak allocated and reserved memory since the last reset (GPU only)."""
        if self.device == "cuda":
            cuda = self.torch.cuda
            cuda.synchronize()
            self.record("peak_allocated", [cuda.max_memory_allocated()])
            self.record("peak_reserved", [cuda.max_memory_reserved()])


def describe_params(params: Mapping[str, Any]) -> str:
    """Parameters as ``k=v`` pairs, for messages."""
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
