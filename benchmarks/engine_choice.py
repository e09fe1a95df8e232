"""Which columnar engine should compute the reporter's per-process summaries?

Side by side on the same synthetic archive (``benchmarks/reporter_scale.py``'s generator:
timing input only, never a measurement, deleted afterwards): read every run's samples and
compute the exact median, count, min and max per (run, case, metric, process), with

* pyarrow.dataset + numpy (one lexsort, then order statistics by group offsets),
* the same as the reporter does it (``pyarrow+numpy-grouped``): one scan of the dataset,
  the run known from each batch's fragment, case and metric read as Parquet dictionaries
  (codes, no strings), and ``reporter.model.stats.sort_within_groups`` (samples are stored
  grouped, so only each process's values are sorted) instead of a lexsort,
* pyarrow's own ``group_by`` (which has no exact median: ``approximate_median``, t-digest),
* DuckDB (``read_parquet`` + ``median``), and
* Polars (``scan_parquet`` + ``median``),

each in a fresh child process (so a warm page cache is the only thing shared, and peak RSS
is each engine's own; its CPU time, user + system of the whole process, imports included, is
printed beside the wall time of the work, as it moves less than wall time on a busy host), ``--repeat`` times, every value printed (best first is not
enough on a shared host). Engines that are not installed are reported as such.

The archive's shape: ``--samples`` a case (default 50: 5M samples over 1,000 runs x 100
cases), split over ``--processes`` worker processes (default 5); ``--samples 20`` is the
CPU suite's shape (2M samples, the same 500,000 attempts), where the cost per file and per
group weighs more than the cost per sample.

    .venv/bin/python benchmarks/engine_choice.py [--runs 1000] [--cases 100] [--samples 50] [--processes 5]
        [--repeat 3] [--reuse DIR] [--engine NAME ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

ENGINES = ("pyarrow+numpy", "pyarrow+numpy-grouped", "pyarrow-approx", "duckdb", "polars")


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.glob("*/*/samples.parquet"))


def _run_pyarrow_numpy(root: Path) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    files = _files(root)
    dataset = ds.dataset(files, format="parquet")
    # One integer per file: the run (the run id lives in the folder name, not in a column).
    tables = []
    for i, fragment in enumerate(dataset.get_fragments()):
        t = fragment.to_table(columns=["case_id", "metric", "process", "value"])
        tables.append(t.append_column("run", pa.array(np.full(t.num_rows, i, dtype=np.int32))))
    table = pa.concat_tables(tables)
    case = pc.dictionary_encode(table["case_id"]).combine_chunks()
    metric = pc.dictionary_encode(table["metric"]).combine_chunks()
    run = table["run"].to_numpy()
    process = table["process"].to_numpy()
    value = table["value"].to_numpy()
    c = case.indices.to_numpy()
    m = metric.indices.to_numpy()
    key = ((run.astype(np.int64) * len(case.dictionary) + c) * len(metric.dictionary) + m) * (process.max() + 1) + process
    order = np.lexsort((value, key))
    ks, vs = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    n = np.diff(np.r_[starts, len(ks)])
    lo = starts + (n - 1) // 2
    hi = starts + n // 2
    median = (vs[lo] + vs[hi]) / 2
    return len(median)


def _run_pyarrow_numpy_grouped(root: Path) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as ds

    from reporter.model.stats import sort_within_groups

    files = _files(root)
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=["case_id", "metric"]))
    dataset = ds.dataset(files, format=fmt)
    run_of = {f: i for i, f in enumerate(files)}
    batches, runs = [], []
    for tagged in dataset.scanner(columns=["case_id", "metric", "process", "value"]).scan_batches():
        batches.append(tagged.record_batch)
        runs.append(np.full(tagged.record_batch.num_rows, run_of[tagged.fragment.path], dtype=np.int64))
    table = pa.Table.from_batches(batches).unify_dictionaries()
    run = np.concatenate(runs)
    case = np.concatenate([c.indices.to_numpy() for c in table["case_id"].chunks]).astype(np.int64)
    metric = np.concatenate([c.indices.to_numpy() for c in table["metric"].chunks]).astype(np.int64)
    process = table["process"].to_numpy().astype(np.int64)
    value = table["value"].to_numpy()
    key = ((run * (case.max() + 1) + case) * (metric.max() + 1) + metric) * (process.max() + 1) + process
    order = sort_within_groups(key, value)
    ks, vs = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    n = np.diff(np.r_[starts, len(ks)])
    median = (vs[starts + (n - 1) // 2] + vs[starts + n // 2]) / 2
    vmin, vmax = vs[starts], vs[starts + n - 1]
    assert len(vmin) == len(vmax) == len(median)
    return len(median)


def _run_pyarrow_approx(root: Path) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as ds

    dataset = ds.dataset(_files(root), format="parquet")
    tables = []
    for i, fragment in enumerate(dataset.get_fragments()):
        t = fragment.to_table(columns=["case_id", "metric", "process", "value"])
        tables.append(t.append_column("run", pa.array(np.full(t.num_rows, i, dtype=np.int32))))
    table = pa.concat_tables(tables)
    out = table.group_by(["run", "case_id", "metric", "process"]).aggregate(
        [("value", "approximate_median"), ("value", "count"), ("value", "min"), ("value", "max")]
    )
    return out.num_rows


def _run_duckdb(root: Path) -> int:
    import duckdb

    con = duckdb.connect()
    files = _files(root)
    q = (
        "SELECT filename, case_id, metric, process, median(value), count(*), min(value), max(value) "
        "FROM read_parquet($files, filename=true) GROUP BY ALL"
    )
    return len(con.execute(q, {"files": files}).fetchnumpy()["case_id"])


def _run_polars(root: Path) -> int:
    import polars as pl

    lf = pl.scan_parquet(_files(root), include_file_paths="file")
    out = (
        lf.select(["file", "case_id", "metric", "process", "value"])
        .group_by(["file", "case_id", "metric", "process"])
        .agg(pl.col("value").median().alias("median"), pl.len(), pl.col("value").min().alias("min"), pl.col("value").max().alias("max"))
        .collect()
    )
    return out.height


RUNNERS = {
    "pyarrow+numpy": _run_pyarrow_numpy,
    "pyarrow+numpy-grouped": _run_pyarrow_numpy_grouped,
    "pyarrow-approx": _run_pyarrow_approx,
    "duckdb": _run_duckdb,
    "polars": _run_polars,
}


def _child(engine: str, root: Path) -> None:
    import resource

    try:
        t = time.perf_counter()
        groups = RUNNERS[engine](root)
        wall = time.perf_counter() - t
    except ImportError as e:
        print(json.dumps({"engine": engine, "error": f"not installed ({e.name})"}))
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"engine": engine, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                      "rss": usage.ru_maxrss / 1024.0, "groups": groups}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--samples", type=int, default=50, help="samples a case (--reuse: as the archive was written)")
    parser.add_argument("--processes", type=int, default=5, help="worker processes a case")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reuse", type=Path, help="an archive written before (reporter_scale.py --keep)")
    parser.add_argument("--engine", action="append", choices=ENGINES, help="time only these engines (repeatable)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]))
        return
    from reporter_scale import write_synthetic_archive

    tmp = Path(tempfile.mkdtemp(prefix="imagebench-engines-"))
    try:
        root = args.reuse or tmp / "archive"
        if not args.reuse:
            if args.samples % args.processes:
                parser.error(f"--samples {args.samples} is not a multiple of --processes {args.processes}")
            write_synthetic_archive(root, args.runs, args.cases, processes=args.processes,
                                    samples_per_process=args.samples // args.processes)
        print(f"synthetic archive: {args.runs} runs x {args.cases} cases x {args.samples} samples "
              f"({args.processes} processes); {args.repeat} time(s), each engine in a fresh process, "
              "the engines taken in turn")
        engines = args.engine or list(ENGINES)
        results: dict[str, list[dict]] = {e: [] for e in engines}
        for _ in range(args.repeat):  # in turn, so a slow spell of the shared host hits every engine alike
            for engine in engines:
                if results[engine] and "error" in results[engine][0]:
                    continue
                out = subprocess.run([sys.executable, __file__, "--child", engine, str(root)],
                                     capture_output=True, text=True, check=True).stdout
                results[engine].append(json.loads(out.strip().splitlines()[-1]))
        print(f"{'engine':<22} {'wall s (each run)':<24} {'CPU s (process, each run)':<27} {'peak RSS MiB':>13} {'groups':>10}")
        for engine, rs in results.items():
            if "error" in rs[0]:
                print(f"{engine:<22} {rs[0]['error']}")
                continue
            walls = ", ".join(f"{r['wall']:.2f}" for r in rs)
            cpus = ", ".join(f"{r['cpu']:.2f}" for r in rs)
            print(f"{engine:<22} {walls:<24} {cpus:<27} {max(r['rss'] for r in rs):>13.0f} {rs[0]['groups']:>10,}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
