"""How far each worker process of a run reads from its run's other processes.

For each run folder given (or every run of the labels given), prints, per process index,
the median over cases of |log(process median / median of the run's process medians)|
and the largest such ratio: a process that was timed while something else took the
cores (other workers still importing torch, another program) reads slower on every
case, which this shows as one process far from the rest.

    python benchmarks/process_spread.py runs/torch-2.14.1 [runs/torch-2.13.0/2026...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def run_folders(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "samples.parquet").exists():
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(f for f in p.iterdir() if (f / "samples.parquet").exists()))
        else:
            sys.exit(f"{p}: not a run folder nor a folder of runs")
    return found


def process_spread(folder: Path, metric: str = "time") -> tuple[list[int], np.ndarray, np.ndarray, int]:
    """Process indices, median |log deviation| and the largest ratio per process, and the cases used."""
    samples = pq.read_table(folder / "samples.parquet", columns=["case_id", "process", "metric", "value"]).to_pandas()
    samples = samples[(samples["metric"] == metric) & (samples["value"] > 0)]
    medians = samples.groupby(["case_id", "process"])["value"].median().unstack().dropna()
    logs = np.log(medians)
    deviation = logs.sub(logs.median(axis=1), axis=0)
    return [int(p) for p in medians.columns], deviation.abs().median().to_numpy(), np.exp(deviation.max().to_numpy()), len(medians)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="run folders, or label folders holding runs")
    parser.add_argument("--metric", default="time")
    args = parser.parse_args(argv)
    print("run | cases | per process: median |log dev| (largest ratio to the run's median)")
    for folder in run_folders(args.paths):
        processes, typical, largest, cases = process_spread(folder, args.metric)
        parts = ", ".join(f"p{p} {t:.3f} ({m:.2f}x)" for p, t, m in zip(processes, typical, largest))
        print(f"{folder.parent.name}/{folder.name} | {cases} | {parts}")


if __name__ == "__main__":
    main()
