"""Fidelity: the collector's median against triton's do_bench and torch.utils.benchmark.

For every microbenchmark case of a suite (matmul, conv2d, memory; the float32 cases in each
regime: ``fp32`` at the stack's defaults, ``fp32-strict``, ``tf32``), the workload's own
``run`` builds its inputs and calls ``ctx.time(fn)``; this script intercepts that call,
lets the collector time ``fn`` as usual, then times the very same ``fn`` (same tensors,
same process) with ``triton.testing.do_bench(fn, return_mode="median")`` and with
``torch.utils.benchmark.Timer.blocked_autorange``. Before any timing the case's calls run
for ``HEAT_S`` (the GPU settles at its power limit), and do_bench runs both before and
after the collector (the ratio is to their mean), so that no tool gains from a cooler GPU.
Prints one table of medians and ratios; ``--json PATH`` also writes every figure.

    python benchmarks/fidelity.py --suite quick [--only PATTERN ...] [--json fidelity.json]

Needs a CUDA GPU (and triton for the do_bench column).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collector.context import Context  # noqa: E402
from collector.runner import matches  # noqa: E402
from collector.suites import SUITES  # noqa: E402
from collector.timing import FLUSH_BYTES  # noqa: E402
from collector.worker import probe_device  # noqa: E402
from collector.workloads import Case, DeviceInfo, registry  # noqa: E402

MICRO = ("matmul", "conv2d", "memory")


class FidelityContext(Context):
    """A Context that also times the workload's function with the two reference tools."""

    def time(self, fn: Callable[[], Any], **kwargs: Any):  # type: ignore[override]
        torch = self.torch
        # Under sustained load an H200 lowers its clocks to its power limit within about a
        # second (sw_power_cap, up to 16% for large tensor-core matmuls): a tool that runs
        # first, on a cooler GPU, reads faster than one that runs after it. So the GPU is
        # first held at this case's steady state, and do_bench runs before and after the
        # collector; the collector is compared with the mean of the two.
        heat(torch, fn, HEAT_S)
        before = _do_bench(fn)
        timed = super().time(fn, **kwargs)
        after = _do_bench(fn)
        self.collector_median = statistics.median(timed.per_iter)
        self.collector_samples = len(timed.per_iter)
        self.collector_k = timed.iterations
        self.do_bench_before, self.do_bench_after = before, after
        self.do_bench = (before + after) / 2
        import torch.utils.benchmark as tub

        m = tub.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=1.0)
        self.tub = m.median
        torch.cuda.synchronize()
        return timed


HEAT_S = 1.0  # seconds of the case's own calls before anything is timed


def heat(torch: Any, fn: Callable[[], Any], seconds: float) -> None:
    """Run ``fn`` back to back, each call after an L2 flush, for ``seconds`` of wall time."""
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(32):
            cache.zero_()
            fn()
        torch.cuda.synchronize()
    del cache


def _do_bench(fn: Callable[[], Any]) -> float:
    try:
        from triton.testing import do_bench
    except ImportError:
        return float("nan")
    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="quick")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN", help="cases as `collector run --only` selects them")
    args = parser.parse_args()
    info = DeviceInfo.from_json(probe_device("cuda"))
    policy = SUITES[args.suite].policy
    rows = []
    t0 = time.time()
    for name in MICRO:
        workload = registry()[name]
        for params in workload.cases(args.suite, info):
            if not matches(Case(name, params), args.only):
                continue
            ctx = FidelityContext(info=info, suite=args.suite, policy=policy)
            workload.run(params, ctx)
            case = f"{name} " + " ".join(f"{k}={v}" for k, v in sorted(params.items()))
            rows.append(
                dict(
                    case=case,
                    collector_s=ctx.collector_median,
                    do_bench_s=ctx.do_bench,
                    do_bench_before_s=ctx.do_bench_before,
                    do_bench_after_s=ctx.do_bench_after,
                    tub_s=ctx.tub,
                    collector_over_do_bench=ctx.collector_median / ctx.do_bench,
                    collector_over_tub=ctx.collector_median / ctx.tub,
                    samples=ctx.collector_samples,
                    k=ctx.collector_k,
                    settings=ctx.recorded.settings,  # the precision regime in force (fp32 = the stack's defaults)
                )
            )
            r = rows[-1]
            print(
                f"{case:72s} collector {r['collector_s']*1e6:10.2f} us  do_bench {r['do_bench_s']*1e6:10.2f} us "
                f"({r['collector_over_do_bench']:.3f}; before {r['do_bench_before_s']*1e6:.2f}, after {r['do_bench_after_s']*1e6:.2f})"
                f"  tub {r['tub_s']*1e6:10.2f} us ({r['collector_over_tub']:.3f})",
                flush=True,
            )
    big = [r for r in rows if r["collector_s"] >= 50e-6]
    outside = [r for r in big if abs(r["collector_over_do_bench"] - 1) > 0.03]
    print(f"\n{len(rows)} cases in {time.time() - t0:.0f} s; {len(big)} of >= 50 us, {len(outside)} outside +/-3% of do_bench")
    if args.json:
        args.json.write_text(json.dumps({"device": info.to_json(), "suite": args.suite, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
