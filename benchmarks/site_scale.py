"""How long `reporter build` takes for a large archive: 50 comparisons over 200 runs.

SYNTHETIC INPUT, FOR TIMING THE TOOL ONLY: the runs are generated into a temporary folder
(never runs/), with made-up values, and the site built from them is thrown away.

    .venv/bin/python benchmarks/site_scale.py            # the 50 x 200 case, 2 chart processes
    .venv/bin/python benchmarks/site_scale.py --labels 6 --runs 12 --keep /tmp/scale

Three builds, in a cache folder of their own: cold, again with nothing changed, and after one
new run (the nightly case). Targets on 2 cores: 20 s cold, 5 s unchanged (the archive generation
is not timed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runformat.archive import write_table_atomic  # noqa: E402
from runformat.schema import (  # noqa: E402
    CASES_FILE,
    ENVIRONMENT_FILE,
    SAMPLES_FILE,
    case_id_for,
    metric,
    params_to_json,
    records_to_table,
)

PROCESSES = 3
SAMPLES = 20


def suite_cases() -> list[tuple[str, dict, dict, float, list[str]]]:
    """(workload, params, work, base seconds, metrics): about the size of the standard suite."""
    cases = []
    for n in (256, 512, 1024, 2048, 4096, 8192):
        for dtype in ("fp32", "tf32", "bf16", "fp16"):
            cases.append(("matmul", {"n": n, "dtype": dtype}, {"flops": 2.0 * n**3}, 2.0 * n**3 / 3e14, ["time", "wall_time"]))
    for dtype in ("fp32", "bf16"):
        for layout in ("nchw", "channels_last"):
            for p in ("forward", "forward_backward"):
                cases.append(("conv2d", {"dtype": dtype, "layout": layout, "pass": p, "batch": 16, "channels": 64, "size": 224},
                              {"flops": 1.2e11}, 1.5e-3, ["time", "wall_time"]))
    for op in ("clone", "broadcast_add"):
        for e in (1 << 20, 1 << 24, 1 << 28):
            cases.append(("memory", {"op": op, "elements": e}, {"bytes": 8.0 * e}, 8.0 * e / 3e12 + 5e-6, ["time", "wall_time"]))
    for amp in (False, True):
        cases.append(("resnet50_train", {"batch": 64, "amp": amp}, {"items": 64.0, "items_unit": "images"}, 0.09, ["time", "peak_allocated"]))
        cases.append(("bert_train", {"batch": 8, "amp": amp}, {"items": 8.0, "items_unit": "sequences"}, 0.05, ["time", "peak_allocated"]))
    for mode in ("default", "max-autotune"):
        cases.append(("compile", {"model": "resnet50", "mode": mode}, {"items": 64.0, "items_unit": "images"}, 0.07, ["time", "compile_time"]))
    for g in (1, 2, 4, 8):
        cases.append(("multigpu", {"gpus": g}, {"items": 64.0 * g, "items_unit": "images"}, 0.09 * (1 + 0.03 * g), ["time"]))
    for b in (1, 8, 32):
        cases.append(("inference", {"model": "resnet50", "batch": b}, {"items": float(b), "items_unit": "images"}, 2e-3 * b ** 0.6, ["latency"]))
    cases.append(("dataloader", {"workers": 4}, {"items": 256.0, "items_unit": "images"}, 0.2, ["time"]))
    cases.append(("max_batch", {"model": "resnet50"}, {}, 0.0, ["max_batch"]))
    cases.append(("numerics", {"model": "mlp"}, {}, 0.0, ["loss", "checksum"]))
    return cases


def write_archive(out: Path, n_labels: int, n_runs: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    cases = suite_cases()
    runs_per_label = [n_runs // n_labels + (1 if i < n_runs % n_labels else 0) for i in range(n_labels)]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for li, count in enumerate(runs_per_label):
        label = f"scale-2.{li}.0"
        speed = 1.0 + rng.normal(0, 0.03)
        for ri in range(count):
            when = start + dt.timedelta(days=li, hours=ri)
            run_id = when.strftime("%Y%m%dT%H%M%SZ") + f"-{li:03x}{ri:03x}"
            folder = out / label / run_id
            folder.mkdir(parents=True)
            env = [("imagebench", "version", "0.1.0"), ("torch", "version", f"2.{li}.0"), ("cuda", "runtime", "12.8"),
                   ("gpu0", "name", "Synthetic scale GPU (timing fixture)"), ("driver", "version", "570.10"),
                   ("host", "hostname", "scale-host"), ("cpu", "model", "Synthetic CPU"),
                   ("container", "image", f"example.invalid/scale:2.{li}.0"),
                   ("run", "run_id", run_id), ("run", "label", label), ("run", "suite", "standard"),
                   ("run", "processes", str(PROCESSES)), ("run", "device", "cuda"), ("run", "status", "complete"),
                   ("run", "started_at", when.isoformat()), ("run", "finished_at", (when + dt.timedelta(minutes=30)).isoformat())]
            env += [("packages", f"pkg{i}", f"1.{li}.{i}") for i in range(20)]
            env_rows = [{"section": s, "key": k, "value": v} for s, k, v in env]
            case_rows, sample_cols = [], {k: [] for k in ("case_id", "process", "metric", "unit", "better", "index", "value", "iterations")}
            t = when.timestamp()
            for workload, params, work, base, metrics in cases:
                cid = case_id_for(workload, params)
                factor = speed * (1.0 + rng.normal(0, 0.01))
                for proc in range(PROCESSES):
                    t += 1.0
                    case_rows.append({"case_id": cid, "workload": workload, "params": params_to_json(params), "process": proc,
                                      "status": "ok", "error": None, "timing": "cuda_event", "device": "cuda",
                                      "started_at": t, "duration_s": 1.0, "flops": work.get("flops"), "bytes": work.get("bytes"),
                                      "items": work.get("items"), "items_unit": work.get("items_unit")})
                    offset = 1.0 + rng.normal(0, 0.005)
                    for m in metrics:
                        meta = metric(m)
                        if m in ("loss", "checksum", "max_batch"):
                            values = np.array([{"loss": 2.3, "checksum": 1234.5, "max_batch": 512.0}[m]])
                        elif m == "peak_allocated":
                            values = np.array([2e10 * factor])
                        elif m == "compile_time":
                            values = np.array([40.0 * factor * offset])
                        else:
                            values = base * factor * offset * (1.0 + np.abs(rng.normal(0, 0.01, SAMPLES)))
                        n = len(values)
                        sample_cols["case_id"] += [cid] * n
                        sample_cols["process"] += [proc] * n
                        sample_cols["metric"] += [m] * n
                        sample_cols["unit"] += [meta.unit] * n
                        sample_cols["better"] += [meta.better] * n
                        sample_cols["index"] += list(range(n))
                        sample_cols["value"] += values.tolist()
                        sample_cols["iterations"] += [10] * n
            samples = [dict(zip(sample_cols, row)) for row in zip(*sample_cols.values())]
            write_table_atomic(records_to_table(ENVIRONMENT_FILE, env_rows, run_id=run_id, label=label), folder / ENVIRONMENT_FILE)
            write_table_atomic(records_to_table(SAMPLES_FILE, samples, run_id=run_id, label=label), folder / SAMPLES_FILE)
            write_table_atomic(records_to_table(CASES_FILE, case_rows, run_id=run_id, label=label), folder / CASES_FILE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=51, help="labels (default 51: 50 default comparisons)")
    parser.add_argument("--runs", type=int, default=200, help="runs in all (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="chart processes (default 2, the target's cores)")
    parser.add_argument("--no-mkdocs", action="store_true", help="time the rendering only")
    parser.add_argument("--keep", type=Path, help="build here and keep the result")
    args = parser.parse_args()

    from reporter.site.build import build_site

    tmp = Path(tempfile.mkdtemp(prefix="imagebench-site-scale-"))
    os.environ["IMAGEBENCH_CACHE"] = str(tmp / "cache")  # cold means cold: no run, page or chart of an earlier build
    try:
        t0 = time.perf_counter()
        write_archive(tmp / "runs", args.labels, args.runs)
        print(f"synthetic archive: {args.runs} runs, {args.labels} labels, {len(suite_cases())} cases each "
              f"(written in {time.perf_counter() - t0:.1f} s, not timed)")
        work = args.keep or tmp
        site, public = work / "site", work / "public"
        for p in (site, public):
            shutil.rmtree(p, ignore_errors=True)
        cwd = os.getcwd()
        os.chdir(tmp)  # no imagebench.toml: the default chain of comparisons
        try:
            t1 = time.perf_counter()
            result = build_site(tmp / "runs", site, None if args.no_mkdocs else public, chart_workers=args.workers)
            total = time.perf_counter() - t1
        finally:
            os.chdir(cwd)
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items())
        print(f"cold: built {len(result.pages)} pages, {len(result.reports)} reports, {result.charts} charts in {total:.1f} s ({steps})")
        os.chdir(tmp)
        try:  # the nightly case with no new run: the reporter's cache (reporter.data.cache) is warm
            t2 = time.perf_counter()
            again = build_site(tmp / "runs", site, None if args.no_mkdocs else public, chart_workers=args.workers)
            unchanged = time.perf_counter() - t2
        finally:
            os.chdir(cwd)
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in again.timings.items())
        print(f"nothing changed: built {len(again.pages)} pages again in {unchanged:.1f} s ({steps})")
        # The nightly case: one new run (the same generator with one run more, of which only the
        # run the archive lacks is copied in).
        write_archive(tmp / "more", args.labels, args.runs + 1)
        have = {p.relative_to(tmp / "runs") for p in (tmp / "runs").glob("*/*")}
        new_run = next(p for p in sorted((tmp / "more").glob("*/*")) if p.relative_to(tmp / "more") not in have)
        shutil.copytree(new_run, tmp / "runs" / new_run.relative_to(tmp / "more"))
        said: list[str] = []
        os.chdir(tmp)
        try:
            t3 = time.perf_counter()
            nightly = build_site(tmp / "runs", site, None if args.no_mkdocs else public, chart_workers=args.workers,
                                 log=said.append)
            one_new = time.perf_counter() - t3
        finally:
            os.chdir(cwd)
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in nightly.timings.items())
        reused = next((s for s in said if "taken from the build cache" in s), "")
        print(f"one new run: built {len(nightly.pages)} pages in {one_new:.1f} s ({steps}); {reused}")
        print(json.dumps({"seconds": round(total, 1), "unchanged_seconds": round(unchanged, 1),
                          "one_new_run_seconds": round(one_new, 1), "reports": len(result.reports), "runs": args.runs,
                          "pages": len(result.pages), "charts": result.charts, "cpus": os.cpu_count()}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
