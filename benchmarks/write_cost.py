"""Writing cost per case: append-only part files against rewriting the whole tables.

Writes N synthetic attempts (each 50 samples and one GPU-state row) into a fresh run
folder, once through ``RunWriter.write_attempt`` (what the runner does now: part files,
compacted once at the end) and once through ``RunWriter.write_cases`` with every record
so far (what it did before: both tables rewritten after each case), and prints the mean
cost per case for each N. Flat in N means the cost of a case does not grow with the
number of cases before it.

    python benchmarks/write_cost.py [--cases 50 500] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runformat.archive import RunWriter  # noqa: E402
from runformat.schema import CaseRecord, EnvironmentEntry, SampleRecord  # noqa: E402

SAMPLES_PER_CASE = 50


def attempt(i: int) -> tuple[CaseRecord, list[SampleRecord], dict]:
    cid = f"synthetic[i={i}]"
    case = CaseRecord(case_id=cid, workload="synthetic", params=json.dumps({"i": i}), process=i % 3, status="ok",
                      error=None, timing="cuda_event", device="cuda", started_at=1.7e9 + i, duration_s=0.5,
                      settings='{"matmul_allow_tf32":false}')
    samples = [SampleRecord(case_id=cid, process=i % 3, metric="time", unit="s", better="lower", index=j,
                            value=1e-3 * (1 + 1e-3 * j), iterations=64) for j in range(SAMPLES_PER_CASE)]
    gpu = {"case_id": cid, "process": i % 3, "gpu": 0, "source": "nvml", "readings": 12, "reasons": "",
           "throttled": False, "sm_clock_mhz_median": 1980.0}
    return case, samples, gpu


def new_writer(root: Path) -> RunWriter:
    w = RunWriter.create(root, "write-cost")
    w.write_environment([EnvironmentEntry("run", "status", "running")])
    w.write_cases([], [])
    return w


def time_parts(root: Path, n: int) -> tuple[float, float]:
    w = new_writer(root)
    t0 = time.perf_counter()
    for i in range(n):
        case, samples, gpu = attempt(i)
        w.write_attempt([case], samples, [gpu])
    per_case = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    w.compact()
    return per_case, time.perf_counter() - t0


def time_rewrite(root: Path, n: int) -> float:
    w = new_writer(root)
    cases, samples = [], []
    t0 = time.perf_counter()
    for i in range(n):
        case, s, _ = attempt(i)
        cases.append(case)
        samples += s
        w.write_cases(cases, samples)
    return (time.perf_counter() - t0) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    print(f"{'cases':>6s} {'part files ms/case':>19s} {'compaction s':>13s} {'rewrite ms/case':>16s}")
    for n in args.cases:
        with tempfile.TemporaryDirectory() as tmp:
            parts, compact = time_parts(Path(tmp) / "parts", n)
            rewrite = time_rewrite(Path(tmp) / "rewrite", n)
        rows.append({"cases": n, "parts_s_per_case": parts, "compaction_s": compact, "rewrite_s_per_case": rewrite})
        print(f"{n:6d} {parts * 1e3:19.2f} {compact:13.2f} {rewrite * 1e3:16.2f}", flush=True)
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"per-case cost, {b['cases']} against {a['cases']} cases: part files x{b['parts_s_per_case'] / a['parts_s_per_case']:.2f}, "
              f"rewrite x{b['rewrite_s_per_case'] / a['rewrite_s_per_case']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
