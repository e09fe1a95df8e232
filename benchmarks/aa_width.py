"""A/A width: how wide the reporter's CIs are when a stack is compared with itself.

Compares two runs of one stack (``LABEL@RUN_ID`` selectors, or two labels) with the
reporter's own model and prints, over the rows with a CI, the median CI half-width of the
ratio (half of ``ci_high - ci_low``, as a fraction), its quartiles, and how many rows came
out different (in an A/A pair every such row is a false positive). With ``--workload``
or ``--metric`` only the rows of those workloads or metrics count. With more than two
selectors, every pair of them is compared in turn, and the range over the pairs is printed last.

    python benchmarks/aa_width.py RUNS_DIR BASELINE CANDIDATE [MORE ...] [--workload matmul ...] [--metric time]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reporter.model.compare import compare_labels  # noqa: E402
from reporter.data.load import load_archive  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", help="the archive folder (runs/)")
    parser.add_argument("selectors", nargs="+", metavar="LABEL[@RUN_ID]",
                        help="two or more runs (or labels) of one stack; with more than two, every pair")
    parser.add_argument("--workload", action="append", default=[], help="count only these workloads' rows")
    parser.add_argument("--metric", action="append", default=[], help="count only these metrics' rows (time, ...)")
    args = parser.parse_args()
    if len(args.selectors) < 2:
        parser.error("give at least two runs or labels to compare")
    archive = load_archive(args.runs)
    widths, called = [], 0
    for baseline, candidate in itertools.combinations(args.selectors, 2):
        comparison = compare_labels(archive, baseline, candidate)
        rows = comparison.rows
        if args.workload:
            rows = rows[rows["workload"].isin(args.workload)]
        if args.metric:
            rows = rows[rows["metric"].isin(args.metric)]
        with_ci = rows[rows["ci_low"].notna() & rows["ci_high"].notna()]
        if with_ci.empty:
            print(f"{baseline} vs {candidate}: no row has a CI", file=sys.stderr)
            return 1
        half = (with_ci["ci_high"] - with_ci["ci_low"]) / 2
        verdicts = rows["verdict"].astype(str).value_counts().to_dict()
        print(f"{baseline} vs {candidate}: {len(rows)} rows, {len(with_ci)} with a CI ({comparison.analysis})")
        print(f"CI half-width of the ratio: median {half.median():.4f}, "
              f"quartiles {half.quantile(0.25):.4f} .. {half.quantile(0.75):.4f}")
        print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
        widths.append(float(half.median()))
        called += int(rows["verdict"].astype(str).isin(["better", "worse"]).sum())
    if len(widths) > 1:
        print(f"{len(widths)} pairs: median CI half-width {min(widths):.4f} .. {max(widths):.4f}; "
              f"rows called better or worse: {called}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
