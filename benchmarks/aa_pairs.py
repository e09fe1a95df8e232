"""Every A/A pair of the archive, compared as an article would: rows called, geomean CI, widths, advice.

    python benchmarks/aa_pairs.py [--runs runs] [--device SUBSTRING] [--json OUT]

An A/A pair is two runs of one label, next to each other in time, on one device model, recorded
by one timing method (the run's collector method and policy): the same stack measured twice the
same way, so every difference is noise. For each pair it prints the time rows, how many are
called better or worse, the median row CI log half-width, the time geomean with its 95% CI, and
the largest replicate advice; then, per device, the share of rows called (the measured false-call
rate) and the median absolute geomean shift.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reporter.data.load import load_archive  # noqa: E402
from reporter.model.aa import aa_pairs  # noqa: E402
from reporter.model.compare import compare_labels  # noqa: E402


def measure(archive, label: str, a: str, b: str) -> dict:
    c = compare_labels(archive, f"{label}@{a}", f"{label}@{b}")
    rows = c.rows[c.rows["metric"] == "time"]
    tested = rows[np.isfinite(rows["ci_low"]) & np.isfinite(rows["ci_high"])]
    half = np.log(tested["ci_high"] / tested["ci_low"]) / 2
    called = rows["verdict"].isin(["better", "worse"])
    g = c.geomean
    advice = c.advice
    return {
        "label": label, "baseline": a, "candidate": b, "rows": int(len(rows)), "tested": int(len(tested)),
        "called": int(called.sum()), "called_cases": sorted(rows.loc[called, "case_id"].astype(str)),
        "median_half_width": float(np.median(half)) if len(half) else math.nan,
        "geomean": [g.ratio, g.ci_low, g.ci_high] if g is not None else None,
        "advice_processes": advice.processes if advice else None, "advice_runs": advice.runs if advice else None,
        "verdicts": {k: int(v) for k, v in rows["verdict"].value_counts().items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=str(ROOT / "runs"))
    parser.add_argument("--device", default="", help="only devices whose name contains this")
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    archive = load_archive(args.runs)
    results: list[dict] = []
    t0 = time.perf_counter()
    for label, device, a, b in aa_pairs(archive):
        if args.device and args.device not in device:
            continue
        try:
            r = measure(archive, label, a, b)
        except Exception as exc:  # noqa: BLE001 (a pair with no case in common: say so and go on)
            print(f"{label} {a} vs {b}: {exc}")
            continue
        r["device"] = device
        results.append(r)
        g = r["geomean"]
        geo = f"{g[0]:.3f} [{g[1]:.3f}, {g[2]:.3f}]" if g else "–"
        print(f"{device[:22]:22} {label[:40]:40} {a[:16]} {b[:16]}  rows {r['rows']:3}  called {r['called']:2}  "
              f"half-width {r['median_half_width']:.3f}  geomean {geo}  advice {r['advice_processes']}/{r['advice_runs']}")
    print("\nPer device:")
    by_device: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        by_device[r["device"]].append(r)
    for device, rs in sorted(by_device.items()):
        rows = sum(r["tested"] for r in rs)
        called = sum(r["called"] for r in rs)
        shifts = [abs(math.log(r["geomean"][0])) for r in rs if r["geomean"] and r["geomean"][0] > 0]
        print(f"  {device}: {len(rs)} pairs, {called} of {rows} tested time rows called ({called / max(rows, 1):.2%}); "
              f"median |geomean shift| {np.median(shifts):.2%}" if shifts else f"  {device}: {len(rs)} pairs")
    print(f"\n{time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
