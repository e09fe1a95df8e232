"""Test-only workloads that fail on purpose: crashes, hangs, out-of-memory, bad values.

Registered only through ``IMAGEBENCH_EXTRA_WORKLOADS=tests.fault_workloads`` (never
shipped in ``collector/workloads/``), so the fault-injection tests can run a real
collector against them. Like every workload module, nothing here imports torch at
module level. ``fault_gate`` blocks until the file named by ``IMAGEBENCH_TEST_GATE``
exists, which lets a test interrupt a run at a known point.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload

GATE_ENV = "IMAGEBENCH_TEST_GATE"
HOSTILE_ENV = "IMAGEBENCH_TEST_HOSTILE"
DIE_ENV = "IMAGEBENCH_TEST_DIE"  # "1": fault_die kills its worker (set with --env for one stack)


def _record_a_time(ctx: Any, seconds: float = 0.002) -> None:
    ctx.time_once(lambda: time.sleep(seconds), metric_name="time")


def _cases(*params: dict[str, Any]):
    def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
        return [dict(p) for p in params]

    return cases


def run_ok(params: Mapping[str, Any], ctx: Any) -> None:
    _record_a_time(ctx)


def run_segfault(params: Mapping[str, Any], ctx: Any) -> None:
    if params["how"] == "ctypes":
        import ctypes

        ctypes.string_at(0)  # a read of address 0 in C: a real SIGSEGV
    else:
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)  # the signal may take a moment to arrive


def run_abort(params: Mapping[str, Any], ctx: Any) -> None:
    os.abort()


def run_hang(params: Mapping[str, Any], ctx: Any) -> None:
    while True:
        time.sleep(0.1)


def run_oom(params: Mapping[str, Any], ctx: Any) -> None:
    kind = params["kind"]
    if kind == "host":
        bytearray(1 << 50)  # 1 PiB: beyond any address space, so malloc fails -> MemoryError
    elif kind == "torch_cpu":
        ctx.torch.empty(1 << 50, dtype=ctx.torch.uint8)  # "DefaultCPUAllocator: can't allocate memory"
    else:  # what a GPU run meets; raised by hand so the test runs on a CPU
        raise ctx.torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 80.00 GiB. GPU 0 has a total capacity of 79.19 GiB"
        )


_POISONED = False  # this worker process met a (simulated) sticky CUDA error


def run_cuda_error(params: Mapping[str, Any], ctx: Any) -> None:
    global _POISONED
    _POISONED = True
    raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported")


def run_after_cuda_error(params: Mapping[str, Any], ctx: Any) -> None:
    if _POISONED:
        raise RuntimeError("this worker process was reused after a CUDA error")
    _record_a_time(ctx)


def run_gpu(params: Mapping[str, Any], ctx: Any) -> None:
    """Real CUDA faults, for a run on a GPU machine (skipped on a CPU)."""
    if not ctx.info.is_cuda:
        ctx.skip("needs a GPU")
    torch = ctx.torch
    if params["kind"] == "oom":
        torch.empty(1 << 46, dtype=torch.uint8, device="cuda")  # 64 TiB
    elif params["kind"] == "assert":  # an out-of-bounds index: a device-side assert, sticky
        x = torch.zeros(16, device="cuda")
        x[torch.tensor([1 << 30], device="cuda")] = 1.0
        torch.cuda.synchronize()
    else:  # a real kernel, after the faults, in whatever process the runner gives it
        a = torch.randn(256, 256, device="cuda")
        ctx.time(lambda: a @ a)


def run_exit(params: Mapping[str, Any], ctx: Any) -> None:
    raise SystemExit(3)


def run_die(params: Mapping[str, Any], ctx: Any) -> None:
    """Where ``IMAGEBENCH_TEST_DIE=1``: end the worker mid-case as the kernel's out-of-memory
    killer does (SIGKILL) or as a crash does (exit code 3); elsewhere an ordinary case."""
    if os.environ.get(DIE_ENV) == "1":
        if params["how"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(5)
        os._exit(3)
    _record_a_time(ctx)


def run_bad_value(params: Mapping[str, Any], ctx: Any) -> None:
    ctx.record("time", [float(params["value"])], iterations=1)


def run_gate(params: Mapping[str, Any], ctx: Any) -> None:
    """Wait until ``$IMAGEBENCH_TEST_GATE.<gate>`` exists (at most 2 minutes)."""
    gate = os.environ.get(GATE_ENV)
    deadline = time.monotonic() + 120
    while gate and not Path(f"{gate}.{params['gate']}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    _record_a_time(ctx)


def run_big(params: Mapping[str, Any], ctx: Any) -> None:
    """Many incompressible samples: a samples.parquet of about 8 bytes each."""
    import random

    rng = random.Random(0)
    ctx.record("time", [1e-3 * (1 + rng.random()) for _ in range(int(params["samples"]))])


def run_hostile(params: Mapping[str, Any], ctx: Any) -> None:
    if params.get("fail"):
        raise RuntimeError(os.environ.get(HOSTILE_ENV, "hostile text not set"))
    _record_a_time(ctx)


def _workload(name: str, run: Any, cases: Any, timeout_s: float = 60.0) -> Workload:
    return Workload(
        name=name,
        family="basic",
        title=f"test-only fault workload {name}",
        method="Fails on purpose, to test the runner's isolation (tests only).",
        cases=cases,
        run=run,
        timeout_s=timeout_s,
    )


# Timeouts are before the suite's scale (smoke and cpu halve them).
WORKLOADS = [
    _workload("fault_segfault", run_segfault, _cases({"how": "ctypes"}, {"how": "kill"})),
    _workload("fault_abort", run_abort, _cases({})),
    _workload("fault_hang", run_hang, _cases({}), timeout_s=4.0),
    _workload("fault_oom", run_oom, _cases({"kind": "host"}, {"kind": "torch_cpu"}, {"kind": "cuda"})),
    _workload("fault_cuda_error", run_cuda_error, _cases({})),
    _workload("fault_after_cuda_error", run_after_cuda_error, _cases({})),
    _workload("fault_gpu", run_gpu, _cases({"kind": "oom"}, {"kind": "assert"}, {"kind": "ok"})),
    _workload("fault_exit", run_exit, _cases({})),
    _workload("fault_die", run_die, _cases({"how": "kill"}, {"how": "exit"})),
    _workload("fault_bad_value", run_bad_value, _cases({"value": "nan"}, {"value": "0"})),
    _workload("fault_ok", run_ok, _cases({"i": 0}, {"i": 1})),
    _workload("fault_gate", run_gate, _cases({"gate": 1}, {"gate": 2})),
    _workload("fault_big", run_big, _cases({"samples": 100_000})),
    _workload(
        "fault_hostile",
        run_hostile,
        _cases({"fail": False, "note": "<script>alert(1)</script> | {{ 7*7 }}"}, {"fail": True}),
    ),
]
