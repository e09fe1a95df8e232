"""Print one line per case of a recorded run: status, wall duration, sample counts and medians.

For checking the end-to-end workloads on a new machine (which cases fail, how long each takes
against the suite budgets) without the reporter. Reads the run folder's Parquet files only.

    python benchmarks/e2e_workloads_summary.py runs/<label>/<run_id>
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq


def main(folder: str) -> None:
    cases = pq.read_table(Path(folder) / "cases.parquet").to_pylist()
    samples = pq.read_table(Path(folder) / "samples.parquet").to_pylist()
    values: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        values[(s["case_id"], s["process"])][s["metric"]].append(s["value"])
    total = 0.0
    by_workload: dict[str, float] = defaultdict(float)
    for c in sorted(cases, key=lambda c: (c["workload"], c["case_id"], c["process"])):
        total += c["duration_s"]
        by_workload[c["workload"]] += c["duration_s"]
        metrics = values[(c["case_id"], c["process"])]
        shown = " ".join(f"{m}={statistics.median(v):.4g}(n={len(v)})" for m, v in sorted(metrics.items()))
        if c["items"] and "time" in metrics:
            shown += f" items/s={c['items'] / statistics.median(metrics['time']):.1f}"
        error = (c["error"] or "").strip().splitlines()
        print(f"{c['duration_s']:7.1f}s p{c['process']} {c['status']:8} {c['case_id']} {shown}" + (f" | {error[0][:200]}" if error else ""))
    print("-- seconds by workload:", ", ".join(f"{w} {t:.0f}" for w, t in sorted(by_workload.items())))
    print(f"-- total case time {total:.0f} s over {len(cases)} case attempts")


if __name__ == "__main__":
    main(sys.argv[1])
