"""The GPU's state while a case is timed: clocks, power, temperature, throttle reasons, sharing.

A ``GpuSampler`` reads every GPU the case can use from a background thread, only while
the case's timed blocks run (the timing core tells it when: ``resume``/``pause``), and
``summarize`` turns the readings into one ``gpu_state.parquet`` row per GPU (min, median
and max of each quantity, the union of throttle reasons, the most other processes seen).

Readings come from NVML (``nvidia-ml-py``, imported as ``pynvml``) when it is importable
and initialises; otherwise from ``nvidia-smi --query-gpu`` when that is on ``PATH``;
otherwise there is nothing to read and no row is written. Every row names its source.
This module never imports torch: the caller says which GPUs (by PCI bus id, or by
NVML index) the case runs on.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence

from runformat.schema import GPU_STATE_QUANTITIES as QUANTITIES
from runformat.vocabulary import THROTTLE_REASONS

SOURCE_NVML = "nvml"
SOURCE_SMI = "nvidia-smi"

# NVML's clock-event ("throttle") reason bits, as nvml.h names them.
REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

DEFAULT_INTERVAL_S = 0.1  # NVML reads take microseconds: ten a second costs nothing
SMI_INTERVAL_S = 0.5  # each nvidia-smi call is a process start (tens of ms)
SMI_TIMEOUT_S = 5.0


def reasons_from_mask(mask: int) -> list[str]:
    """The names of the reason bits set in ``mask`` (unknown bits as ``bit_0x...``)."""
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    rest = mask & ~sum(REASON_BITS)
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return names


@dataclass(frozen=True)
class Reading:
    """One GPU read once. Any quantity the source cannot read is ``None``."""

    gpu: int  # the case's device index (cuda:<gpu>)
    t: float  # time.monotonic() of the reading
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    util_gpu_pct: float | None = None
    util_mem_pct: float | None = None
    reasons: tuple[str, ...] = ()
    processes: int | None = None  # compute processes on the GPU, ours included
    other_processes: int | None = None  # of those, not of this process tree


class Source(Protocol):
    name: str
    interval_s: float

    def read(self) -> list[Reading]: ...

    def close(self) -> None: ...


def _own_pids() -> set[int]:
    """This process, its parent (the collector) and its children (DataLoader, torchrun)."""
    pids = {os.getpid(), os.getppid()}
    try:
        for task in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
    except OSError:
        pass
    return pids


def count_others(pids: Sequence[int], own: set[int]) -> int:
    """How many of ``pids`` (the GPU's compute processes) are not ours.

    In a container NVML reports the host's process ids, which match none of ours; then
    one entry (the worker's own CUDA context) is taken to be ours and the rest counted.
    """
    if not pids:
        return 0
    mine = sum(1 for p in pids if p in own)
    if mine == 0:
        return max(0, len(pids) - 1)
    return len(pids) - mine


class NvmlSource:
    """Readings through NVML; ``devices`` are (case index, NVML handle) pairs."""

    name = SOURCE_NVML
    interval_s = DEFAULT_INTERVAL_S

    def __init__(self, nvml: Any, devices: list[tuple[int, Any]]) -> None:
        self._nvml = nvml
        self._devices = devices
        self._own = _own_pids()

    @classmethod
    def open(cls, bus_ids: Sequence[str | None], nvml: Any = None) -> "NvmlSource":
        """Initialise NVML and find each GPU by PCI bus id (by index where none is given).

        Raises whatever NVML raises when it cannot start (no driver, no permission).
        """
        if nvml is None:
            import pynvml as nvml  # provided by nvidia-ml-py
        nvml.nvmlInit()
        devices = []
        for i, bus in enumerate(bus_ids):
            handle = None
            if bus:
                try:
                    handle = nvml.nvmlDeviceGetHandleByPciBusId(bus.encode() if isinstance(bus, str) else bus)
                except Exception:
                    handle = None
            if handle is None:
                handle = nvml.nvmlDeviceGetHandleByIndex(_visible_index(i))
            devices.append((i, handle))
        return cls(nvml, devices)

    def _get(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # not supported on this GPU, or no permission
            return None

    def read(self) -> list[Reading]:
        n = self._nvml
        out = []
        for index, h in self._devices:
            mask = self._get(lambda: _clock_event_reasons(n, h))
            procs = self._get(lambda: [p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(h)])
            util = self._get(lambda: n.nvmlDeviceGetUtilizationRates(h))
            power = self._get(lambda: n.nvmlDeviceGetPowerUsage(h))
            limit = self._get(lambda: n.nvmlDeviceGetEnforcedPowerLimit(h))
            out.append(
                Reading(
                    gpu=index,
                    t=time.monotonic(),
                    sm_clock_mhz=_num(self._get(lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))),
                    mem_clock_mhz=_num(self._get(lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM))),
                    power_w=None if power is None else power / 1000.0,
                    power_limit_w=None if limit is None else limit / 1000.0,
                    temperature_c=_num(self._get(lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))),
                    util_gpu_pct=None if util is None else _num(util.gpu),
                    util_mem_pct=None if util is None else _num(util.memory),
                    reasons=tuple(reasons_from_mask(int(mask))) if mask is not None else (),
                    processes=None if procs is None else len(procs),
                    other_processes=None if procs is None else count_others(procs, self._own),
                )
            )
        return out

    def close(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass


def _clock_event_reasons(nvml: Any, handle: Any) -> int:
    # Renamed "clock event reasons" in newer NVML; the old name still exists in most.
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(fn(handle))


def _visible_index(i: int) -> int:
    """NVML index of the case's device ``i``: CUDA_VISIBLE_DEVICES maps it when numeric."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if i < len(visible) and visible[i].isdigit():
        return int(visible[i])
    return i


SMI_FIELDS = (
    "index", "pci.bus_id", "clocks.sm", "clocks.mem", "power.draw", "power.limit", "temperature.gpu",
    "utilization.gpu", "utilization.memory", "clocks_throttle_reasons.active",
)


class SmiSource:
    """Readings through ``nvidia-smi --query-gpu`` (and ``--query-compute-apps``)."""

    name = SOURCE_SMI
    interval_s = SMI_INTERVAL_S

    def __init__(self, exe: str, bus_ids: Sequence[str | None]) -> None:
        self._exe = exe
        self._bus_ids = list(bus_ids)
        self._own = _own_pids()

    @classmethod
    def open(cls, bus_ids: Sequence[str | None], exe: str | None = None) -> "SmiSource":
        """Find ``nvidia-smi`` and check that it answers; raises ``OSError`` if not."""
        exe = exe or shutil.which("nvidia-smi")
        if exe is None:
            raise OSError("nvidia-smi is not on PATH")
        source = cls(exe, bus_ids)
        if not source.read():
            raise OSError("nvidia-smi reported no GPU")
        return source

    def _query(self, args: list[str]) -> list[list[str]]:
        try:
            out = subprocess.run([self._exe, *args, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                 timeout=SMI_TIMEOUT_S, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]

    def read(self) -> list[Reading]:
        rows = self._query([f"--query-gpu={','.join(SMI_FIELDS)}"])
        apps = self._query(["--query-compute-apps=gpu_bus_id,pid"])
        by_bus = {_norm_bus(r[1]): r for r in rows if len(r) == len(SMI_FIELDS)}
        by_index = {r[0]: r for r in rows if len(r) == len(SMI_FIELDS)}
        pids: dict[str, list[int]] = {}
        for a in apps:
            if len(a) == 2 and a[1].isdigit():
                pids.setdefault(_norm_bus(a[0]), []).append(int(a[1]))
        out = []
        now = time.monotonic()
        for i, bus in enumerate(self._bus_ids):
            row = by_bus.get(_norm_bus(bus)) if bus else None
            row = row or by_index.get(str(_visible_index(i)))
            if row is None:
                continue
            mask = _hex(row[9])
            procs = pids.get(_norm_bus(row[1]), [])
            out.append(
                Reading(
                    gpu=i,
                    t=now,
                    sm_clock_mhz=_num(row[2]),
                    mem_clock_mhz=_num(row[3]),
                    power_w=_num(row[4]),
                    power_limit_w=_num(row[5]),
                    temperature_c=_num(row[6]),
                    util_gpu_pct=_num(row[7]),
                    util_mem_pct=_num(row[8]),
                    reasons=tuple(reasons_from_mask(mask)) if mask is not None else (),
                    processes=len(procs) if apps or not rows else None,
                    other_processes=count_others(procs, self._own) if apps or not rows else None,
                )
            )
        return out

    def close(self) -> None:
        pass


def _norm_bus(bus: str | None) -> str:
    """PCI bus ids in one spelling: nvidia-smi writes 00000000:1B:00.0, others 0000:1b:00.0."""
    if not bus:
        return ""
    parts = bus.strip().lower().split(":")
    if len(parts) == 3:
        try:
            return f"{int(parts[0], 16):08x}:{parts[1]}:{parts[2]}"
        except ValueError:
            pass
    return bus.strip().lower()


def bus_id_of(props: Any) -> str | None:
    """The PCI bus id of a ``torch.cuda.get_device_properties`` result, where torch has it."""
    try:
        return f"{int(props.pci_domain_id):08x}:{int(props.pci_bus_id):02x}:{int(props.pci_device_id):02x}.0"
    except (AttributeError, TypeError, ValueError):
        return None


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None  # "[N/A]", "[Not Supported]"
    return v if v == v else None


def _hex(value: str) -> int | None:
    try:
        return int(value, 16)
    except (TypeError, ValueError):
        return None


def open_source(bus_ids: Sequence[str | None]) -> tuple[Source | None, str]:
    """The best source available for these GPUs, and a line saying which (or why none)."""
    reasons = []
    try:
        source: Source = NvmlSource.open(bus_ids)
        return source, SOURCE_NVML
    except ImportError:
        reasons.append("nvidia-ml-py not installed")
    except Exception as e:  # NVMLError: no driver, no permission
        reasons.append(f"NVML did not start ({type(e).__name__}: {e})")
    try:
        return SmiSource.open(bus_ids), SOURCE_SMI
    except OSError as e:
        reasons.append(str(e))
    return None, "none (" + "; ".join(reasons) + ")"


class GpuSampler:
    """Reads a source from a thread while resumed; keeps every reading.

    ``resume`` takes a reading at once and starts the thread; ``pause`` takes one more
    and stops it, so even a timed phase shorter than the interval has two readings.

    ``pause`` never waits for the thread: a driver query can take a good part of a
    second on a busy GPU (seen on an H200: NVML's reads during timed blocks), and a
    join would add that to every case. A reading still in flight when the phase ends
    belongs to no phase and is dropped (each phase has its own generation).
    """

    def __init__(self, source: Source, interval_s: float | None = None) -> None:
        self.source = source
        self.interval_s = source.interval_s if interval_s is None else interval_s
        self.readings: list[Reading] = []
        self._stop: threading.Event | None = None
        self._generation = 0
        self._lock = threading.Lock()

    def _take(self, generation: int | None = None) -> None:
        try:
            got = self.source.read()
        except Exception:  # a read that fails is a missing reading, never a failed case
            return
        with self._lock:
            if generation is None or generation == self._generation:
                self.readings.extend(got)

    def _loop(self, stop: threading.Event, generation: int) -> None:
        while not stop.wait(self.interval_s):
            self._take(generation)

    def resume(self) -> None:
        if self._stop is not None:
            return
        self._take()
        with self._lock:
            self._generation += 1
            generation = self._generation
        self._stop = threading.Event()
        threading.Thread(target=self._loop, args=(self._stop, generation), name="imagebench-gpu-sampler",
                         daemon=True).start()

    def pause(self) -> None:
        if self._stop is None:
            return
        self._stop.set()
        self._stop = None
        with self._lock:
            self._generation += 1  # a reading the thread still has in flight is dropped
        self._take()


def summarize(readings: Iterable[Reading], source: str) -> list[dict[str, Any]]:
    """One ``gpu_state.parquet`` row (without case id and process) per GPU read."""
    by_gpu: dict[int, list[Reading]] = {}
    for r in readings:
        by_gpu.setdefault(r.gpu, []).append(r)
    rows = []
    for gpu, rs in sorted(by_gpu.items()):
        row: dict[str, Any] = {"gpu": gpu, "source": source, "readings": len(rs)}
        for q in QUANTITIES:
            values = [getattr(r, q) for r in rs if getattr(r, q) is not None]
            row[f"{q}_min"] = min(values) if values else None
            row[f"{q}_median"] = statistics.median(values) if values else None
            row[f"{q}_max"] = max(values) if values else None
        limits = [r.power_limit_w for r in rs if r.power_limit_w is not None]
        row["power_limit_w"] = min(limits) if limits else None
        reasons = sorted({x for r in rs for x in r.reasons})
        row["reasons"] = ",".join(reasons)
        row["throttled"] = bool(THROTTLE_REASONS.intersection(reasons))
        procs = [r.processes for r in rs if r.processes is not None]
        others = [r.other_processes for r in rs if r.other_processes is not None]
        row["processes_max"] = max(procs) if procs else None
        row["other_processes_max"] = max(others) if others else None
        rows.append(row)
    return rows
