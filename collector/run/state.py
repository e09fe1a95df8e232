"""What a run is: what it was asked to do, the stacks as planned, the tasks, the error that stops it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collector.stacks import Launcher, Stack, launcher_for
from collector.workloads import Case, DeviceInfo
from runformat.schema import CaseRecord, EnvironmentEntry, SampleRecord


class RunError(Exception):
    """Bad input or an impossible run; the message names the flag or file."""


@dataclass
class RunOptions:
    """What ``collector run`` was asked to do."""

    out: Path
    stacks: list[Stack]
    suite: str | None = None
    only: list[str] = field(default_factory=list)
    processes: int = 3
    device: str = "auto"
    image: str | None = None
    time_budget: float | None = None
    case_timeout: float | None = None
    data_dir: str | None = None
    interleave: bool = False
    argv: list[str] = field(default_factory=list)
    adaptive_s: float | None = None  # seconds for adaptive replication after the planned processes
    max_processes: int | None = None  # adaptive replication's cap per case (default 2 x processes)
    run_entries: dict[str, str] = field(default_factory=dict)  # extra run-section rows (the doctor's verdict)
    pull: bool = False  # pull container images first (never otherwise)

    def launcher(self, stack: Stack) -> Launcher:
        """``stack``'s launcher under these options (device, data folder, pull)."""
        return launcher_for(stack, device=self.device, data_dir=self.data_dir, pull=self.pull)


@dataclass
class Planned:
    """A stack with its probe results, its run writer and the records written so far."""

    stack: Stack
    device: DeviceInfo
    fingerprint: list[EnvironmentEntry]
    writer: Any  # runformat.archive.RunWriter
    cases: list[Case]
    records: list[CaseRecord] = field(default_factory=list)
    samples: list[SampleRecord] = field(default_factory=list)
    run_entries: dict[str, str] = field(default_factory=dict)
    launcher: Launcher | None = None  # how its workers start (default: the stack's own)

    def __post_init__(self) -> None:
        if self.launcher is None:
            self.launcher = launcher_for(self.stack)


@dataclass(frozen=True)
class Task:
    stack_index: int
    process: int
    case: Case
    # With --interleave: the stack's place in its round (0 = first); None otherwise.
    position: int | None = None
