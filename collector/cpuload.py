"""The doctor's CPU checks beyond the governor: load from other work, and turbo/boost clocks.

On a CPU run the cores are the measuring instrument: another process that keeps one
busy takes time from every case it overlaps, and a boost clock that rises and falls with
temperature and load moves the medians between processes. On a GPU run the host matters
less, so both are information there, not warnings. Reads ``/proc`` and ``/sys`` only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from collector.checks import INFO, OK, WARN, Check

# Busy share of all cores (over a short sample), and the 1-minute load per core, beyond which a CPU run warns.
BUSY_SHARE = 0.10
LOAD_PER_CORE = 0.25
SAMPLE_S = 0.5


def read_cpu_times(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot, or None where /proc/stat is not there."""
    try:
        fields = Path(path).read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(x) for x in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already in user
    return total - idle, total


def measure_busy_share(sample_s: float = SAMPLE_S, read: Callable[[], tuple[int, int] | None] = read_cpu_times,
                       sleep: Callable[[float], None] = time.sleep) -> float | None:
    """The share of all cores' time spent busy over ``sample_s`` seconds (0 to 1), or None if unknown."""
    first = read()
    sleep(sample_s)
    second = read()
    if first is None or second is None or second[1] <= first[1]:
        return None
    return max(0.0, min(1.0, (second[0] - first[0]) / (second[1] - first[1])))


def check_cpu_load(expect_gpu: bool, *, busy: float | None = None, load1: float | None = None,
                   cores: int | None = None) -> Check:
    """Other work on the CPU now: the busy share of the cores and the 1-minute load average."""
    cores = cores or os.cpu_count() or 1
    if busy is None:
        busy = measure_busy_share()
    if load1 is None:
        try:
            load1 = os.getloadavg()[0]
        except (OSError, AttributeError):
            load1 = None
    if busy is None and load1 is None:
        return Check("CPU load", INFO, "not exposed here")
    found = ", ".join(x for x in (f"{busy:.0%} of {cores} core(s) busy" if busy is not None else "",
                                  f"load average {load1:.2f}" if load1 is not None else "") if x)
    loaded = (busy is not None and busy > BUSY_SHARE) or (load1 is not None and load1 / cores > LOAD_PER_CORE)
    if not loaded:
        return Check("CPU load", OK, found)
    if expect_gpu:
        return Check("CPU load", INFO, found + " (a GPU run is less affected)")
    return Check("CPU load", WARN, found + ": other work shares the cores a CPU run measures",
                 "stop other jobs (top shows them) or record when the machine is idle; interleave stacks (--interleave)")


def check_cpu_boost(expect_gpu: bool, root: str = "/sys/devices/system/cpu") -> Check:
    """Turbo/boost clocks: they follow temperature and load, so a CPU case's speed drifts."""
    no_turbo = Path(root, "intel_pstate", "no_turbo")
    boost = Path(root, "cpufreq", "boost")
    try:
        if no_turbo.exists():
            on = no_turbo.read_text().strip() == "0"
            fix = f"echo 1 | sudo tee {no_turbo}"
        elif boost.exists():
            on = boost.read_text().strip() == "1"
            fix = f"echo 0 | sudo tee {boost}"
        else:
            return Check("CPU frequency scaling", INFO, "boost control not exposed here (a VM or container)")
    except OSError:
        return Check("CPU frequency scaling", INFO, "boost control not readable here")
    if not on:
        return Check("CPU frequency scaling", OK, "turbo/boost off")
    if expect_gpu:
        return Check("CPU frequency scaling", INFO, "turbo/boost on (a GPU run is less affected)")
    return Check("CPU frequency scaling", WARN, "turbo/boost on: clocks follow temperature and load", fix)


def check_cpu(expect_gpu: bool) -> list[Check]:
    """The doctor's CPU load and frequency-scaling checks."""
    return [check_cpu_load(expect_gpu), check_cpu_boost(expect_gpu)]
