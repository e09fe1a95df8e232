"""The shapes pages are rendered from: tables, charts, links, and the small helpers that fill them.

A page's view is plain data: every number in it comes from reporter.compare or
reporter.stats (or is a unit conversion of one, such as TFLOP/s from FLOPs and a median
time), every string from a run is kept as it is (templates escape it), and every
user-facing word comes from reporter/i18n through ``Messages``. Templates only format.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from markupsafe import Markup

from collector.schema import is_valid_run_id

_SAFE_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass
class Column:
    """A table column: its heading, how its cells are formatted (see macros.md.j2), alignment."""

    title: Markup | str
    fmt: str = "text"
    right: bool = False


@dataclass
class TableView:
    """A table: columns and rows of raw values (one per column)."""

    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)


@dataclass
class ChartView:
    """A chart: its title, its Vega-Lite specification, its data as a table, and where its SVG goes.

    ``href`` (the SVG file, relative to the page that shows it) is set by the build
    once it knows the page.
    """

    title: str
    spec: dict[str, Any]
    table: TableView | None  # None: the tables right after the chart hold its data
    ident: str
    href: str | None = None


@dataclass(frozen=True)
class Link:
    """A link to a generated page or file: ``href`` is relative to the page that shows it."""

    text: str
    href: str


@dataclass(frozen=True)
class WorkloadInfo:
    """What the site needs from the workload registry (torch-free)."""

    name: str
    family: str
    title: str
    method: str
    title_zh: str = ""
    method_zh: str = ""

    def title_in(self, lang: str) -> str:
        return (self.title_zh if lang == "zh" else "") or self.title

    def method_in(self, lang: str) -> str:
        return (self.method_zh if lang == "zh" else "") or self.method


OTHER_FAMILY = "other"


def load_workloads() -> dict[str, WorkloadInfo]:
    """The collector's workload registry as ``WorkloadInfo`` (importing it needs no torch)."""
    from collector.workloads import registry

    return {
        name: WorkloadInfo(w.name, w.family, w.title, w.method, w.title_zh, w.method_zh)
        for name, w in registry().items()
    }


def family_of(workload: str, workloads: Mapping[str, WorkloadInfo]) -> str:
    info = workloads.get(workload)
    return info.family if info else OTHER_FAMILY


def slug(text: str) -> str:
    """A file name for ``text``: itself when already safe, else a sanitised form plus a short hash."""
    if _SAFE_SLUG.fullmatch(text) and not text.endswith("."):
        return text
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", text)).strip("._-")[:60] or "x"
    return f"{cleaned}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def run_slug(run_id: str) -> str:
    return run_id if is_valid_run_id(run_id) else slug(run_id)


def params_label(params: str | Mapping[str, Any] | None) -> str:
    """Case parameters as ``n=1024, dtype=bf16`` (the stored JSON, made readable)."""
    if params is None:
        return ""
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return params
    if not isinstance(params, Mapping):
        return str(params)
    return ", ".join(f"{k}={_param_value(v)}" for k, v in params.items())


def _param_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def params_dict(params: str | None) -> dict[str, Any]:
    try:
        value = json.loads(params or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def distinct(values: Iterable[Any]) -> list[str]:
    """Distinct non-empty values as strings, in first-seen order."""
    out: list[str] = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        s = str(v)
        if s and s not in out:
            out.append(s)
    return out


def joined(values: Sequence[str]) -> str | None:
    return ", ".join(values) if values else None


def relpath(from_page: str, to: str) -> str:
    """The link from the page at ``from_page`` to ``to`` (both relative to the site root)."""
    import posixpath

    return posixpath.relpath(to, posixpath.dirname(from_page) or ".")
