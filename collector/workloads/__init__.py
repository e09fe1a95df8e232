"""The workload registry: every module in this package that defines ``WORKLOAD`` is one.

A workload module must not import torch at module level: the parent process lists cases
(``cases``) without torch, and only the worker process that runs a case (``run``)
imports it. Adding a workload is one module here, its name in a suite
(``collector/suites.py``) and its description (family, title, methodology paragraph) in
``runformat/workloads.py``, which the reporter reads without the collector. Modules named in ``IMAGEBENCH_EXTRA_WORKLOADS`` (comma
separated, importable) are registered too: that is how tests add fault-injection
workloads without shipping them.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping

from runformat.schema import case_id_for
# The families (article sections) live in the shared vocabulary beside the schema.
from runformat.vocabulary import FAMILIES
from runformat.workloads import WORKLOADS


@dataclass(frozen=True)
class DeviceInfo:
    """What the worker's torch can run on, probed once per run (no torch needed here)."""

    type: str  # "cuda" or "cpu"
    name: str
    count: int = 0
    capability: tuple[int, int] | None = None
    total_memory: int | None = None
    bf16: bool = False
    fp16: bool = False
    tf32: bool = False
    cpu_count: int = 1
    torch_version: str = ""
    extras: Mapping[str, bool] = field(default_factory=dict)  # optional packages present

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"

    def has(self, package: str) -> bool:
        return bool(self.extras.get(package))

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["capability"] = list(self.capability) if self.capability else None
        d["extras"] = dict(self.extras)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DeviceInfo":
        d = dict(d)
        if d.get("capability"):
            d["capability"] = tuple(d["capability"])
        return cls(**d)


@dataclass(frozen=True)
class Case:
    """A workload with fixed parameters."""

    workload: str
    params: Mapping[str, Any]

    @cached_property
    def case_id(self) -> str:  # computed once: the runner asks for it per sample
        return case_id_for(self.workload, self.params)


@dataclass(frozen=True)
class Workload:
    """A registered workload.

    Attributes:
        name: short id, used in case ids.
        family: the article section (one of ``FAMILIES``).
        title: one-line title (English).
        method: the methodology paragraph (English): what runs, how it is timed, what
            is recorded. The methodology page is generated from it. A shipped workload
            takes these four and their Chinese pair from ``runformat.workloads``
            (``described``).
        cases: ``cases(suite, device) -> list of parameter dicts``: what to run in a
            suite on a device. Must not import torch.
        run: ``run(params, ctx)``: measure one case, recording through ``ctx``.
        timeout_s: a case running longer than this (per process) is killed and recorded
            as ``timeout``.
        max_processes: run in at most this many worker processes (``None``: all), for
            expensive one-off measurements; what they record says so via the case rows.
        fork_server: its cases start processes from the worker's fork server
            (``_procs.fork_context``), which a worker that will run them starts while it
            starts, so that the server's imports overlap the other workers' start.
        title_zh, method_zh: the Chinese title and paragraph.
    """

    name: str
    family: str
    title: str
    method: str
    cases: Callable[[str, DeviceInfo], list[dict[str, Any]]]
    run: Callable[[Mapping[str, Any], Any], None]
    timeout_s: float = 600.0
    max_processes: int | None = None
    fork_server: bool = False
    title_zh: str = ""
    method_zh: str = ""

    @classmethod
    def described(cls, name: str, **how: Any) -> "Workload":
        """The shipped workload ``name``: what it is from its entry in ``runformat.workloads``,
        how it runs (``cases``, ``run``, limits) from ``how``."""
        info = WORKLOADS[name]
        return cls(info.name, info.family, info.title, info.method, title_zh=info.title_zh, method_zh=info.method_zh, **how)

    def make_cases(self, suite: str, device: DeviceInfo) -> list[Case]:
        return [Case(self.name, dict(p)) for p in self.cases(suite, device)]


_REGISTRY: dict[str, Workload] | None = None


def registry() -> dict[str, Workload]:
    """All workloads, by name, discovered from this package's modules."""
    global _REGISTRY
    if _REGISTRY is None:
        found: dict[str, Workload] = {}
        names = [
            f"{__name__}.{m.name}"
            for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
            if not m.name.startswith("_")
        ]
        names += [n.strip() for n in os.environ.get("IMAGEBENCH_EXTRA_WORKLOADS", "").split(",") if n.strip()]
        for module_name in names:
            module = importlib.import_module(module_name)
            workloads = getattr(module, "WORKLOADS", None) or [getattr(module, "WORKLOAD", None)]
            for workload in workloads:
                if not isinstance(workload, Workload):
                    continue
                if workload.family not in FAMILIES:
                    raise ValueError(f"workload {workload.name!r} has unknown family {workload.family!r}")
                found[workload.name] = workload
        _REGISTRY = found
    return _REGISTRY


def get(name: str) -> Workload:
    """The workload called ``name``."""
    return registry()[name]
