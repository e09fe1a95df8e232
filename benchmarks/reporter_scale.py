"""Time the reporter at archive scale: load + all summaries + one comparison of 100 cases.

The archive is SYNTHETIC input for timing the tool (lognormal numbers from a seeded
generator, in a temporary folder that is deleted afterwards), never a measurement and
never written under runs/. By default: 1,000 runs (20 labels x 50 runs) x 100 cases x
5 worker processes x 10 samples = 5M samples. ``--samples 20`` writes 20 samples a case
(5 processes x 4, 2M samples), the CPU suite's shape, where the cost per run and per
attempt weighs more than the cost per sample.

    .venv/bin/python benchmarks/reporter_scale.py [--runs 1000] [--cases 100] [--samples 50] [--processes 5]
        [--keep DIR | --reuse DIR] [--repeat 1] [--cli]

Three measurements, each in a fresh child process (its peak RSS, ``resource.getrusage``,
is its own): the reference, ``pyarrow.dataset`` reading the same samples in one scan and
an exact per-(run, case, metric, process) median, count, min and max by one numpy
lexsort (the least any reporter must do); the reporter cold (no cache: it reads and
checks every run, and fills a fresh cache folder, ``$IMAGEBENCH_CACHE``, outside the archive); the
reporter with that cache.
The ratio of each to the reference is printed, and each process's CPU time (user + system,
its imports included), which moves less than wall time when the host is busy.

``--cli`` adds ``reporter compare`` as a user runs it: ``python -m reporter compare
synthetic-stack-00 synthetic-stack-01 --runs DIR`` (text output to /dev/null) in a fresh
process with a fresh, empty ``$IMAGEBENCH_CACHE``, its wall time from the start of the
process to its exit (interpreter start and imports included) and its peak RSS
(``os.wait4``'s rusage). ``--repeat N`` repeats every measurement N times, each with its
own fresh cache folder, and prints every value.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LABELS = 20
PROCESSES = 5
SAMPLES_PER_PROCESS = 10


def write_synthetic_archive(out: Path, n_runs: int, n_cases: int, seed: int = 0, *, processes: int = PROCESSES,
                            samples_per_process: int = SAMPLES_PER_PROCESS) -> None:
    """Write ``n_runs`` synthetic runs of ``n_cases`` cases, each measured by ``processes`` worker
    processes of ``samples_per_process`` samples, under ``out`` (timing input only)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from runformat.schema import (
        CASES_FILE, CASES_SCHEMA, ENVIRONMENT_FILE, ENVIRONMENT_SCHEMA, SAMPLES_FILE, SAMPLES_SCHEMA, table_metadata,
    )

    rng = np.random.default_rng(seed)
    case_ids = [f"synthetic_matmul[n={256 * (i + 1)}]" for i in range(n_cases)]
    centers = np.exp(rng.uniform(np.log(1e-5), np.log(1e-1), n_cases))
    n_per_case = processes * samples_per_process
    n_samples = n_cases * n_per_case
    sample_case = np.repeat(np.arange(n_cases), n_per_case)
    sample_process = np.tile(np.repeat(np.arange(processes, dtype=np.int32), samples_per_process), n_cases)
    sample_index = np.tile(np.arange(samples_per_process, dtype=np.int32), n_cases * processes)
    case_col = pa.array([case_ids[i] for i in sample_case])
    constant = {
        "metric": pa.array(["time"] * n_samples),
        "unit": pa.array(["s"] * n_samples),
        "better": pa.array(["lower"] * n_samples),
    }
    env_keys = [("run", "status"), ("run", "suite"), ("torch", "version"), ("cuda", "runtime"), ("gpu0", "name"),
                ("host", "hostname")] + [("env", f"SYNTHETIC_VAR_{i}") for i in range(110)]
    attempts = n_cases * processes
    for r in range(n_runs):
        label = f"synthetic-stack-{r % LABELS:02d}"
        run_id = f"2026{(r // 28 // 24) % 12 + 1:02d}{(r // 24) % 28 + 1:02d}T{r % 24:02d}0000Z-{r:06x}"
        folder = out / label / run_id
        folder.mkdir(parents=True)
        meta = table_metadata(run_id=run_id, label=label)
        speed = 1.0 + 0.02 * (r % LABELS)
        process_effect = np.repeat(rng.normal(0, 0.02, n_cases * processes), samples_per_process)
        values = centers[sample_case] / speed * np.exp(process_effect + rng.normal(0, 0.03, n_samples))
        samples = pa.Table.from_arrays(
            [case_col, pa.array(sample_process), constant["metric"], constant["unit"], constant["better"],
             pa.array(sample_index), pa.array(values), pa.array(np.full(n_samples, 10, dtype=np.int64))],
            schema=SAMPLES_SCHEMA,
        ).replace_schema_metadata(meta)
        cases = pa.Table.from_arrays(
            [pa.array([c for c in case_ids for _ in range(processes)]),
             pa.array(["synthetic_matmul"] * attempts),
             pa.array([f'{{"n":{256 * (i + 1)}}}' for i in range(n_cases) for _ in range(processes)]),
             pa.array(np.tile(np.arange(processes, dtype=np.int32), n_cases)),
             pa.array(["ok"] * attempts), pa.array([None] * attempts, type=pa.string()),
             pa.array(["cuda_event"] * attempts), pa.array(["cuda"] * attempts),
             pa.array(np.full(attempts, 1_796_220_000_000_000 + r, dtype=np.int64), type=pa.timestamp("us", tz="UTC")),
             pa.array(np.ones(attempts)), pa.array(np.full(attempts, 1e9)), pa.array([None] * attempts, type=pa.float64()),
             pa.array([None] * attempts, type=pa.float64()), pa.array([None] * attempts, type=pa.string()),
             *(pa.nulls(attempts, type=f.type) for f in list(CASES_SCHEMA)[14:])],  # schema 2's optional columns
            schema=CASES_SCHEMA,
        ).replace_schema_metadata(meta)
        env_values = ["complete", "synthetic", "0.0.0+synthetic", "0.0", "Synthetic GPU", "synthetic-host"]
        env_values += ["x"] * (len(env_keys) - len(env_values))
        environment = pa.Table.from_arrays(
            [pa.array([s for s, _ in env_keys]), pa.array([k for _, k in env_keys]), pa.array(env_values)],
            schema=ENVIRONMENT_SCHEMA,
        ).replace_schema_metadata(meta)
        for name, table in ((ENVIRONMENT_FILE, environment), (CASES_FILE, cases), (SAMPLES_FILE, samples)):
            pq.write_table(table, folder / name, compression="zstd")


def time_reporter(runs_dir: Path) -> list[tuple[str, float, float]]:
    """Load, summarise and compare; returns (step, wall seconds, peak RSS MiB after the step)."""
    from reporter.model.compare import compare_labels, compute_summaries
    from reporter.data.load import load_archive

    def peak_mib() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    steps = []
    t0 = time.perf_counter()
    archive = load_archive(runs_dir)
    t1 = time.perf_counter()
    steps.append((f"load ({len(archive.runs)} runs)", t1 - t0, peak_mib()))
    summaries = compute_summaries(archive)
    t2 = time.perf_counter()
    steps.append((f"all summaries ({len(summaries):,} label/case/metric groups)", t2 - t1, peak_mib()))
    labels = archive.labels()
    comparison = compare_labels(archive, labels[0], labels[1])
    t3 = time.perf_counter()
    steps.append((f"compare {labels[0]} vs {labels[1]} ({len(comparison.rows)} cases)", t3 - t2, peak_mib()))
    steps.append((f"total ({'samples used' if archive.samples_used else 'no sample read'})", t3 - t0, peak_mib()))
    return steps


def time_reference(runs_dir: Path) -> list[tuple[str, float, float]]:
    """pyarrow.dataset: every samples file in one scan, then the exact per-process medians by a numpy lexsort."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    t0 = time.perf_counter()
    files = sorted(str(p) for p in runs_dir.glob("[!.]*/*/samples.parquet"))
    table = ds.dataset(files, format="parquet").to_table(columns=["case_id", "metric", "process", "value", "__filename"])
    t1 = time.perf_counter()
    codes = [pc.dictionary_encode(table[c]).combine_chunks() for c in ("__filename", "case_id", "metric")]
    key = np.zeros(table.num_rows, np.int64)
    for c in codes:
        key = key * len(c.dictionary) + c.indices.to_numpy().astype(np.int64)
    process = table["process"].to_numpy()
    key = key * (int(process.max()) + 1) + process
    value = table["value"].to_numpy()
    order = np.lexsort((value, key))
    ks, vs = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    n = np.diff(np.r_[starts, len(ks)])
    median = (vs[starts + (n - 1) // 2] + vs[starts + n // 2]) / 2
    vmin, vmax = vs[starts], vs[starts + n - 1]
    t2 = time.perf_counter()
    assert len(median) == len(vmin) == len(vmax)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return [(f"pyarrow.dataset read ({table.num_rows:,} samples)", t1 - t0, rss),
            (f"exact group-by ({len(median):,} processes)", t2 - t1, rss), ("total", t2 - t0, rss)]


def time_cli_compare(runs_dir: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """``reporter compare`` of the first two labels as a user runs it, in a fresh process: (wall s, CPU s, peak RSS MiB)."""
    command = [sys.executable, "-m", "reporter", "compare", "synthetic-stack-00", "synthetic-stack-01", "--runs", str(runs_dir)]
    t = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"reporter compare exited {child.returncode}: {error}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def _shape(args: argparse.Namespace) -> list[str]:
    return ["--runs", str(args.runs), "--cases", str(args.cases), "--samples", str(args.samples),
            "--processes", str(args.processes)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--samples", type=int, default=PROCESSES * SAMPLES_PER_PROCESS,
                        help="samples a case, split evenly over --processes worker processes")
    parser.add_argument("--processes", type=int, default=PROCESSES, help="worker processes a case")
    parser.add_argument("--keep", type=Path, help="write the synthetic archive here and keep it (must not exist)")
    parser.add_argument("--reuse", type=Path, help="time an archive written before with --keep")
    parser.add_argument("--repeat", type=int, default=1, help="times each measurement is made (every value printed)")
    parser.add_argument("--cli", action="store_true", help="also time `reporter compare` cold, process start included")
    parser.add_argument("--write-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=2, metavar=("WHAT", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.samples % args.processes:
        parser.error(f"--samples {args.samples} is not a multiple of --processes {args.processes}")
    per_process = args.samples // args.processes
    if args.write_only:
        write_synthetic_archive(args.write_only, args.runs, args.cases, processes=args.processes,
                                samples_per_process=per_process)
        return
    if args.measure:
        what, folder = args.measure
        steps = time_reference(Path(folder)) if what == "reference" else time_reporter(Path(folder))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"steps": steps, "cpu": usage.ru_utime + usage.ru_stime}))
        return
    tmp = None
    if args.reuse:
        out = args.reuse
    elif args.keep:
        out = args.keep
        if out.exists():
            parser.error(f"--keep {out} already exists")
    else:
        tmp = tempfile.mkdtemp(prefix="imagebench-synthetic-archive-")
        out = Path(tmp) / "archive"
    caches: list[str] = []
    try:
        if not args.reuse:
            t = time.perf_counter()
            subprocess.run([sys.executable, __file__, *_shape(args), "--write-only", str(out)], check=True)
            print(f"wrote a synthetic archive of {args.runs} runs x {args.cases} cases x {args.samples} samples "
                  f"({args.processes} processes x {per_process}) in {time.perf_counter() - t:.1f} s ({out})")
        print(f"timing on {os.cpu_count()} core(s), each measurement in a fresh process, {args.repeat} time(s):")
        totals: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}
        peaks: dict[str, list[float]] = {}
        for attempt in range(args.repeat):
            # The reporter's cache lives outside the archive: a fresh, empty one for the cold
            # measurement, kept for the cached one, removed at the end.
            caches.append(tempfile.mkdtemp(prefix="imagebench-scale-cache-"))
            env = {**os.environ, "IMAGEBENCH_CACHE": caches[-1]}
            for what, title in (("reference", "reference: pyarrow.dataset read + exact group-by"),
                                ("reporter", "reporter cold (no cache; writes it)"), ("reporter", "reporter with the cache")):
                done = subprocess.run([sys.executable, __file__, "--measure", what, str(out)], check=True,
                                      capture_output=True, text=True, env=env)
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                steps = measured["steps"]
                totals.setdefault(title, []).append(steps[-1][1])
                cpus.setdefault(title, []).append(measured["cpu"])
                peaks.setdefault(title, []).append(steps[-1][2])
                width = max(len(s) for s, _, _ in steps)
                print(f"\n{title} ({attempt + 1} of {args.repeat})\n{'step':<{width}}  {'wall s':>8}  {'peak RSS MiB':>12}")
                for step, wall, rss in steps:
                    print(f"{step:<{width}}  {wall:>8.2f}  {rss:>12.0f}")
            if args.cli:
                caches.append(tempfile.mkdtemp(prefix="imagebench-scale-cache-"))
                wall, cpu, rss = time_cli_compare(out, {**os.environ, "IMAGEBENCH_CACHE": caches[-1]})
                title = "reporter compare cold (a fresh process and cache, process start included)"
                totals.setdefault(title, []).append(wall)
                cpus.setdefault(title, []).append(cpu)
                peaks.setdefault(title, []).append(rss)
                print(f"\n{title} ({attempt + 1} of {args.repeat}): {wall:.2f} s, peak RSS {rss:.0f} MiB")
        reference = totals["reference: pyarrow.dataset read + exact group-by"]
        print()
        for title, walls in totals.items():
            ratios = ", ".join(f"{w / r:.2f}x" for w, r in zip(walls, reference))
            print(f"{title}: {', '.join(f'{w:.2f}' for w in walls)} s (CPU {', '.join(f'{c:.2f}' for c in cpus[title])} s); "
                  f"peak RSS {', '.join(f'{m:.0f}' for m in peaks[title])} MiB"
                  + ("" if walls is reference else f"; {ratios} the reference of the same repeat"))
    finally:
        for cache_dir in caches:
            shutil.rmtree(cache_dir, ignore_errors=True)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
