"""Run time: where a recorded run's wall time went, from its own tables, side by side.

For each run folder: the time from the run's start to its first case, the time inside
cases, the gaps between cases (worker switches, writing), the tail after the last case,
and the time inside cases by workload (attempts, seconds, and the seconds its samples
measured: iterations times per-iteration value for time-like metrics). Columns are the
runs in the order given, so a before/after pair reads across.

    python benchmarks/run_time.py runs/LABEL/RUN_A [runs/LABEL/RUN_B ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runformat.archive import read_run  # noqa: E402
from runformat.schema import CASES_FILE, ENVIRONMENT_FILE, SAMPLES_FILE  # noqa: E402

MEASURED_METRICS = ("time", "latency", "compile_time")


def profile(folder: Path) -> tuple[dict[str, float], pd.DataFrame]:
    """(whole-run figures, per-workload table) of one run folder."""
    tables = read_run(folder)
    cases = tables[CASES_FILE][0].to_pandas()
    samples = tables[SAMPLES_FILE][0].to_pandas()
    env = tables[ENVIRONMENT_FILE][0].to_pandas()
    run = dict(zip(env.loc[env["section"] == "run", "key"], env.loc[env["section"] == "run", "value"]))
    ran = cases[cases["duration_s"].notna() & cases["started_at"].notna()].sort_values("started_at")
    start = ran["started_at"]
    end = start + pd.to_timedelta(ran["duration_s"], unit="s")
    whole = {
        "attempts": float(len(cases)),
        "inside cases s": float(ran["duration_s"].sum()),
        "gaps between cases s": float((start - end.shift()).dt.total_seconds().clip(lower=0).sum()),
    }
    if run.get("started_at"):
        whole["first case after start s"] = (start.iloc[0] - pd.Timestamp(run["started_at"])).total_seconds()
    if run.get("finished_at"):
        whole["tail after last case s"] = (pd.Timestamp(run["finished_at"]) - end.max()).total_seconds()
        if run.get("started_at"):
            whole["run start to finish s"] = (pd.Timestamp(run["finished_at"]) - pd.Timestamp(run["started_at"])).total_seconds()
    timed = samples[samples["metric"].isin(MEASURED_METRICS)]
    measured = (timed["value"] * timed["iterations"].fillna(1)).groupby([timed["case_id"], timed["process"]]).sum()
    per_attempt = ran.set_index(["case_id", "process"]).join(measured.rename("measured_s"))
    by_workload = per_attempt.groupby("workload").agg(
        attempts=("duration_s", "size"), seconds=("duration_s", "sum"), measured=("measured_s", "sum")
    )
    return whole, by_workload


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (runs/LABEL/RUN_ID)")
    args = parser.parse_args()
    wholes, tables = {}, {}
    for folder in args.runs:
        if not (folder / CASES_FILE).is_file():
            parser.error(f"{folder}: not a run folder (no {CASES_FILE})")
        name = folder.name.split("-")[0]
        wholes[name], tables[name] = profile(folder)
    print(pd.DataFrame(wholes).round(1).to_string())
    print()
    joined = pd.concat({name: t for name, t in tables.items()}, axis=1)
    joined = joined.sort_values(joined.columns[1], ascending=False)
    print("by workload: attempts, seconds inside cases, seconds measured")
    print(joined.round(1).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
