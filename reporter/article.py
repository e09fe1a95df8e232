"""One comparison article: its view (from reporter.compare's rows) and its rendering.

The article follows the seed write-ups' order: test environment and method; basic
operations; end-to-end training; compile, AMP, data loading and multi-GPU; inference;
numerical drift; conclusion and advice; how to reproduce; the raw files. Every number
comes from ``reporter.compare.compare_labels`` / ``compute_summaries`` or is a unit
conversion of one (TFLOP/s = FLOPs / median time); the latency percentiles are read
off the recorded latency samples with ``reporter.stats.compute_percentiles``.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Mapping

import numpy as np
import pandas as pd

from collector.suites import SUITES
from collector.timing import TimingPolicy
from reporter.charts import chart_lines, chart_ratios
from reporter.compare import Comparison, compute_summaries
from reporter.stats import compute_percentiles
from reporter.config import ComparisonSpec
from reporter.load import Archive
from reporter.render import Messages
from reporter.views import (
    OTHER_FAMILY,
    ChartView,
    Column,
    Link,
    TableView,
    WorkloadInfo,
    distinct,
    family_of,
    joined,
    params_dict,
    params_label,
    relpath,
    run_slug,
    slug,
)

# Article sections after "environment and method", and the workload families in each.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("basic", ("basic",)),
    ("training", ("training", "memory")),
    ("more", ("compile", "amp", "data", "multigpu")),
    ("inference", ("inference",)),
    ("numerics", ("numerics",)),
    (OTHER_FAMILY, (OTHER_FAMILY,)),
)
# Metrics the article leaves to the raw files: the host-side mirror of every device time.
HIDDEN_METRICS = ("wall_time",)
# Metrics that are a time per item of work, from which a rate (TFLOP/s, GB/s, items/s) follows.
RATE_METRICS = ("time", "latency")
# Parameters a scaling curve can run along, in order of preference.
SCALE_PARAMS = ("n", "size", "elements", "gpus", "replicas", "world_size", "workers", "num_workers", "tasks",
                "concurrency", "batch", "batch_size", "seq_len", "seq", "image_size")
# Axes along which the curve is a scaling curve (throughput), not a size curve (time).
PARALLEL_PARAMS = ("gpus", "replicas", "world_size", "workers", "num_workers", "tasks", "concurrency")
# Fingerprint keys shown side by side: (row key in i18n, section, key).
STACK_ROWS: tuple[tuple[str, str, str], ...] = (
    ("torch", "torch", "version"),
    ("cuda", "cuda", "runtime"),
    ("cudnn", "cuda", "cudnn"),
    ("nccl", "cuda", "nccl"),
    ("driver", "driver", "version"),
    ("gpu", "gpu0", "name"),
    ("gpu_count", "gpu", "count"),
    ("cpu", "cpu", "model"),
    ("host", "host", "hostname"),
    ("image", "container", "image"),
    ("python", "python", "version"),
    ("os", "os", "distribution"),
    ("kernel", "os", "kernel"),
    ("suite", "run", "suite"),
    ("processes", "run", "processes"),
)
# Differences that make a comparison more than a comparison of stacks.
CONFOUNDERS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("gpu", (("gpu0", "name"), ("gpu", "count"))),
    ("driver", (("driver", "version"),)),
    ("host", (("host", "hostname"),)),
    ("cpu", (("cpu", "model"),)),
)
# Fingerprint entries that differ between any two runs and say nothing about the stack.
VOLATILE_SECTIONS = ("run",)
VOLATILE_KEYS = {
    ("command", "argv"),
    ("collect_env", "nvidia_gpu_models"),
    ("env", "IMAGEBENCH_PARENT_PID"),  # the collector's own bookkeeping, recorded by early runs
    ("imagebench", "git_commit"),
}
VOLATILE_KEY_SUFFIXES = ("temperature_c", "clock_sm_mhz", "clock_mem_mhz", "uuid", "serial_sha256", "pci_bus_id")
MAX_VALUE_CHARS = 400
TOP_N = 5


@dataclass
class Side:
    """One side of the comparison: its selector and runs."""

    role: str
    selector: str
    label: str
    runs: pd.DataFrame
    archive: Archive
    _ok: pd.DataFrame | None = None
    _latency: dict[str, np.ndarray] | None = None

    @property
    def display(self) -> str:
        return self.selector

    def ok_samples(self) -> pd.DataFrame:
        if self._ok is None:
            self._ok = self.archive.ok_samples()
        return self._ok

    def latency_samples(self) -> dict[str, np.ndarray]:
        """Every recorded request time, by case id."""
        if self._latency is None:
            s = self.ok_samples()
            s = s[s["metric"] == "latency"]
            self._latency = {str(k): g.to_numpy(np.float64) for k, g in s.groupby("case_id", observed=True)["value"]}
        return self._latency


@dataclass
class Block:
    """One workload's part of a section."""

    workload: str
    title: str
    kind: str
    tables: list[TableView]
    charts: list[ChartView] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def table(self) -> TableView:  # the first table (templates iterate ``tables``)
        return self.tables[0]


@dataclass
class Section:
    key: str
    number: int
    blocks: list[Block]
    charts: list[ChartView]


class ArticleBuilder:
    """Builds the view of one article. ``page`` is the article's path under the site root."""

    def __init__(
        self,
        *,
        spec: ComparisonSpec,
        archive: Archive,
        comparison: Comparison,
        workloads: Mapping[str, WorkloadInfo],
        t: Messages,
        page: str,
        run_pages: Mapping[tuple[str, str], str],
        build_command: str,
        cache: dict[Any, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.cache = cache if cache is not None else {}
        self.archive = archive
        self.cmp = comparison
        self.workloads = workloads
        self.t = t
        self.lang = t.lang
        self.page = page
        self.run_pages = run_pages
        self.build_command = build_command
        self.baseline = self._side("baseline", spec.baseline)
        self.candidate = self._side("candidate", spec.candidate)
        # Plain records (attribute access like itertuples): building tables row by row from
        # pandas costs more than everything else in an article.
        self.rows: list[SimpleNamespace] = [
            SimpleNamespace(**{**rec, "family": family_of(rec["workload"], workloads)}, Index=i, p=params_dict(rec["params"]))
            for i, rec in enumerate(comparison.rows.to_dict("records"))
        ]
        self._chart_count = 0
        self._rates_by_family: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
        self._drift = pd.DataFrame()

    # -- helpers ------------------------------------------------------------------------------

    def _side(self, role: str, selector: str) -> Side:
        sub = self.archive.select(selector)
        return Side(role, selector, selector.partition("@")[0], sub.runs, sub)

    def _title(self, workload: str) -> str:
        info = self.workloads.get(workload)
        return info.title_in(self.lang) if info else workload

    def _metric_name(self, metric: str) -> str:
        key = f"metric.{metric}"
        return self.t.plain(key) if self.t.has(key) else metric

    def _chart(self, title: str, spec: dict[str, Any], table: TableView | None) -> ChartView:
        self._chart_count += 1
        return ChartView(title=title, spec=spec, table=table, ident=f"c{self._chart_count}")

    def _col(self, key: str, fmt: str = "text", right: bool = False, **values: Any) -> Column:
        return Column(self.t(f"col.{key}", **values), fmt, right)

    def _fingerprint(self, side: Side) -> dict[tuple[str, str], list[str]]:
        env = side.archive.environment
        out: dict[tuple[str, str], list[str]] = {}
        for section, key, value in zip(env["section"].astype(str), env["key"].astype(str), env["value"].astype(str)):
            values = out.setdefault((section, key), [])
            if value not in values:
                values.append(value)
        return out

    # -- the article ----------------------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        """The whole view the article template renders."""
        fp_b, fp_c = self._fingerprint(self.baseline), self._fingerprint(self.candidate)
        self._drift = self._drift_rows()
        environment = self._environment(fp_b, fp_c)
        sections = self._sections()
        conclusion_number = 2 + len(sections)
        counts = self.cmp.counts
        summary = {
            "counts": {
                "better": counts.get("better", 0),
                "worse": counts.get("worse", 0),
                "same": counts.get("no significant difference", 0),
                "inconclusive": counts.get("inconclusive", 0),
            },
            "total": int(sum(counts.values())),
            "geomean": self._geomean(),
            "geomean_reading": self._geomean_reading(),
        }
        devices = distinct(list(self.candidate.runs["device_name"]) + list(self.baseline.runs["device_name"]))
        return {
            "title": self.spec.title or self.t.plain("article.default_title", candidate=self.candidate.display,
                                                     baseline=self.baseline.display, device=joined(devices) or "?"),
            "baseline": self.baseline,
            "candidate": self.candidate,
            "device": joined(devices) or "?",
            "summary": summary,
            "environment": environment,
            "method": self._method(fp_b, fp_c),
            "runs": self._runs_table(),
            "sections": sections,
            "conclusion": self._conclusion(conclusion_number, environment),
            "reproduce": [self._reproduce(s, fp) for s, fp in ((self.baseline, fp_b), (self.candidate, fp_c))],
            "build_command": self.build_command,
            "raw_files": self._raw_files(),
        }

    def _geomean(self) -> dict[str, Any] | None:
        g = self.cmp.geomean
        if g.n_cases == 0 or not math.isfinite(g.ratio):
            return None
        return {"ratio": g.ratio, "ci_low": g.ci_low, "ci_high": g.ci_high, "n_cases": g.n_cases}

    def _geomean_reading(self) -> str:
        g = self.cmp.geomean
        if not (math.isfinite(g.ci_low) and math.isfinite(g.ci_high)):
            return "inconclusive"
        if g.ci_low > 1.0:
            return "better"
        if g.ci_high < 1.0:
            return "worse"
        return "same"

    # -- 1. environment and method --------------------------------------------------------------

    def _environment(self, fp_b: Mapping[tuple[str, str], list[str]], fp_c: Mapping[tuple[str, str], list[str]]) -> dict[str, Any]:
        stacks = TableView([self._col("item"), self._col("baseline_label", label=self.baseline.display),
                            self._col("candidate_label", label=self.candidate.display), self._col("changed")])
        stacks.rows.append([self.t("stack.label"), self.baseline.display, self.candidate.display, None])
        stacks.rows.append([self.t("stack.runs"), str(len(self.baseline.runs)), str(len(self.candidate.runs)), None])
        for name, section, key in STACK_ROWS:
            b, c = fp_b.get((section, key), []), fp_c.get((section, key), [])
            if not b and not c:
                continue
            stacks.rows.append([self.t(f"stack.{name}"), joined(b), joined(c), "≠" if b != c else None])
        changes = TableView([self._col("key"), self._col("baseline"), self._col("candidate")])
        for sk in sorted(set(fp_b) | set(fp_c)):
            section, key = sk
            if section in VOLATILE_SECTIONS or sk in VOLATILE_KEYS or key.endswith(VOLATILE_KEY_SUFFIXES):
                continue
            b, c = fp_b.get(sk, []), fp_c.get(sk, [])
            if b != c:
                changes.rows.append([f"{section}.{key}", _shorten(joined(b)), _shorten(joined(c))])
        warnings = []
        for what, keys in CONFOUNDERS:
            b = [v for sk in keys for v in fp_b.get(sk, [])]
            c = [v for sk in keys for v in fp_c.get(sk, [])]
            if b != c:
                warnings.append({"what": what, "baseline": joined(b) or "—", "candidate": joined(c) or "—"})
        return {"stacks": stacks, "changes": changes, "warnings": warnings}

    def _method(self, fp_b: Mapping[tuple[str, str], list[str]], fp_c: Mapping[tuple[str, str], list[str]]) -> dict[str, Any]:
        def units(side: Side) -> int:
            c = side.archive.cases
            ok = c[c["status"] == "ok"]
            return int(len(ok[["run_id", "process"]].astype(str).drop_duplicates()))

        cases = pd.concat([self.baseline.archive.cases, self.candidate.archive.cases])
        timers = []
        if len(cases):
            ok = cases[cases["status"] == "ok"]
            per = ok.groupby(ok["timing"].astype(str))["case_id"].nunique()
            timers = [{"method": m, "cases": int(n)} for m, n in per.items() if n]
        suites = distinct(fp_b.get(("run", "suite"), []) + fp_c.get(("run", "suite"), []))
        policy = TableView([self._col("suite"), self._col("warmup"), self._col("samples_range", right=True),
                            self._col("block", right=True), self._col("target_ci", "percent", True),
                            self._col("budget", right=True)])
        # The policy each run recorded (run.policy); runs from before it was recorded
        # fall back to their suite's current policy.
        recorded = distinct(fp_b.get(("run", "policy"), []) + fp_c.get(("run", "policy"), []))
        policies: list[tuple[str, Any]] = []
        for text in recorded:
            try:
                policies.append((joined(suites) or "?", TimingPolicy(**json.loads(text))))
            except (ValueError, TypeError):
                continue
        if not policies:
            policies = [(name, SUITES[name].policy) for name in suites if name in SUITES]
        for name, p in policies:
            policy.rows.append([name, f"≥ {p.warmup_s:g} s, ≥ {p.min_warmup}×", f"{p.min_samples}–{p.max_samples}",
                                f"≥ {p.min_block_s * 1e3:g} ms", p.target_rel_ci, f"{p.budget_s:g} s"])
        return {
            "baseline_units": units(self.baseline),
            "candidate_units": units(self.candidate),
            "suites": joined(suites) or "?",
            "timers": timers,
            "policy": policy,
            "noise": self.cmp.noise,
            "single_band": self.cmp.single_band,
            "correction": self.cmp.correction,
        }

    def _runs_table(self) -> TableView:
        table = TableView([self._col("side"), self._col("run", "link"), self._col("started"), self._col("status"),
                           self._col("host"), self._col("cases_ok", right=True), self._col("cases_failed", right=True)])
        for side in (self.baseline, self.candidate):
            for r in side.runs.itertuples():
                table.rows.append([
                    self.t(f"side.{side.role}"), self._run_link(str(r.label), str(r.run_id)),
                    _date(r.started_at), str(r.status) if r.status else None, r.hostname, str(r.cases_ok), str(r.cases_failed),
                ])
        return table

    def _run_link(self, label: str, run_id: str) -> Link:
        target = self.run_pages.get((label, run_id), f"runs/{slug(label)}/{run_slug(run_id)}/index.md")
        return Link(run_id, relpath(self.page, target))

    # -- 2.–7. results -------------------------------------------------------------------------------

    def _sections(self) -> list[Section]:
        sections = []
        visible = [r for r in self.rows if r.metric not in HIDDEN_METRICS]
        drift = self._drift
        for number, (key, families) in enumerate(SECTIONS, start=2):
            if key == OTHER_FAMILY and not any(r.family == OTHER_FAMILY for r in visible):
                continue
            if key == "numerics":
                blocks = self._drift_blocks(drift)
                sections.append(Section(key, number, blocks, []))
                continue
            sub = [r for r in visible if r.family in families]
            blocks = []
            order = {f: i for i, f in enumerate(families)}
            for workload in sorted({r.workload for r in sub}, key=lambda w: (order[family_of(w, self.workloads)], w)):
                blocks.append(self._block(workload, [r for r in sub if r.workload == workload]))
            charts = [self._ratio_chart(key, sub)] if len(sub) >= 2 else []
            sections.append(Section(key, number, blocks, charts))
        return sections

    def _case_name(self, row: Any, with_workload: bool = False) -> str:
        p = params_label(row.params)
        name = f"{self._title(row.workload)}: {p}" if with_workload and p else (p or row.case_id)
        if with_workload and not p:
            name = self._title(row.workload)
        if row.metric != "time":
            name = f"{name} · {self._metric_name(row.metric)}"
        return name

    def _ratio_chart(self, key: str, sub: list[SimpleNamespace]) -> ChartView:
        points = []
        for r in sub:
            # The workload's short name: chart labels must stay short, and distinct once shortened.
            name = f"{r.workload}: {params_label(r.params)}" if params_label(r.params) else str(r.workload)
            if r.metric != "time":
                name = f"{name} · {self._metric_name(r.metric)}"
            points.append({"case": name, "ratio": r.ratio,
                           "ci_low": r.ci_low, "ci_high": r.ci_high, "verdict": r.verdict})
        verdict_names = {v: self.t.plain(f"verdict.{k}") for v, k in (
            ("better", "better"), ("worse", "worse"), ("no significant difference", "same"), ("inconclusive", "inconclusive"))}
        spec = chart_ratios(points, x_title=self.t.plain("chart.ratio_axis"), verdict_names=verdict_names)
        # Its data (ratio, CI, verdict per case) are the section's tables right below it.
        return self._chart(self.t.plain("chart.ratio_title", section=self.t.plain(f"section.{key}.title")), spec, None)

    def _rates(self, rows: list[SimpleNamespace]) -> dict[str, dict[int, dict[str, Any]]]:
        """Per side and row: TFLOP/s, GB/s or items/s from the work per iteration, with % of the side's peak."""
        out: dict[str, dict[int, dict[str, Any]]] = {"baseline": {}, "candidate": {}}
        for side in out:
            raw: dict[int, tuple[str, str, float]] = {}
            units: dict[int, str] = {}
            for r in rows:
                if r.metric not in RATE_METRICS or r.unit != "s":
                    continue
                median = getattr(r, f"{side}_median")
                if not (median and math.isfinite(median) and median > 0):
                    continue
                dtype = str(r.p.get("dtype", ""))
                units[r.Index] = f"{_text(r.items_unit) or 'items'}/s"
                if _present(r.flops):
                    raw[r.Index] = ("flops", dtype, r.flops / median / 1e12)
                elif _present(r.bytes):
                    raw[r.Index] = ("bytes", "", r.bytes / median / 1e9)
                elif _present(r.items):
                    raw[r.Index] = ("items", "", r.items / median)
            peaks: dict[tuple[str, str], float] = {}
            groups: dict[tuple[str, str], int] = {}
            for kind, dtype, value in raw.values():
                peaks[(kind, dtype)] = max(peaks.get((kind, dtype), 0.0), value)
                groups[(kind, dtype)] = groups.get((kind, dtype), 0) + 1
            for idx, (kind, dtype, value) in raw.items():
                unit = {"flops": "TFLOP/s", "bytes": "GB/s"}.get(kind) or units[idx]
                fraction = value / peaks[(kind, dtype)] if kind != "items" and groups[(kind, dtype)] > 1 else None
                out[side][idx] = {"value": value, "unit": unit, "peak_fraction": fraction}
        return out

    def _block(self, workload: str, rows: list[SimpleNamespace]) -> Block:
        family = family_of(workload, self.workloads)
        if family not in self._rates_by_family:
            self._rates_by_family[family] = self._rates([r for r in self.rows if r.family == family])
        rates = self._rates_by_family[family]
        metrics = distinct(r.metric for r in rows)
        indices = {r.Index for r in rows}
        has_rate = any(i in rates["baseline"] or i in rates["candidate"] for i in indices)
        columns = [self._col("case")]
        if len(metrics) > 1:
            columns.append(self._col("metric"))
        columns += [self._col("baseline_label", "value", True, label=self.baseline.display),
                    self._col("candidate_label", "value", True, label=self.candidate.display)]
        if has_rate:
            columns += [self._col("rate_baseline", "rate", True), self._col("rate_candidate", "rate", True)]
        columns += [self._col("ratio", "ratio", True), self._col("ci", "ci", True), self._col("p_adjusted", "pvalue", True),
                    self._col("verdict", "verdict"), self._col("note")]
        table = TableView(columns)
        for r in rows:
            cells: list[Any] = [params_label(r.p) or r.case_id]
            if len(metrics) > 1:
                cells.append(self._metric_name(r.metric))
            cells += [(r.baseline_median, r.unit), (r.candidate_median, r.unit)]
            if has_rate:
                cells += [rates["baseline"].get(r.Index), rates["candidate"].get(r.Index)]
            cells += [r.ratio, (r.ci_low, r.ci_high), r.p_adjusted, r.verdict, self.t.note(r.note) or None]
            table.rows.append(cells)
        tables = [table]
        notes: list[dict[str, Any]] = []
        if has_rate and any(v and v["peak_fraction"] is not None for s in rates.values() for i, v in s.items() if i in indices):
            notes.append({"key": "peak", "params": {}})
        kind = "results"
        if "latency" in metrics:
            tables.append(self._latency_table(workload, rows))
            kind = "latency"
        charts = self._scaling_charts(workload, rows, rates)
        return Block(workload, self._title(workload), kind, tables, charts, notes)

    def _latency_table(self, workload: str, rows: list[SimpleNamespace]) -> TableView:
        table = TableView([self._col("case"), self._col("side"), self._col("p50", "value", True),
                           self._col("p95", "value", True), self._col("p99", "value", True), self._col("samples", right=True)])
        for r in rows:
            if r.metric != "latency":
                continue
            for side in (self.baseline, self.candidate):
                values = side.latency_samples().get(r.case_id, np.empty(0))
                q = compute_percentiles(values)
                table.rows.append([params_label(r.p) or r.case_id, side.display, (q[0], "s"), (q[1], "s"), (q[2], "s"),
                                   str(len(values))])
        return table

    def _scaling_charts(self, workload: str, rows: list[SimpleNamespace],
                        rates: dict[str, dict[int, dict[str, Any]]]) -> list[ChartView]:
        """Median by the case parameter that varies (matrix size, GPUs, batch), one line per side and variant.

        Along a parallelism axis (GPUs, replicas, loader workers, concurrent tasks) the
        curve shows throughput, from the items per iteration or as measured; along a size
        axis it shows time.
        """
        primary = [r for r in rows if r.metric in RATE_METRICS]
        measured = not primary
        if measured:
            primary = [r for r in rows if r.metric == "throughput"]
        if not primary:
            return []
        params = [r.p for r in primary]
        axis = None
        for name in SCALE_PARAMS:
            values = {p.get(name) for p in params if isinstance(p.get(name), (int, float)) and not isinstance(p.get(name), bool)}
            if len(values) >= (2 if name in PARALLEL_PARAMS else 3) and all(name in p for p in params):
                axis = name
                break
        if axis is None:
            return []
        derived = not measured and axis in PARALLEL_PARAMS and all(_present(r.items) for r in primary)
        as_rate = measured or derived
        points = []
        for r, p in zip(primary, params):
            variant = ", ".join(f"{k}={v}" for k, v in p.items() if k != axis)
            metric = "" if r.metric in ("time", "throughput") else f" · {self._metric_name(r.metric)}"
            for side in (self.baseline, self.candidate):
                med = getattr(r, f"{side.role}_median")
                lo, hi = getattr(r, f"{side.role}_ci_low"), getattr(r, f"{side.role}_ci_high")
                if derived:
                    med, lo, hi = r.items / med, r.items / hi, r.items / lo
                series = f"{side.display}" + (f" · {variant}" if variant else "") + metric
                points.append({"x": p[axis], "y": med, "y_low": lo, "y_high": hi, "series": series})
        points.sort(key=lambda d: (d["series"], d["x"]))
        if measured:
            unit = str(primary[0].unit)
        elif derived:
            unit = f"{next((_text(r.items_unit) for r in primary if _text(r.items_unit)), None) or 'items'}/s"
        else:
            unit = "s"
        y_title = self.t.plain("chart.throughput_axis", unit=unit) if as_rate else self.t.plain("chart.time_axis")
        spec = chart_lines(points, x_title=axis, y_title=y_title, log_x=axis not in PARALLEL_PARAMS, log_y=not as_rate)
        table = TableView([Column(axis, "text"), self._col("series"), self._col("median", "value", True),
                           self._col("ci", "value_ci", True)])
        for d in points:
            table.rows.append([str(d["x"]), d["series"], (d["y"], unit), (d["y_low"], d["y_high"], unit)])
        title_key = "chart.scaling_items_title" if as_rate else "chart.scaling_time_title"
        return [self._chart(self.t.plain(title_key, workload=self._title(workload), axis=axis), spec, table)]

    # -- numerical drift ---------------------------------------------------------------------------

    def _drift_rows(self) -> pd.DataFrame:
        """Informational metrics (better = none) both sides recorded: the medians of each side."""
        frames = []
        for side in (self.baseline, self.candidate):
            key = ("informational", side.selector, self.spec.run_ids)
            if key not in self.cache:  # a label is on one side of two articles: summarise it once
                samples = side.archive.samples
                informational = replace(side.archive, samples=samples[samples["better"] == "none"].reset_index(drop=True))
                self.cache[key] = compute_summaries(informational)
            s = self.cache[key]
            s = s[s["better"] == "none"][["case_id", "workload", "params", "metric", "unit", "median", "n_samples"]]
            frames.append(s.rename(columns={"median": f"{side.role}_value", "n_samples": f"{side.role}_n"}))
        merged = frames[0].merge(frames[1][["case_id", "metric", "candidate_value", "candidate_n"]], on=["case_id", "metric"])
        return merged.sort_values(["workload", "case_id", "metric"]).reset_index(drop=True)

    def _drift_blocks(self, drift: pd.DataFrame) -> list[Block]:
        blocks = []
        for workload in drift["workload"].unique():
            sub = drift[drift["workload"] == workload]
            table = TableView([self._col("case"), self._col("metric"),
                               self._col("baseline_label", "exact", True, label=self.baseline.display),
                               self._col("candidate_label", "exact", True, label=self.candidate.display),
                               self._col("rel_diff", "signed_percent", True)])
            for r in sub.itertuples():
                b, c = r.baseline_value, r.candidate_value
                rel = (c - b) / abs(b) if b not in (0, None) and math.isfinite(b) and math.isfinite(c) else (0.0 if b == c else None)
                table.rows.append([params_label(r.params) or r.case_id, self._metric_name(r.metric), b, c, rel])
            blocks.append(Block(str(workload), self._title(str(workload)), "drift", [table]))
        return blocks

    # -- conclusion -------------------------------------------------------------------------------

    def _conclusion(self, number: int, environment: Mapping[str, Any]) -> dict[str, Any]:
        rows = [r for r in self.rows if r.metric not in HIDDEN_METRICS]
        best = sorted((r for r in rows if r.verdict == "better"), key=lambda r: -r.ratio)[:TOP_N]
        worst = sorted((r for r in rows if r.verdict == "worse"), key=lambda r: r.ratio)[:TOP_N]

        def top(sub: list[SimpleNamespace]) -> TableView:
            table = TableView([self._col("case"), self._col("ratio", "ratio", True), self._col("ci", "ci", True),
                               self._col("change", "signed_percent", True)])
            for r in sub:
                table.rows.append([self._case_name(r, with_workload=True), r.ratio, (r.ci_low, r.ci_high), r.ratio - 1.0])
            return table

        counts = self.cmp.counts
        better, worse = counts.get("better", 0), counts.get("worse", 0)
        same, inconclusive = counts.get("no significant difference", 0), counts.get("inconclusive", 0)
        advice: list[dict[str, Any]] = []
        if environment["warnings"]:
            advice.append({"key": "confounded", "params": {"what": ", ".join(self.t.plain(f"article.env.warn.{w['what']}")
                                                                         for w in environment["warnings"])}})
        if worse:
            advice.append({"key": "regressions", "params": {"n": worse}})
        if better and not worse:
            advice.append({"key": "faster", "params": {"n": better}})
        if not better and not worse and same and not inconclusive:
            advice.append({"key": "no_difference", "params": {}})
        if not better and not worse and inconclusive:
            advice.append({"key": "nothing_settled", "params": {"n": inconclusive, "total": same + inconclusive}})
        if better and worse:
            advice.append({"key": "mixed", "params": {}})
        if inconclusive:
            advice.append({"key": "inconclusive", "params": {"n": inconclusive}})
        units = min(self._method_units())
        if units < 3:
            advice.append({"key": "few_processes", "params": {"n": units}})
        drift = self._drift
        if len(drift) and not np.allclose(drift["baseline_value"], drift["candidate_value"], rtol=0, atol=0):
            advice.append({"key": "drift", "params": {}})
        unmatched = [{"case": f"{case} · {self._metric_name(metric)}" if metric != "time" else case, "side": side}
                     for case, metric, side in self.cmp.unmatched if metric not in HIDDEN_METRICS]
        return {"number": number, "best": top(best), "worst": top(worst), "advice": advice, "unmatched": unmatched}

    def _method_units(self) -> tuple[int, int]:
        if not self.rows:
            return (0, 0)
        return min(int(r.n_baseline_units) for r in self.rows), min(int(r.n_candidate_units) for r in self.rows)

    # -- reproduce and raw files --------------------------------------------------------------------

    def _reproduce(self, side: Side, fp: Mapping[tuple[str, str], list[str]]) -> dict[str, Any]:
        images = fp.get(("container", "image"), [])
        image = images[0] if images else None
        suite = (fp.get(("run", "suite")) or [None])[0]
        processes = (fp.get(("run", "processes")) or [None])[0]
        device = (fp.get(("run", "device")) or [""])[0]
        args = ["python", "-m", "collector", "run", "--out", "runs", "--label", side.label]
        if suite:
            args += ["--suite", suite]
        if processes:
            args += ["--processes", processes]
        if image:
            args += ["--image", image]
            docker = ["docker", "run", "--rm"] + (["--gpus", "all"] if device != "cpu" else []) + [
                "-v", "$PWD:/imagebench", "-w", "/imagebench", image]
            command = " ".join(shlex.quote(a) if a != "$PWD:/imagebench" else '"$PWD":/imagebench' for a in docker)
            command += " \\\n  " + " ".join(shlex.quote(a) for a in args)
        else:
            command = " ".join(shlex.quote(a) for a in args)
        argv = (fp.get(("command", "argv")) or [None])[0]
        return {"role": side.role, "label": side.selector, "image": image, "commands": command, "argv": argv}

    def _raw_files(self) -> TableView:
        table = TableView([self._col("side"), self._col("run", "link"), self._col("file_environment", "link"),
                           self._col("file_cases", "link"), self._col("file_samples", "link")])
        for side in (self.baseline, self.candidate):
            for r in side.runs.itertuples():
                label, run_id = str(r.label), str(r.run_id)
                page = self.run_pages.get((label, run_id), f"runs/{slug(label)}/{run_slug(run_id)}/index.md")
                folder = page.rsplit("/", 1)[0]
                files = [Link(name, relpath(self.page, f"{folder}/{name}"))
                         for name in ("environment.parquet", "cases.parquet", "samples.parquet")]
                table.rows.append([self.t(f"side.{side.role}"), self._run_link(label, run_id), *files])
        return table


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _present(value: Any) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _shorten(value: str | None) -> str | None:
    if value is None or len(value) <= MAX_VALUE_CHARS:
        return value
    return value[:MAX_VALUE_CHARS] + " …"


def _date(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M UTC")
