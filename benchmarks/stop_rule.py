"""Stop rule: what a cheaper timing policy would have cost recorded runs in CI width.

Cuts the recorded samples short where a cheaper stop rule would have stopped: for each
case, process and ``time`` metric, at least ``--min-samples`` blocks, then stop once the
distribution-free 95% CI of the median is within ``--target``, or once ``--budget``
seconds of measured time are spent (the rule of ``collector.timing``). Every run of the
labels named is cut, since the reporter moderates a case's spread with the other runs of
its stack. Then each pair of runs is compared with the reporter's own model, as recorded
and as cut: the median CI half-width of the ratio (for an A/A pair, the width noise alone
gives), and the share of samples kept. A block's measured time is its iterations times
its per-iteration value; a GPU case's cache flush between calls is not counted.

    python benchmarks/stop_rule.py RUNS_DIR LABEL@RUN_A LABEL@RUN_B [--pair C D ...] \\
        [--min-samples 10 --budget 1.0 --target 0.01] [--workload matmul ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collector.timing import median_ci_rel_width  # noqa: E402
from reporter.model.compare import compare_labels  # noqa: E402
from reporter.data.load import load_archive  # noqa: E402


def stop_at(values: list[float], iterations: list[int], min_samples: int, budget_s: float, target: float) -> int:
    """How many of these blocks the stop rule would have taken."""
    spent = 0.0
    for i, (v, k) in enumerate(zip(values, iterations)):
        spent += v * k
        n = i + 1
        if n >= min_samples and (median_ci_rel_width(values[:n]) <= target or spent >= budget_s):
            return n
    return len(values)


def recut(run: Path, out: Path, min_samples: int, budget_s: float, target: float) -> pd.DataFrame:
    """Copy ``run`` to ``out`` with its ``time`` samples cut; returns kept/total per workload."""
    shutil.copytree(run, out)
    table = pq.read_table(run / "samples.parquet")
    samples = table.to_pandas()
    workloads = pq.read_table(run / "cases.parquet", columns=["case_id", "workload"]).to_pandas().drop_duplicates()
    kept = []
    for (_, _, metric), g in samples.groupby(["case_id", "process", "metric"], sort=False):
        g = g.sort_values("index")
        if metric == "time":
            g = g.iloc[: stop_at(list(g["value"]), list(g["iterations"]), min_samples, budget_s, target)]
        kept.append(g)
    cut = pd.concat(kept).sort_index()
    pq.write_table(pa.Table.from_pandas(cut[samples.columns], schema=table.schema, preserve_index=False), out / "samples.parquet")
    counts = []
    for name, frame in (("before", samples), ("after", cut)):
        time = frame[frame["metric"] == "time"].merge(workloads, on="case_id")
        counts.append(time.groupby("workload").size().rename(name))
    return pd.concat(counts, axis=1)


def half_width(runs: Path, baseline: str, candidate: str, workloads: list[str]) -> float:
    rows = compare_labels(load_archive(runs), baseline, candidate).rows
    rows = rows[rows["metric"] == "time"]
    if workloads:
        rows = rows[rows["workload"].isin(workloads)]
    rows = rows[rows["ci_low"].notna() & rows["ci_high"].notna()]
    return float(((rows["ci_high"] - rows["ci_low"]) / 2).median())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="the archive folder (runs/)")
    parser.add_argument("baseline", metavar="LABEL@RUN_ID")
    parser.add_argument("candidate", metavar="LABEL@RUN_ID")
    parser.add_argument("--pair", nargs=2, action="append", default=[], metavar=("A", "B"), help="another pair")
    parser.add_argument("--min-samples", type=int, default=10)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of measured time per case and process")
    parser.add_argument("--target", type=float, default=0.01, help="relative width of the median's 95%% CI")
    parser.add_argument("--workload", action="append", default=[], help="count only these workloads' rows")
    args = parser.parse_args()
    pairs = [(args.baseline, args.candidate), *map(tuple, args.pair)]
    labels = sorted({s.partition("@")[0] for pair in pairs for s in pair})
    with tempfile.TemporaryDirectory(prefix="stop-rule-") as tmp:
        # Every run of the labels, cut alike: the reporter moderates a case's spread with the
        # other runs of its stack, so they must have been measured under the same rule too.
        before, after = Path(tmp, "before"), Path(tmp, "after")
        counts = []
        for label in labels:
            if not (args.runs / label).is_dir():
                parser.error(f"{label}: no folder {args.runs / label}")
            for src in sorted(p for p in (args.runs / label).iterdir() if (p / "samples.parquet").is_file()):
                shutil.copytree(src, before / label / src.name)
                counts.append(recut(src, after / label / src.name, args.min_samples, args.budget, args.target))
        kept = pd.concat(counts).groupby(level=0).sum()
        print(f"stop rule: at least {args.min_samples} blocks, then a {args.target:g} CI or {args.budget:g} s")
        print("samples of the time metric kept, by workload:")
        for workload, row in kept.fillna(0).iterrows():
            print(f"  {workload:22s} {int(row['after']):6d} of {int(row['before']):6d} ({row['after'] / row['before']:.0%})")
        for a, b in pairs:
            w0 = half_width(before, a, b, args.workload)
            w1 = half_width(after, a, b, args.workload)
            print(f"{a} vs {b}: median CI half-width {w0:.4f} as recorded, {w1:.4f} re-cut")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
