"""The stack launcher's own cost per case: what a case costs beyond its own timed duration.

Records the same cases of a known length (``launcher_cost``: one call of ``time.sleep``,
timed by the worker) through ``collector run`` twice, once with a ``python:`` stack (this
interpreter) and once with a ``docker:`` stack whose ``docker`` is the tests' fake runtime
(``tests/fake_runtime.py``: it runs the worker with this interpreter, as a container would
with its own), and reads the recorded cases back. Per case, the launcher's cost is the gap
between the end of one case and the start of the next in the same worker process: the
answer on the pipe, the parent writing the attempt, the next command, the worker's
clean-up between cases. A worker process's start (a container's start with a real
runtime) is paid once per process, while the previous one measures (workers start ahead
of their turn), and is printed apart: the time from starting a worker to its ``ready``,
through each launcher.

    python benchmarks/launcher_cost.py [--seconds 1.0] [--cases 4] [--processes 2] [--starts 3]

The fake runtime costs what a real one's client costs only in part (one more process, no
daemon, no container creation, no relay of the pipe through a daemon); the figures say
what the launcher and the runner themselves add.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parent.parent
CASES_ENV = "IMAGEBENCH_LAUNCHER_COST"  # JSON: {"seconds": ..., "cases": ...}
FAKE_IMAGE = "imagebench/launcher-cost:fake"


# -- the workload (registered through IMAGEBENCH_EXTRA_WORKLOADS=benchmarks.launcher_cost) ------
def _cases(suite: str, device: Any) -> list[dict[str, Any]]:
    spec = json.loads(os.environ.get(CASES_ENV) or '{"seconds": 1.0, "cases": 4}')
    return [{"i": i, "seconds": float(spec["seconds"])} for i in range(int(spec["cases"]))]


def _run(params: Mapping[str, Any], ctx: Any) -> None:
    ctx.time_once(lambda: time.sleep(float(params["seconds"])), metric_name="time")


def _workloads() -> list[Any]:
    sys.path.insert(0, str(ROOT))
    from collector.workloads import Workload

    return [Workload(name="launcher_cost", family="basic", title="a case of a known length (benchmark only)",
                     method="One call of time.sleep, timed once: the benchmark of the launcher's cost.",
                     cases=_cases, run=_run, timeout_s=600.0)]


WORKLOADS = _workloads()


# -- the benchmark ----------------------------------------------------------------------------
def record(stack: str, args: argparse.Namespace, env: dict[str, str], out: Path) -> tuple[Path, float]:
    """One ``collector run`` of the benchmark's cases through ``stack``: (run folder, wall seconds)."""
    command = [sys.executable, "-m", "collector", "run", "--stack", stack, "--label", stack.partition(":")[0],
               "--suite", "smoke", "--only", "launcher_cost", "--processes", str(args.processes), "--device", "cpu",
               "--no-doctor", "--no-progress", "--out", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"launcher_cost: {stack} failed: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1]), wall


def case_costs(folder: Path) -> dict[str, Any]:
    """Per-case figures of a recorded run: durations and the gaps between a worker's cases."""
    from runformat.archive import read_table
    from runformat.schema import CASES_FILE, SAMPLES_FILE

    rows = read_table(folder / CASES_FILE, CASES_FILE)[0].to_pylist()
    timed = {(s["case_id"], s["process"]): s["value"] for s in read_table(folder / SAMPLES_FILE, SAMPLES_FILE)[0].to_pylist()
             if s["metric"] == "time"}
    durations = [r["duration_s"] for r in rows]
    setup = [r["duration_s"] - timed[(r["case_id"], r["process"])] for r in rows if (r["case_id"], r["process"]) in timed]
    gaps = []
    for process in {r["process"] for r in rows}:
        mine = sorted((r for r in rows if r["process"] == process), key=lambda r: r["started_at"])
        gaps += [(b["started_at"].timestamp() - (a["started_at"].timestamp() + a["duration_s"]))
                 for a, b in zip(mine, mine[1:])]
    case = statistics.median(durations)
    return {"attempts": len(rows), "statuses": sorted({r["status"] for r in rows}), "duration_s": case,
            "setup_s": setup, "gap_s": gaps, "share": [g / (case + g) for g in gaps]}


def worker_starts(stack: str, starts: int) -> list[float]:
    """Seconds from starting a worker through ``stack``'s launcher to its ``ready`` (torch imported)."""
    from collector.run.worker_ipc import Worker
    from collector.stacks import launcher_for, parse_stack

    launcher = launcher_for(parse_stack(stack), device="cpu")
    launcher.check()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(starts):
            worker = Worker(launcher, Path(tmp) / f"{i}.log")
            worker.wait_ready(300)
            out.append(worker.ready_at - worker.started)
            worker.close()
    launcher.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each case (default 1.0)")
    parser.add_argument("--cases", type=int, default=4, help="cases a worker process runs (default 4)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--starts", type=int, default=3, help="worker starts timed per launcher (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT))
    import fake_runtime

    with tempfile.TemporaryDirectory(prefix="imagebench-launcher-cost-") as tmp:
        base = Path(tmp)
        fake_runtime.install(base / "bin", base / "state", {"images": {FAKE_IMAGE: fake_runtime.image(FAKE_IMAGE)}})
        env = {**os.environ, "PATH": f"{base / 'bin'}{os.pathsep}{os.environ['PATH']}",
               fake_runtime.STATE_ENV: str(base / "state"), "PYTHONPATH": str(ROOT),
               "IMAGEBENCH_EXTRA_WORKLOADS": "benchmarks.launcher_cost",
               CASES_ENV: json.dumps({"seconds": args.seconds, "cases": args.cases})}
        os.environ.update({k: env[k] for k in ("PATH", fake_runtime.STATE_ENV)})
        figures = {}
        for stack in (f"python:{sys.executable}", f"docker:{FAKE_IMAGE}"):
            folder, wall = record(stack, args, env, base / "runs")
            costs = case_costs(folder)
            costs["run_wall_s"] = wall
            costs["worker_start_s"] = worker_starts(stack, args.starts)
            figures[stack.partition(":")[0]] = costs
    report(figures, args)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"cases of {args.seconds:g} s, {args.cases} a worker process, {args.processes} processes; "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"{'stack':<8} {'attempts':>8} {'case s':>7} {'in-case ms':>10} {'gap ms median':>13} {'max':>6} "
          f"{'gap % of case wall median':>25} {'max':>6} {'worker start s':>14}")
    for kind, f in figures.items():
        gaps_ms = [g * 1e3 for g in f["gap_s"]]
        print(f"{kind:<8} {f['attempts']:>8} {f['duration_s']:>7.3f} {1e3 * statistics.median(f['setup_s']):>10.1f} "
              f"{statistics.median(gaps_ms):>13.1f} {max(gaps_ms):>6.1f} {100 * statistics.median(f['share']):>24.2f}% "
              f"{100 * max(f['share']):>5.2f}% {statistics.median(f['worker_start_s']):>14.2f}  "
              f"(statuses {', '.join(f['statuses'])}; run {f['run_wall_s']:.1f} s)")
    print("in-case: the case's duration beyond its timed sample (the worker setting the case up); gap: from one "
          "case's end to the next case's start in the same worker process (the pipe, the parent writing the "
          "attempt, the worker's clean-up); worker start: from starting a worker to its ready (torch imported), "
          "the median of the starts. The docker row's runtime is the tests' fake, which runs the worker with this Python.")


if __name__ == "__main__":
    main()
