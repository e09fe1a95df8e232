"""Suite wall time: how long a whole ``collector run`` takes, end to end.

Runs ``python -m collector run --suite SUITE ...`` as a user would (a subprocess, worker
processes and all), then prints the wall time with the run's case counts by status, and
how long after the command started its first case began (the start-up: the pre-flight
checks, the probe of the stack, the workers' imports).
The run it records is a real run, filed under ``--out`` like any other.

    python benchmarks/suite_walltime.py --suite cpu --out /tmp/runs [-- extra collector args]
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runformat.archive import read_table  # noqa: E402
from runformat.schema import CASES_FILE  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("extra", nargs="*", help="more `collector run` arguments (after --)")
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "collector", "run", "--suite", args.suite, "--out", args.out, "--no-progress", *args.extra]
    began = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if result.returncode != 0:
        print(f"collector run exited with {result.returncode}", file=sys.stderr)
        return result.returncode
    folder = Path(result.stdout.strip().splitlines()[-1])  # collector prints the run folder last
    if not folder.is_absolute():
        folder = ROOT / folder
    rows = read_table(folder / CASES_FILE, CASES_FILE)[0].to_pylist()
    counts = Counter(r["status"] for r in rows)
    status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    starts = [r["started_at"] for r in rows if r["started_at"] is not None]
    first = (min(starts) - began).total_seconds() if starts else float("nan")
    print(f"{'suite':10s} {'wall s':>8s}  {'first case s':>12s}  {'cases':>5s}  attempts (case x process) by status   run")
    print(f"{args.suite:10s} {wall:8.1f}  {first:12.2f}  {len({r['case_id'] for r in rows}):5d}  {status:36s} {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
