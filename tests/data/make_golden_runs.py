"""Write the golden run archive under tests/data/golden_runs/ (TEST FIXTURES ONLY).

Every number here is synthetic and deterministic: it exists so the site builder can be
tested against expected Markdown (tests/test_site_golden.py). Nothing written here is a
measurement, and none of it may ever be copied into runs/.

    .venv/bin/python tests/data/make_golden_runs.py   # rewrites tests/data/golden_runs/

Three labels on one synthetic device class, in version order 2.8.0 < 2.9.0 < 2.10.0 (so
ordering by packaging.version, not by string, is exercised); 2.9.0 has a second,
interrupted run; 2.10.0 was recorded on another host with another driver (so the
article must warn). Some strings are hostile on purpose (Markdown and HTML syntax,
something that looks like a Jinja expression) to check that every page escapes them.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runformat.archive import RunWriter  # noqa: E402
from runformat.schema import (  # noqa: E402
    CaseRecord,
    EnvironmentEntry,
    SampleRecord,
    case_id_for,
    metric,
    params_to_json,
)

OUT = Path(__file__).resolve().parent / "golden_runs"
PROCESSES = 3
SAMPLES = 8

HOSTILE_ERROR = "RuntimeError: boom | <script>alert(1)</script> {{ 7*7 }} [x](javascript:alert(1))\nsecond line `code`"

# The workload registry the golden site is rendered with (the real one keeps growing;
# the golden pages must not change when a workload is added to collector/workloads/).
GOLDEN_WORKLOADS: dict[str, dict[str, str]] = {
    "matmul": {"family": "basic", "title": "Matrix multiply (fixture)", "method": "Fixture method: `torch.mm` timed in blocks.",
               "title_zh": "矩阵乘法（测试数据）", "method_zh": "测试用说明：按块计时的 `torch.mm`。"},
    "conv2d": {"family": "basic", "title": "Convolution (fixture)", "method": "Fixture method: a 3x3 convolution.",
               "title_zh": "卷积（测试数据）", "method_zh": "测试用说明：3x3 卷积。"},
    "memory": {"family": "basic", "title": "Memory bandwidth (fixture)", "method": "Fixture method: clone.",
               "title_zh": "显存带宽（测试数据）", "method_zh": "测试用说明：clone。"},
    "resnet50_train": {"family": "training", "title": "ResNet-50 training step (fixture)", "method": "Fixture method: one step.",
                       "title_zh": "ResNet-50 训练步（测试数据）", "method_zh": "测试用说明：一个训练步。"},
    "max_batch": {"family": "memory", "title": "Largest batch (fixture)", "method": "Fixture method: doubling search.",
                  "title_zh": "最大批次（测试数据）", "method_zh": "测试用说明：倍增搜索。"},
    "compile": {"family": "compile", "title": "torch.compile (fixture)", "method": "Fixture method: first call and steady state.",
                "title_zh": "torch.compile（测试数据）", "method_zh": "测试用说明：首次调用与稳态。"},
    "multigpu": {"family": "multigpu", "title": "Data parallel scaling (fixture)", "method": "Fixture method: DDP steps.",
                 "title_zh": "数据并行扩展（测试数据）", "method_zh": "测试用说明：DDP 训练步。"},
    "inference": {"family": "inference", "title": "Inference latency (fixture)", "method": "Fixture method: one request at a time.",
                  "title_zh": "推理延迟（测试数据）", "method_zh": "测试用说明：逐个请求。"},
    "numerics": {"family": "numerics", "title": "Numerical drift (fixture)", "method": "Fixture method: loss after 10 steps.",
                 "title_zh": "数值漂移（测试数据）", "method_zh": "测试用说明：10 步后的 loss。"},
}

# label -> (speed factor per workload; >1 is slower), fingerprint overrides
LABELS: dict[str, dict[str, Any]] = {
    "golden-2.8.0": {
        "torch": "2.8.0+cu128", "cuda": "12.8", "cudnn": "91002", "driver": "570.10", "host": "bench-a",
        "image": "example.invalid/pytorch:2.8.0-cuda12.8", "started": dt.datetime(2026, 1, 10, 12, 0, 0),
        "suffix": "a1b2c3", "factor": {},
    },
    "golden-2.9.0": {
        "torch": "2.9.0+cu128", "cuda": "12.8", "cudnn": "91002", "driver": "570.10", "host": "bench-a",
        "image": "example.invalid/pytorch:2.9.0-cuda12.8", "started": dt.datetime(2026, 2, 10, 12, 0, 0),
        "suffix": "d4e5f6",
        "factor": {("matmul", "bf16"): 0.92, "memory": 1.06, "resnet50_train": 0.95, "inference": 0.97, "compile": 0.85},
        "failed": ("conv2d", HOSTILE_ERROR),
    },
    "golden-2.10.0": {
        "torch": "2.10.0+cu130", "cuda": "13.0", "cudnn": "91300", "driver": "580.20", "host": "bench-b | <b>other</b>",
        "image": "example.invalid/pytorch:2.10.0-cuda13.0", "started": dt.datetime(2026, 3, 10, 12, 0, 0),
        "suffix": "0a0b0c",
        "factor": {("matmul", "bf16"): 0.88, "memory": 1.05, "resnet50_train": 0.9, "inference": 0.93, "compile": 0.8,
                   "multigpu": 0.96},
    },
}

# (workload, params, work, base time in s, timing) per case
CASES: list[tuple[str, dict[str, Any], dict[str, Any], float, str]] = []
for _n in (256, 1024, 4096):
    for _dtype, _peak in (("fp32", 50e12), ("bf16", 700e12)):
        _flops = 2.0 * _n**3
        _eff = {256: 0.05, 1024: 0.4, 4096: 0.85}[_n]
        CASES.append(("matmul", {"n": _n, "dtype": _dtype}, {"flops": _flops, "bytes": 3.0 * _n * _n * (4 if _dtype == "fp32" else 2)},
                      _flops / (_peak * _eff), "cuda_event"))
CASES.append(("conv2d", {"batch": 16, "channels": 64, "size": 224, "kernel": 3, "dtype": "fp32"},
              {"flops": 2.0 * 16 * 64 * 64 * 9 * 224 * 224, "bytes": 2.0 * 16 * 64 * 224 * 224 * 4}, 1.4e-3, "cuda_event"))
for _elements in (1 << 20, 1 << 24):
    CASES.append(("memory", {"op": "clone", "elements": _elements, "dtype": "fp32"}, {"bytes": 8.0 * _elements},
                  8.0 * _elements / 3.5e12 + 4e-6, "cuda_event"))
CASES.append(("resnet50_train", {"batch": 64, "amp": True}, {"items": 64.0, "items_unit": "images"}, 0.085, "wall"))
CASES.append(("max_batch", {"model": "resnet50"}, {"items_unit": "images"}, 0.0, "oneshot"))
CASES.append(("compile", {"model": "resnet50", "mode": "default"}, {"items": 64.0, "items_unit": "images"}, 0.06, "wall"))
for _gpus in (1, 2, 4):
    CASES.append(("multigpu", {"gpus": _gpus, "model": "resnet50"}, {"items": 64.0 * _gpus, "items_unit": "images"},
                  0.09 * (1 + 0.04 * (_gpus - 1)), "wall"))
CASES.append(("inference", {"model": "resnet50", "batch": 1}, {"items": 1.0, "items_unit": "images"}, 2.5e-3, "wall"))
CASES.append(("numerics", {"model": "mlp", "steps": 10}, {}, 0.0, "none"))
CASES.append(("custom_probe", {"what": "not in the registry"}, {}, 1e-3, "perf_counter"))


def _rng(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(json.dumps(key, sort_keys=True, default=str).encode()))


def _factor(spec: dict[str, Any], workload: str, params: dict[str, Any]) -> float:
    factors = spec["factor"]
    return float(factors.get((workload, params.get("dtype")), factors.get(workload, 1.0)))


def _samples(label: str, run_id: str, workload: str, params: dict[str, Any], base: float, factor: float,
             process: int) -> list[tuple[str, float, int]]:
    """Synthetic (metric, value, iterations) triples: a per-process offset plus noise."""
    rng = _rng(label, run_id, workload, params, process)
    offset = 1.0 + rng.normal(0.0, 0.004)
    out: list[tuple[str, float, int]] = []

    def times(name: str, t: float, n: int = SAMPLES, noise: float = 0.006, iterations: int = 10) -> None:
        for v in t * offset * (1.0 + np.abs(rng.normal(0.0, noise, n))):
            out.append((name, float(v), iterations))

    if workload == "numerics":
        loss = 2.302585 - (0.0 if factor == 1.0 else 1e-6) - 0.001 * ("2.10" in label)
        out.append(("loss", float(loss), 1))
        out.append(("checksum", float(1234.5 + 0.25 * ("2.10" in label)), 1))
    elif workload == "max_batch":
        out.append(("max_batch", float(512 if "2.10" in label else 448), 1))
    elif workload == "inference":
        times("latency", base * factor, n=60, noise=0.05, iterations=1)
        out.append(("peak_allocated", float(1.5e9 * offset), 1))
    elif workload == "compile":
        out.append(("compile_time", float(41.0 * factor * offset), 1))
        times("time", base * (0.98 if factor != 1.0 else 1.0), iterations=1)
    elif workload in ("resnet50_train", "multigpu"):
        times("time", base * factor, iterations=1)
        out.append(("peak_allocated", float(21.5e9 * (0.97 if factor != 1.0 else 1.0)), 1))
    else:
        times("time", base * factor)
        if workload != "custom_probe":
            times("wall_time", base * factor * 1.02 + 5e-6)
    return out


def _environment(label: str, spec: dict[str, Any], run_id: str, started: dt.datetime, finished: dt.datetime | None,
                 status: str, cases_planned: int) -> list[EnvironmentEntry]:
    rows = [
        ("imagebench", "version", "0.1.0"),
        ("container", "image", spec["image"]),
        ("container", "docker", "True"),
        ("torch", "version", spec["torch"]),
        ("torch", "cuda_available", "True"),
        ("torch", "config", "PyTorch built with:\n  - GCC 11.2\n  - CUDA Runtime " + spec["cuda"]),
        ("cuda", "runtime", spec["cuda"]),
        ("cuda", "cudnn", spec["cudnn"]),
        ("cuda", "nccl", "2.27.3"),
        ("gpu", "count", "1"),
        ("gpu0", "name", "Synthetic Test GPU (fixture)"),
        ("gpu0", "total_memory_bytes", str(141 * 2**30)),
        ("gpu0", "compute_capability", "9.0"),
        ("driver", "version", spec["driver"]),
        ("host", "hostname", spec["host"]),
        ("cpu", "model", "Synthetic Test CPU (fixture)"),
        ("cpu", "logical_cores", "32"),
        ("memory", "total_bytes", str(256 * 2**30)),
        ("os", "distribution", "Debian GNU/Linux 12 (bookworm)"),
        ("os", "kernel", "6.1.0-test"),
        ("python", "version", "3.11.7"),
        ("packages", "torch", spec["torch"]),
        ("packages", "numpy", "2.1.0"),
        ("env", "CUDA_VISIBLE_DEVICES", "0"),
        ("command", "argv", f"collector run --label {label} --suite quick --processes {PROCESSES}"),
    ]
    run = {
        "run_id": run_id, "label": label, "suite": "quick", "processes": str(PROCESSES), "device": "cuda",
        "only": "[]", "python": "/usr/bin/python3", "interleaved": "False", "started_at": started.isoformat() + "+00:00",
        "cases_planned": str(cases_planned), "collector_version": "0.1.0", "status": status,
    }
    if finished is not None:
        run["finished_at"] = finished.isoformat() + "+00:00"
    rows += [("run", k, v) for k, v in sorted(run.items())]
    return [EnvironmentEntry(*r) for r in rows]


def write_run(label: str, spec: dict[str, Any], started: dt.datetime, suffix: str, *, limit: int | None = None) -> None:
    run_id = started.strftime("%Y%m%dT%H%M%SZ") + "-" + suffix
    folder = OUT / label / run_id
    folder.mkdir(parents=True)
    writer = RunWriter(folder=folder, run_id=run_id, label=label)
    cases: list[CaseRecord] = []
    samples: list[SampleRecord] = []
    clock = started.replace(tzinfo=dt.timezone.utc).timestamp()
    chosen = CASES if limit is None else CASES[:limit]
    for workload, params, work, base, timing in chosen:
        cid = case_id_for(workload, params)
        failed = spec.get("failed")
        for process in range(PROCESSES):
            clock += 7.0
            if failed and failed[0] == workload:
                cases.append(CaseRecord(cid, workload, params_to_json(params), process, "failed", failed[1], "none", "cuda",
                                        clock, 0.5))
                continue
            cases.append(CaseRecord(cid, workload, params_to_json(params), process, "ok", None, timing, "cuda", clock, 6.5,
                                    flops=work.get("flops"), bytes=work.get("bytes"), items=work.get("items"),
                                    items_unit=work.get("items_unit")))
            for index_by_metric, (name, value, iterations) in _indexed(
                    _samples(label, run_id, workload, params, base, _factor(spec, workload, params), process)):
                m = metric(name)
                samples.append(SampleRecord(cid, process, name, m.unit, m.better, index_by_metric, value, iterations))
    if limit is not None:  # an interrupted run: the case in flight is recorded as such
        workload, params, *_ = CASES[limit]
        cases.append(CaseRecord(case_id_for(workload, params), workload, params_to_json(params), 0, "interrupted",
                                "the run was interrupted while this case ran", "none", "cuda", clock + 1, 0.1))
    finished = dt.datetime.fromtimestamp(clock + 10, dt.timezone.utc).replace(tzinfo=None)
    status = "complete" if limit is None else "interrupted"
    writer.write_environment(_environment(label, spec, run_id, started, finished, status, len(CASES)))
    writer.write_cases(cases, samples)


def _indexed(triples: list[tuple[str, float, int]]) -> list[tuple[int, tuple[str, float, int]]]:
    seen: dict[str, int] = {}
    out = []
    for t in triples:
        i = seen.get(t[0], 0)
        seen[t[0]] = i + 1
        out.append((i, t))
    return out


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for label, spec in LABELS.items():
        write_run(label, spec, spec["started"], spec["suffix"])
    spec = LABELS["golden-2.9.0"]
    write_run("golden-2.9.0", spec, spec["started"] + dt.timedelta(days=1), "ffee01", limit=4)
    print(f"wrote {sum(1 for _ in OUT.glob('*/*'))} runs under {OUT}")


if __name__ == "__main__":
    main()
