"""Does a label show one interval on every page? Its article sides against its own summaries.

For each comparison, the side CIs of ``compare_labels`` (what the article and
``reporter compare`` show) are set against ``compute_summaries`` of the same side (what
its run pages and trend pages show), row by row. Prints, per comparison and side, the
median log half-width of each and the largest difference between the two intervals'
bounds (log scale; 0 where the pages agree).

    python benchmarks/location_agreement.py --runs runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporter.data.load import load_archive  # noqa: E402
from reporter.model.compare import _selected_sides, compare_labels, compute_summaries  # noqa: E402

PAIRS = (
    ("torch-2.13.0-cpu", "torch-2.14.1-cpu"),
    ("torch-2.13.0", "torch-2.14.1"),
    ("h200-torch-2.11.0-cu130@20261202T172425Z", "h200-torch-2.11.0-cu130@20261202T174022Z"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="runs")
    args = ap.parse_args()
    archive = load_archive(args.runs)
    print(f"{'comparison':<58} {'side':<9} {'article':>8} {'pages':>8} {'max |Δ|':>9}")
    for b, c in PAIRS:
        try:
            cmp = compare_labels(archive, b, c)
        except Exception as e:  # a pair this archive lacks
            print(f"{b} vs {c}: {e}")
            continue
        sides = _selected_sides(archive, b, c)
        rows = cmp.rows.set_index(["case_id", "metric"])
        for name in ("baseline", "candidate"):
            s = compute_summaries(sides[name]).set_index(["case_id", "metric"]).reindex(rows.index)
            lo, hi = np.log(rows[f"{name}_ci_low"].to_numpy(float)), np.log(rows[f"{name}_ci_high"].to_numpy(float))
            plo, phi = np.log(s["ci_low"].to_numpy(float)), np.log(s["ci_high"].to_numpy(float))
            both = np.isfinite(lo) & np.isfinite(plo)
            diff = float(np.nanmax(np.abs(np.r_[lo[both] - plo[both], hi[both] - phi[both]]))) if both.any() else float("nan")
            print(f"{b + ' vs ' + c.split('@')[-1]:<58} {name:<9} {np.nanmedian((hi - lo) / 2):>8.4f} "
                  f"{np.nanmedian((phi - plo) / 2):>8.4f} {diff:>9.2g}")


if __name__ == "__main__":
    main()
