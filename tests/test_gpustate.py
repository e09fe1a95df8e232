"""GPU state per case: NVML through a fake pynvml, the nvidia-smi fallback, the CPU fallback."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from collector import gpustate
from runformat.schema import GPU_STATE_FILE, GPU_STATE_SCHEMA, records_to_table, validate_table


class FakeNvmlError(Exception):
    pass


def fake_pynvml(*, clocks=(1980, 2619), power_mw=450_000, limit_mw=700_000, temp=41, reasons=0x4, pids=(111, 222)):
    """A module with the pynvml calls gpustate makes, answering fixed values."""
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    m.calls = []
    m.nvmlInit = lambda: m.calls.append("init")
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)

    def by_bus(bus):
        raise FakeNvmlError("not found")

    m.nvmlDeviceGetHandleByPciBusId = by_bus
    m.nvmlDeviceGetClockInfo = lambda h, which: clocks[0] if which == 1 else clocks[1]
    m.nvmlDeviceGetPowerUsage = lambda h: power_mw
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: limit_mw
    m.nvmlDeviceGetTemperature = lambda h, which: temp
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=97, memory=40)
    m.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: reasons
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=p) for p in pids]
    return m


def test_reason_names_from_the_nvml_bit_mask():
    assert gpustate.reasons_from_mask(0) == []
    assert gpustate.reasons_from_mask(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert gpustate.reasons_from_mask(0x1000) == ["bit_0x1000"]


def test_other_processes_exclude_our_own_and_tolerate_host_pids():
    assert gpustate.count_others([10, 11, 12], own={10}) == 2
    assert gpustate.count_others([10, 11], own={10, 11}) == 0
    # In a container NVML reports host pids: one of them is this worker's own context.
    assert gpustate.count_others([5001, 5002], own={10}) == 1
    assert gpustate.count_others([], own={10}) == 0


def test_nvml_source_reads_every_quantity_and_summarize_takes_min_median_max():
    nvml = fake_pynvml(pids=(os.getpid(), 999_999))
    source = gpustate.NvmlSource.open([None], nvml=nvml)
    readings = source.read()
    assert len(readings) == 1
    r = readings[0]
    assert (r.sm_clock_mhz, r.mem_clock_mhz, r.power_w, r.power_limit_w, r.temperature_c) == (1980, 2619, 450.0, 700.0, 41)
    assert r.reasons == ("sw_power_cap",) and r.processes == 2 and r.other_processes == 1
    more = [gpustate.Reading(gpu=0, t=0.0, sm_clock_mhz=v, reasons=("gpu_idle",)) for v in (1500.0, 1700.0)]
    rows = gpustate.summarize(readings + more, source.name)
    assert len(rows) == 1
    row = rows[0]
    assert row["source"] == "nvml" and row["readings"] == 3
    assert (row["sm_clock_mhz_min"], row["sm_clock_mhz_median"], row["sm_clock_mhz_max"]) == (1500.0, 1700.0, 1980.0)
    assert row["reasons"] == "gpu_idle,sw_power_cap" and row["throttled"] is True
    assert row["other_processes_max"] == 1 and row["power_limit_w"] == 700.0
    table = records_to_table(GPU_STATE_FILE, [{**row, "case_id": "c", "process": 0}], run_id="r", label="l")
    assert table.schema.equals(GPU_STATE_SCHEMA, check_metadata=False)
    validate_table(GPU_STATE_FILE, table)
    source.close()
    assert nvml.calls == ["init", "shutdown"]


def test_idle_reason_alone_is_not_throttling():
    rows = gpustate.summarize([gpustate.Reading(gpu=0, t=0.0, reasons=("gpu_idle",))], "nvml")
    assert rows[0]["throttled"] is False


def test_sampler_reads_only_while_resumed():
    nvml = fake_pynvml()
    sampler = gpustate.GpuSampler(gpustate.NvmlSource.open([None], nvml=nvml), interval_s=0.01)
    sampler.resume()
    time.sleep(0.08)
    sampler.pause()
    n = len(sampler.readings)
    assert n >= 3  # one as it resumes, some from the thread, one as it pauses
    time.sleep(0.05)
    assert len(sampler.readings) == n  # paused: nothing read
    sampler.resume()
    sampler.pause()
    assert len(sampler.readings) == n + 2


def test_open_source_prefers_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    source, what = gpustate.open_source([None])
    assert what == "nvml" and isinstance(source, gpustate.NvmlSource)


def _fake_smi(folder: Path, gpu_line: str, apps: str = "") -> None:
    exe = folder / "nvidia-smi"
    exe.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) echo '{gpu_line}' ;;\n"
        f"  --query-compute-apps=*) printf '{apps}' ;;\n"
        "esac\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_nvidia_smi_fallback_when_nvml_is_absent(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    _fake_smi(
        tmp_path,
        "0, 00000000:1B:00.0, 1755, 2619, 512.34, 700.00, 63, 99, 45, 0x0000000000000044",
        "00000000:1B:00.0, 4242\\n00000000:1B:00.0, 4343\\n",
    )
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    source, what = gpustate.open_source(["0000:1b:00.0"])
    assert what == "nvidia-smi"
    (r,) = source.read()
    assert (r.sm_clock_mhz, r.power_w, r.temperature_c, r.util_gpu_pct) == (1755, 512.34, 63, 99)
    assert r.reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert r.processes == 2 and r.other_processes == 1  # neither pid is ours: one is taken as ours
    row = gpustate.summarize([r], what)[0]
    assert row["source"] == "nvidia-smi" and row["throttled"]


def test_nvidia_smi_not_supported_fields_are_null(monkeypatch, tmp_path):
    _fake_smi(tmp_path, "0, 00000000:1B:00.0, 1755, 2619, [N/A], [N/A], 63, [N/A], [N/A], [N/A]")
    source = gpustate.SmiSource.open([None], exe=str(tmp_path / "nvidia-smi"))
    (r,) = source.read()
    assert r.power_w is None and r.util_gpu_pct is None and r.reasons == ()


def test_no_source_on_a_machine_without_nvml_or_nvidia_smi(monkeypatch, tmp_path):
    """The CPU fallback: nothing to read, a line saying why, and no sampler."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nvidia-smi
    source, what = gpustate.open_source([None])
    assert source is None
    assert what.startswith("none (") and "nvidia-ml-py not installed" in what and "nvidia-smi is not on PATH" in what
    assert gpustate.summarize([], "none") == []


def test_nvml_that_fails_to_start_falls_through(monkeypatch, tmp_path):
    nvml = fake_pynvml()

    def broken():
        raise FakeNvmlError("Driver Not Loaded")

    nvml.nvmlInit = broken
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setenv("PATH", str(tmp_path))
    source, what = gpustate.open_source([None])
    assert source is None and "Driver Not Loaded" in what


def test_a_cpu_case_records_settings_and_no_gpu_state():
    """The worker on the CPU: effective settings recorded, no GPU state, no sampler."""
    pytest.importorskip("torch")
    from collector.suites import SUITES
    from collector.worker import run_case
    from tests.workload_support import INFO

    result = run_case(
        {
            "workload": "matmul",
            "params": {"n": 64, "dtype": "fp32"},
            "suite": "smoke",
            "policy": SUITES["smoke"].policy.__dict__,
            "process": 0,
            "processes": 1,
            "device": INFO.to_json(),
        }
    )
    assert result["status"] == "ok"
    assert result["gpu_state"] == []
    import json

    settings = json.loads(result["settings"])
    assert {"matmul_allow_tf32", "cudnn_allow_tf32", "float32_matmul_precision", "NVIDIA_TF32_OVERRIDE"} <= set(settings)


class _SlowSource:
    """A source whose reads from the thread take long, as NVML's can on a busy GPU."""

    interval_s = 0.01

    def __init__(self) -> None:
        self.calls = 0

    def read(self):
        self.calls += 1
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.5)
        return [gpustate.Reading(gpu=0, t=time.monotonic())]


def test_pause_does_not_wait_for_a_slow_read_in_flight():
    source = _SlowSource()
    sampler = gpustate.GpuSampler(source)
    sampler.resume()
    time.sleep(0.05)  # the thread is now inside a slow read
    t0 = time.perf_counter()
    sampler.pause()
    assert time.perf_counter() - t0 < 0.2
    n = len(sampler.readings)
    assert n == 2  # the reading at resume and the one at pause
    time.sleep(0.6)  # the read in flight ends after the pause: it belongs to no phase
    assert len(sampler.readings) == n


def test_worker_profiles_each_case_when_asked(tmp_path, monkeypatch):
    """IMAGEBENCH_PROFILE_DIR: each case's cProfile statistics and a line of the index."""
    import pstats

    from collector import worker

    monkeypatch.setenv("IMAGEBENCH_PROFILE_DIR", str(tmp_path))
    assert worker._profiled(lambda m: {"status": "ok", "n": sum(range(1000))}, {"case_id": "c[x=1]", "process": 2})["n"] == 499500
    lines = (tmp_path / "index.tsv").read_text().splitlines()
    assert len(lines) == 1
    name, case_id, process, seconds = lines[0].split("\t")
    assert (case_id, process) == ("c[x=1]", "2") and float(seconds) >= 0
    assert pstats.Stats(str(tmp_path / name)).total_calls > 0
    monkeypatch.delenv("IMAGEBENCH_PROFILE_DIR")
    assert worker._profiled(lambda m: {"status": "ok"}, {}) == {"status": "ok"}
    assert len((tmp_path / "index.tsv").read_text().splitlines()) == 1
