"""Why short kernels take more samples on some hosts: the host's lead, the GPU-state sampler.

A flushed block (``collector.timing.CudaEventTimer``, one L2 flush and two events a call)
times each call between its own events. While the host queues calls faster than the GPU
runs flush plus call, it stays ahead, and a pause of the host (a descheduled vCPU, a
page fault) is absorbed by the queue. Where the host is barely faster, or slower, the GPU
waits on it between the start event and the kernel, and the wait is timed: the block's
median spreads and the stop rule runs to its budget.

For a few kernels this prints, per condition, the collector's stop rule at the standard
suite's policy (median, CI width, blocks taken, why it stopped, seconds spent):
  plain    the collector's flushed timer as it is;
  sampler  the same with the GPU-state sampler reading during the timed blocks, as in a run;
  lead     the flushed timer behind a pause (``torch.cuda._sleep``) long enough for the
           host to queue the whole block first, so the GPU never waits on the host.
and, for each kernel, the host's time to queue one call against the GPU's time to run it
(flush included): where the first is not well below the second, the host has no lead.

    python benchmarks/tiny_kernel_noise.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collector.timing import CudaEventTimer, Timed, median_ci_rel_width, time_fn  # noqa: E402

CONDITIONS = ("plain", "sampler", "lead")


class LeadTimer(CudaEventTimer):
    """The flushed timer behind a pause sized from the previous block's queueing time."""

    def _time_flushed(self, fn: Callable[[], Any], k: int) -> tuple[float, None]:
        cuda = self._torch.cuda
        while len(self._starts) < k:
            self._starts.append(cuda.Event(enable_timing=True))
            self._ends.append(cuda.Event(enable_timing=True))
        cuda.synchronize(self._device)
        if self._sleep is not None and self._issue_s is not None:
            self._sleep(self._cycles(min(self.max_pause_s, 1.5 * k * self._issue_s + 50e-6)))
        flush, starts, ends = self._flush, self._starts, self._ends
        t0 = time.perf_counter_ns()
        for i in range(k):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        self._issue_s = (time.perf_counter_ns() - t0) * 1e-9 / k
        ends[k - 1].synchronize()
        return sum(starts[i].elapsed_time(ends[i]) for i in range(k)) * 1e-3, None


def host_lead(torch: Any, fn: Callable[[], Any], k: int = 64) -> tuple[float, float]:
    """(host seconds to queue one flushed call, GPU seconds to run one, flush included)."""
    timer = CudaEventTimer(torch)
    timer.time_block(fn, k)  # warm
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # A pause first, so the GPU time is that of the calls, not of the host's queueing.
    torch.cuda._sleep(timer._cycles(0.05))
    begin.record()
    t0 = time.perf_counter_ns()
    for _ in range(k):
        timer._flush.zero_()
        timer._starts[0].record()
        fn()
        timer._ends[0].record()
    host = (time.perf_counter_ns() - t0) * 1e-9 / k
    end.record()
    end.synchronize()
    return host, begin.elapsed_time(end) * 1e-3 / k


def summarize(results: list[tuple[str, str, Timed, float]]) -> list[dict[str, Any]]:
    """One row per (kernel, condition): median of medians, CI width, blocks, budget stops, seconds."""
    rows = []
    keys = sorted({(op, cond) for op, cond, _, _ in results}, key=lambda k: (k[0], CONDITIONS.index(k[1])))
    for op, cond in keys:
        got = [(t, s) for o, c, t, s in results if (o, c) == (op, cond)]
        rows.append(
            {
                "kernel": op,
                "condition": cond,
                "median_us": statistics.median(statistics.median(t.per_iter) for t, _ in got) * 1e6,
                "ci_width": statistics.median(median_ci_rel_width(t.per_iter) for t, _ in got),
                "blocks": statistics.mean(len(t.per_iter) for t, _ in got),
                "budget_stops": sum(t.stopped != "ci" for t, _ in got),
                "rounds": len(got),
                "seconds": statistics.mean(s for _, s in got),
            }
        )
    return rows


def kernels(torch: Any) -> dict[str, Callable[[], Any]]:
    out = {}
    for n, dtype in ((256, torch.bfloat16), (512, torch.float32), (4096, torch.float16)):
        a, b = (torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(2))
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        out[f"matmul n={n} {str(dtype).removeprefix('torch.')}"] = lambda a=a, b=b, c=c: torch.mm(a, b, out=c)
    x = torch.randn(1 << 20, device="cuda")
    out["clone 1M fp32"] = lambda x=x: x.clone()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timings of each kernel under each condition")
    args = parser.parse_args()
    import torch

    from collector.gpustate import GpuSampler, bus_id_of, open_source
    from runformat.policy import STANDARD_POLICY

    if not torch.cuda.is_available():
        print("no CUDA device: flushed blocks and the GPU-state sampler exist only on a GPU")
        return 0
    source, description = open_source([bus_id_of(torch.cuda.get_device_properties(0))])
    sampler = GpuSampler(source) if source is not None else None
    print(f"{torch.cuda.get_device_name(0)}; GPU-state source: {description}")
    ops = kernels(torch)
    print(f"{'kernel':22s} {'host us/call':>12s} {'GPU us/call':>12s}  (flush included)")
    for name, fn in ops.items():
        host, gpu = host_lead(torch, fn)
        print(f"{name:22s} {host * 1e6:12.1f} {gpu * 1e6:12.1f}")
    results = []
    for r in range(args.rounds):
        for name, fn in ops.items():
            order = CONDITIONS[r % 3:] + CONDITIONS[:r % 3]  # each condition first once in three rounds
            for cond in order:
                if cond == "sampler" and sampler is None:
                    continue
                timer = LeadTimer(torch) if cond == "lead" else CudaEventTimer(torch)
                on_measure = None
                if cond == "sampler":
                    on_measure = lambda on: sampler.resume() if on else sampler.pause()  # noqa: E731
                t0 = time.perf_counter()
                timed = time_fn(fn, timer, STANDARD_POLICY, on_measure=on_measure)
                results.append((name, cond, timed, time.perf_counter() - t0))
                del timer
    if source is not None:
        source.close()
    print()
    print(f"{'kernel':22s} {'condition':9s} {'median us':>10s} {'CI width':>9s} {'blocks':>7s} {'budget':>7s} {'s':>6s}")
    for row in summarize(results):
        print(f"{row['kernel']:22s} {row['condition']:9s} {row['median_us']:10.2f} {row['ci_width']:9.4f} "
              f"{row['blocks']:7.1f} {row['budget_stops']:4d}/{row['rounds']:<2d} {row['seconds']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
