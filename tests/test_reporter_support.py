"""Helpers for the reporter tests: write small synthetic runs through the collector's writer.

Every number written here is a synthetic test input (never a measurement) and goes to
a pytest temporary folder, never under runs/.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from runformat.archive import RunWriter
from runformat.schema import CaseRecord, EnvironmentEntry, SampleRecord, metric

REFERENCE_AA = Path(__file__).resolve().parent / "data" / "h200-aa-processes-2026-12-02.json"
EPOCH = 1_796_220_000.0  # 2026-12-02, a fixed synthetic start time


def case_workload(case_id: str) -> str:
    return case_id.split("[", 1)[0]


def write_run(
    root: Path,
    label: str,
    cases: Mapping[str, Sequence[Sequence[float]]],
    *,
    run_id: str,
    metric_name: str = "time",
    extra_metrics: Mapping[str, Mapping[str, Sequence[Sequence[float]]]] | None = None,
    failed: Mapping[str, str] | None = None,
    environment: Mapping[tuple[str, str], str] | None = None,
    device: str = "cuda",
) -> Path:
    """Write one run: ``cases`` maps case_id -> one list of samples per worker process.

    ``extra_metrics`` maps a metric name to more {case_id: per-process samples};
    ``failed`` maps case_id -> error text for a case recorded as failed in process 0.
    """
    folder = Path(root) / label / run_id
    folder.mkdir(parents=True)
    writer = RunWriter(folder=folder, run_id=run_id, label=label)
    env = {
        ("run", "status"): "complete",
        ("run", "suite"): "synthetic",
        ("run", "started_at"): "2026-12-02T14:05:12+00:00",
        ("run", "finished_at"): "2026-12-02T14:09:00+00:00",
        ("run", "device"): device,
        ("torch", "version"): "2.11.0+cu130",
        ("cuda", "runtime"): "13.0",
        ("cuda", "cudnn"): "91000",
        ("driver", "version"): "580.00",
        ("gpu0", "name"): "Synthetic GPU",
        ("host", "hostname"): "test-host",
    }
    env.update(environment or {})
    writer.write_environment(EnvironmentEntry(s, k, v) for (s, k), v in env.items())
    records: list[CaseRecord] = []
    samples: list[SampleRecord] = []
    per_metric = {metric_name: cases, **(extra_metrics or {})}
    processes: dict[str, int] = {}
    for name, by_case in per_metric.items():
        m = metric(name)
        for case_id, per_process in by_case.items():
            processes[case_id] = max(processes.get(case_id, 0), len(per_process))
            for p, values in enumerate(per_process):
                for i, v in enumerate(values):
                    samples.append(SampleRecord(case_id, p, name, m.unit, m.better, i, float(v), 10))
    for case_id, n in processes.items():
        for p in range(n):
            records.append(
                CaseRecord(
                    case_id=case_id, workload=case_workload(case_id), params=json.dumps({"case": case_id}),
                    process=p, status="ok", error=None, timing="cuda_event", device=device,
                    started_at=EPOCH + p, duration_s=1.0, flops=2.0e9, bytes=None, items=None, items_unit=None,
                )
            )
    for case_id, error in (failed or {}).items():
        records.append(
            CaseRecord(
                case_id=case_id, workload=case_workload(case_id), params="{}", process=0, status="failed",
                error=error, timing="cuda_event", device=device, started_at=EPOCH, duration_s=0.5,
            )
        )
    writer.write_cases(records, samples)
    return folder


def run_id(n: int, suffix: str = "abcdef") -> str:
    """A valid, deterministic run id for test run ``n``."""
    return f"202612{(n // 24) % 28 + 1:02d}T{n % 24:02d}0000Z-{suffix}"


def lognormal_processes(rng: np.random.Generator, n_proc: int, n_samp: int, center: float, cv_w: float, cv_b: float) -> list[list[float]]:
    """Synthetic per-process samples: a lognormal process effect, lognormal noise within."""
    sw, sb = np.sqrt(np.log1p(cv_w**2)), np.sqrt(np.log1p(cv_b**2))
    effects = sb * rng.standard_normal(n_proc)
    return [list(center * np.exp(e + sw * rng.standard_normal(n_samp))) for e in effects]


def load_reference_aa() -> dict[str, dict[str, list[float]]]:
    """The public H200 A/A reference: process -> case -> raw samples (seconds)."""
    data = json.loads(REFERENCE_AA.read_text())
    return {p: {c: v["samples"] for c, v in cases.items()} for p, cases in data["processes"].items()}


def write_run_arrays(
    root: Path, label: str, run_id: str, case_ids: Sequence[str], process: np.ndarray, values: np.ndarray,
    *, metric_name: str = "time",
) -> Path:
    """Write one run from per-sample arrays (vectorised, for large synthetic archives).

    ``case_ids`` names each sample's case; every (case, process) pair gets an ``ok`` row.
    """
    import pyarrow as pa

    from runformat.archive import write_table_atomic
    from runformat.schema import CASES_SCHEMA, ENVIRONMENT_SCHEMA, SAMPLES_SCHEMA, table_metadata

    folder = Path(root) / label / run_id
    folder.mkdir(parents=True)
    meta = table_metadata(run_id=run_id, label=label)
    m = metric(metric_name)
    n = len(values)
    case_arr = pa.array(list(case_ids), type=pa.string())
    index = np.zeros(n, dtype=np.int32)  # sample index within (case, process): not used by the reporter
    samples = pa.Table.from_arrays(
        [case_arr, pa.array(process.astype(np.int32)), pa.array([m.name] * n), pa.array([m.unit] * n),
         pa.array([m.better] * n), pa.array(index), pa.array(values.astype(np.float64)),
         pa.array(np.ones(n, dtype=np.int64))],
        schema=SAMPLES_SCHEMA,
    ).replace_schema_metadata(meta)
    pairs = sorted(set(zip(case_ids, process.tolist())))
    k = len(pairs)
    cases = pa.Table.from_arrays(
        [pa.array([c for c, _ in pairs]), pa.array([case_workload(c) for c, _ in pairs]), pa.array(["{}"] * k),
         pa.array([p for _, p in pairs], type=pa.int32()), pa.array(["ok"] * k), pa.array([None] * k, type=pa.string()),
         pa.array(["cuda_event"] * k), pa.array(["cuda"] * k),
         pa.array([int(EPOCH * 1e6)] * k, type=pa.timestamp("us", tz="UTC")), pa.array([1.0] * k),
         pa.array([None] * k, type=pa.float64()), pa.array([None] * k, type=pa.float64()),
         pa.array([None] * k, type=pa.float64()), pa.array([None] * k, type=pa.string()),
         *(pa.nulls(k, type=f.type) for f in list(CASES_SCHEMA)[14:])],  # schema 2's optional columns
        schema=CASES_SCHEMA,
    ).replace_schema_metadata(meta)
    env = pa.Table.from_arrays(
        [pa.array(["run"]), pa.array(["status"]), pa.array(["complete"])], schema=ENVIRONMENT_SCHEMA
    ).replace_schema_metadata(meta)
    write_table_atomic(env, folder / "environment.parquet")
    write_table_atomic(samples, folder / "samples.parquet")
    write_table_atomic(cases, folder / "cases.parquet")
    return folder
