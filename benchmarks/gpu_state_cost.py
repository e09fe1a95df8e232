"""What sampling the GPU's state costs a case: the time of one reading, idle and busy.

Every timed phase of a case takes one reading synchronously as it starts and one as it
ends (``collector.gpustate.GpuSampler``); between them a thread reads every interval.
This prints how long one reading takes through the source the collector would open
(NVML, else ``nvidia-smi``), on an idle GPU and while a stream of matmuls keeps it busy,
and what two readings a phase add over a suite's attempts.

    python benchmarks/gpu_state_cost.py [--reads 100] [--attempts 291]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def time_reads(source: Any, reads: int) -> list[float]:
    """Seconds each of ``reads`` readings of ``source`` (``collector.gpustate.Source``) took."""
    out = []
    for _ in range(reads):
        t0 = time.perf_counter()
        source.read()
        out.append(time.perf_counter() - t0)
    return out


def describe(name: str, times: list[float]) -> str:
    ms = sorted(t * 1e3 for t in times)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    return f"{name:5s} median {statistics.median(ms):7.2f} ms  p90 {p90:7.2f} ms  max {ms[-1]:7.2f} ms  ({len(ms)} reads)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=100, help="readings timed in each state")
    parser.add_argument("--attempts", type=int, default=291, help="a suite's attempts (the standard suite on one GPU: 291)")
    args = parser.parse_args()
    import torch

    from collector.gpustate import bus_id_of, open_source

    if not torch.cuda.is_available():
        print("no CUDA device: nothing is sampled on the CPU (the collector records the GPU state as absent)")
        return 0
    bus_ids = [bus_id_of(torch.cuda.get_device_properties(i)) for i in range(torch.cuda.device_count())]
    source, description = open_source(bus_ids)
    if source is None:
        print(f"no GPU-state source: {description}")
        return 0
    print(f"source: {description}; {torch.cuda.get_device_name(0)}")
    idle = time_reads(source, args.reads)
    a = torch.randn(8192, 8192, device="cuda")
    stop = threading.Event()

    def keep_busy() -> None:
        while not stop.is_set():
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()

    worker = threading.Thread(target=keep_busy, daemon=True)
    worker.start()
    time.sleep(0.5)
    busy = time_reads(source, args.reads)
    stop.set()
    worker.join()
    source.close()
    print(describe("idle", idle))
    print(describe("busy", busy))
    per_phase = 2 * statistics.median(idle + busy)
    print(f"two readings a timed phase, one phase an attempt: {per_phase * 1e3:.1f} ms an attempt, "
          f"{per_phase * args.attempts:.1f} s over {args.attempts} attempts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
