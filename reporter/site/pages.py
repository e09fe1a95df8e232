"""The views of every page that is not an article: runs archive, trends, methodology, indexes.

Like reporter.article.compute, these functions only arrange numbers that reporter.model.compare
computed (summaries, comparisons) and strings that runs recorded; templates format them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Mapping, NamedTuple, Sequence

import pandas as pd
from markupsafe import Markup

from runformat.schema import METRICS, TIMINGS
from runformat.vocabulary import FAMILIES, OTHER_FAMILY, UNSETTLED, Verdict
from reporter.present.charts import chart_lines
from reporter.model.compare import Comparison
from reporter.article.config import DeviceClass
from reporter.data.load import Archive
from reporter.article.paths import distinct, label_page, relpath, run_page
from reporter.article.series import LabelInfo, Series, compute_series
from reporter.model.changepoints import ALPHA, POOLED_ALPHA, Step, compute_steps, point_of_summary
from reporter.present.render import Messages
from reporter.present.tables import Column
from reporter.present.tables import Table as TableView
from reporter.present.views import RAW_FILES, ChartView, Link, WorkloadInfo, family_of

TREND_HIDDEN_METRICS = ("wall_time",)
# Trends show the metrics a reader follows across versions; one chart per workload.
TREND_CHART_METRICS = ("time", "latency", "compile_time", "throughput")
MAX_CHART_SERIES = 8  # lines a trend chart names at their ends; more cases take more charts


def _col(t: Messages, key: str, fmt: str = "text", right: bool = False, **values: Any) -> Column:
    return Column(t(f"col.{key}", **values), fmt, right)


def _date(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M UTC")


def joined(values: Sequence[str]) -> str | None:
    return ", ".join(values) if values else None


def params_label(params: Any) -> str:
    """Case parameters as ``n=1024, dtype=bf16`` (trend tables, which span workloads' versions)."""
    from reporter.present.labels import params_of

    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params_of(params).items())


# ---- runs archive --------------------------------------------------------------------------


def runs_index_view(archive: Archive, classes: Sequence[DeviceClass], t: Messages,
                    set_aside: Sequence[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """The runs index: every label, the run files that could not be read, and the runs the config sets aside
    ((label, run id, reason): no page compares or summarises them)."""
    page = "runs/index.md"
    table = TableView([_col(t, "label", "link"), _col(t, "device"), _col(t, "runs", right=True), _col(t, "first"),
                       _col(t, "last"), _col(t, "status_counts"), _col(t, "torch")])
    runs = archive.runs
    order = [lab for c in classes for lab in c.labels]
    order += [lab for lab in archive.labels() if lab not in order]
    seen: set[str] = set()
    for label in order:
        if label in seen:
            continue
        seen.add(label)
        r = runs[runs["label"].astype(str) == label]
        status = r["status"].fillna("?").astype(str).value_counts()
        table.rows.append([
            Link(label, relpath(page, label_page(label))),
            joined(distinct(r["device_name"])),
            str(len(r)),
            _date(r["started_at"].min()),
            _date(r["started_at"].max()),
            ", ".join(f"{_run_status(t, k)}: {v}" for k, v in sorted(status.items())),
            joined(distinct(r["torch"])),
        ])
    problems = TableView([_col(t, "path"), _col(t, "reason")])
    problems.rows = [[p.path, p.reason] for p in archive.problems]
    aside = TableView([_col(t, "label"), _col(t, "run", "code"), _col(t, "reason")])
    aside.rows = [[label, run_id, why] for label, run_id, why in set_aside]
    return {"labels": table, "n_runs": len(runs), "problems": problems, "set_aside": aside}


def label_view(archive: Archive, label: str, reports: Sequence[dict[str, Any]], t: Messages) -> dict[str, Any]:
    page = label_page(label)
    r = archive.runs[archive.runs["label"].astype(str) == label].sort_values("started_at")
    table = TableView([_col(t, "run", "link"), _col(t, "started"), _col(t, "finished"), _col(t, "status"), _col(t, "suite"),
                       _col(t, "device"), _col(t, "host"), _col(t, "image"), _col(t, "cases_ok", right=True),
                       _col(t, "cases_failed", right=True), _col(t, "cases_total", right=True)])
    for row in r.itertuples():
        run_id = str(row.run_id)
        table.rows.append([
            Link(run_id, relpath(page, run_page(label, run_id))), _date(row.started_at), _date(row.finished_at),
            _run_status(t, row.status), row.suite, row.device_name, row.hostname, row.image,
            str(row.cases_ok), str(row.cases_failed), str(row.cases_total),
        ])
    counts = TableView([_col(t, "status"), _col(t, "runs", right=True)])
    counts.rows = [[_run_status(t, k), str(v)] for k, v in sorted(r["status"].fillna("?").astype(str).value_counts().items())]
    mine = TableView([_col(t, "report", "link"), _col(t, "baseline"), _col(t, "candidate")])
    for rep in reports:
        if label in (rep["baseline"].partition("@")[0], rep["candidate"].partition("@")[0]):
            mine.rows.append([Link(rep["title"], relpath(page, rep["page"])), rep["baseline"], rep["candidate"]])
    return {
        "label": label,
        "runs": table,
        "status_counts": counts,
        "first": _date(r["started_at"].min()) or "?",
        "last": _date(r["started_at"].max()) or "?",
        "reports": mine,
    }


def run_views(archive: Archive, t: Messages, summaries: Mapping[str, pd.DataFrame], *,
              lazy: bool = False) -> dict[tuple[str, str], Any]:
    """The view of every run's page, by (label, run_id); ``summaries`` are compute_summaries per run id.

    ``lazy``: a function per run that makes its view, so a page the build cache holds costs nothing.
    The attempts and the environment of every run are turned into plain values once, for all runs.
    """
    attempts = _per_run(archive.cases, _ATTEMPT_COLUMNS)
    env = _per_run(archive.environment, ("section", "key", "value"))
    out = {}
    for _, row in archive.runs.iterrows():
        label, run_id = str(row["label"]), str(row["run_id"])
        make = partial(_run_view_of, row, attempts.get(run_id, []), env.get(run_id, []), t, summaries, run_id)
        out[(label, run_id)] = make if lazy else make()
    return out


# What a run page shows of each attempt (cases.parquet), as plain values.
_ATTEMPT_COLUMNS = ("case_id", "workload", "params", "process", "status", "error")


def _per_run(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Per run id, its rows of ``columns`` as tuples of plain values (text columns as ``str``), in order."""
    if df.empty:
        return {}
    values = [df[c].tolist() if c in ("process", "error") else df[c].astype(str).tolist() for c in columns]
    out: dict[str, list[tuple[Any, ...]]] = {}
    for run_id, row in zip(df["run_id"].astype(str).tolist(), zip(*values)):
        out.setdefault(run_id, []).append(row)
    return out


def _run_view_of(row: pd.Series, attempts: list[tuple[Any, ...]], env: list[tuple[Any, ...]], t: Messages,
                 summaries: Mapping[str, pd.DataFrame], run_id: str) -> dict[str, Any]:
    """``run_view`` with the run's summary looked up only now (a lazy ``summaries`` computes them on first use)."""
    return _run_view(row, attempts, env, t, summaries.get(run_id))


# The metric a run page shows per case, in order of preference.
RUN_METRICS = ("time", "latency", "throughput", "compile_time", "max_batch", "tasks_ok", "loss", "checksum")


def run_view(row: pd.Series, cases: pd.DataFrame, env: pd.DataFrame, t: Messages,
             summary: pd.DataFrame | None = None) -> dict[str, Any]:
    """One run's page: its summary, raw files, every case with its estimate, CI and status, and its fingerprint."""
    return _run_view(row, [r for rows in _per_run(cases, _ATTEMPT_COLUMNS).values() for r in rows],
                     [r for rows in _per_run(env, ("section", "key", "value")).values() for r in rows], t, summary)


class _Shown(NamedTuple):
    metric: str
    value: float  # the estimate the CI is about (``shown_location``)
    ci_low: float
    ci_high: float
    unit: str


def shown_location(estimate: Any, median: Any) -> float:
    """The value a page shows beside a summary's 95% CI: the estimate the CI is about (the
    geometric mean of process medians, as comparisons use it), else the pooled median.

    The pooled median of every sample leans to the process with the most samples, so beside
    the estimate's CI it can fall outside it, and against a comparison's verdict it can move
    the other way.
    """
    e = float(estimate) if estimate is not None else math.nan
    return e if math.isfinite(e) else float(median)


def _run_shown(summary: pd.DataFrame | None) -> dict[str, _Shown]:
    """Per case of a run's summary, its row of the first metric of ``RUN_METRICS`` it has (the first such row)."""
    if summary is None or not len(summary):
        return {}
    rank = {m: i for i, m in enumerate(RUN_METRICS)}
    metrics = summary["metric"].astype(str).tolist()
    chosen: dict[str, int] = {}
    for i, (case_id, metric) in enumerate(zip(summary["case_id"].astype(str).tolist(), metrics)):
        r = rank.get(metric)
        if r is not None and (case_id not in chosen or r < rank[metrics[chosen[case_id]]]):
            chosen[case_id] = i
    columns = {c: summary[c].tolist() for c in ("median", "estimate", "ci_low", "ci_high", "unit")}
    return {case_id: _Shown(metrics[i], shown_location(columns["estimate"][i], columns["median"][i]), columns["ci_low"][i],
                             columns["ci_high"][i], columns["unit"][i]) for case_id, i in chosen.items()}


def _run_view(row: pd.Series, attempts: list[tuple[Any, ...]], env: list[tuple[Any, ...]], t: Messages,
              summary: pd.DataFrame | None) -> dict[str, Any]:
    from runformat.vocabulary import format_cudnn_version
    from reporter.present.labels import case_label

    label, run_id = str(row["label"]), str(row["run_id"])
    summary_table = TableView([_col(t, "item"), _col(t, "value")])
    for key in ("label", "run_id", "status", "started_at", "finished_at", "suite", "device_type", "device_name", "hostname",
                "image", "torch", "cuda", "cudnn", "driver"):
        value = row[key]
        if key in ("started_at", "finished_at"):
            value = _date(value)
        if key == "cudnn" and isinstance(value, str):
            value = format_cudnn_version(value) or None
        if key == "status" and isinstance(value, str):
            value = _run_status(t, value)
        summary_table.rows.append([t(f"run.field.{key}"),
                                   None if value is None or (isinstance(value, float) and value != value) else str(value)])
    files = TableView([_col(t, "file", "link"), _col(t, "what")])
    files.rows = [[Link(name, name), t(f"run.file.{name.split('.')[0]}")] for name in RAW_FILES]
    records = sorted((dict(zip(_ATTEMPT_COLUMNS, a)) for a in attempts), key=lambda c: (c["case_id"], c["process"]))
    by_case: dict[str, list[dict[str, Any]]] = {}
    for c in records:
        by_case.setdefault(c["case_id"], []).append(c)
    located = _run_shown(summary)
    table = TableView([_col(t, "case"), _col(t, "metric"), _col(t, "estimate", "value", True), _col(t, "ci", "interval", True),
                       _col(t, "processes", right=True), _col(t, "status")], css="ib-main")
    problems = TableView([_col(t, "case"), _col(t, "process", right=True), _col(t, "status"), _col(t, "error")])
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    for case_id, attempts in by_case.items():
        statuses = [a["status"] for a in attempts]
        status = "ok" if all(s == "ok" for s in statuses) else "skipped" if all(s == "skipped" for s in statuses) else "failed"
        counts[status] += 1
        m = located.get(case_id)
        name = case_label(t, attempts[0]["workload"], attempts[0]["params"], with_workload=True)
        ok_n = sum(s == "ok" for s in statuses)
        shown = t.plain(f"run.case_status.{status}")
        if status == "failed":
            shown = t.plain("run.case_status.failed_of", n=len(statuses) - ok_n, total=len(statuses))
        table.rows.append([
            name, t.plain(f"metric.{m.metric}") if m is not None else None,
            (m.value, m.unit) if m is not None else None,
            (m.ci_low, m.ci_high, m.unit) if m is not None else None,
            f"{ok_n}/{len(statuses)}", shown,
        ])
        for a in attempts:
            if a["status"] != "ok":
                problems.rows.append([name, str(a["process"]), t.plain(f"run.case_status.{a['status']}")
                                      if t.has(f"run.case_status.{a['status']}") else a["status"],
                                      a["error"] if isinstance(a["error"], str) and a["error"] else None])
    sections: dict[str, list[list[str]]] = {}  # in the order each section first appears
    for section, key, value in env:
        sections.setdefault(section, []).append([key, value])
    fingerprint = []
    for section, rows in sections.items():
        kv = TableView([_col(t, "key"), _col(t, "value")])
        kv.rows = rows
        fingerprint.append({"name": section, "table": kv})
    return {
        "label": label,
        "run_id": run_id,
        "summary": summary_table,
        "files": files,
        "cases": table,
        "failures": problems,
        "counts": {**counts, "total": len(by_case)},
        "fingerprint": fingerprint,
    }


def _run_status(t: Messages, status: Any) -> str:
    """A run's recorded status (complete, interrupted, running) in the page's language; others as recorded."""
    return t.plain(f"run_status.{status}") if t.has(f"run_status.{status}") else str(status)


# ---- reports index ---------------------------------------------------------------------------


def reports_index_view(reports: Sequence[dict[str, Any]], *, archive: Archive, chosen_by: str, config_name: str | None,
                       skipped: Sequence[str], t: Messages) -> dict[str, Any]:
    page = "reports/index.md"

    def new_table() -> TableView:
        return TableView([_col(t, "report", "link"), _col(t, "baseline"), _col(t, "candidate"), _col(t, "device"),
                          _col(t, "geomean", "ratio", True), _col(t, "ci", "ci", True), _col(t, "n_better", right=True),
                          _col(t, "n_worse", right=True), _col(t, "n_equivalent", right=True),
                          _col(t, "n_inconclusive", right=True)])

    # The answers a reader acts on first; the checks of imagebench itself (A/A pairs, collectors,
    # hosts) in a section of their own.
    table, checks = new_table(), new_table()
    for rep in reports:
        c: Comparison = rep["comparison"]
        g = c.geomean
        counts = rep["headline"].counts  # the article's own counts, so that index and article agree
        (checks if rep.get("validates") else table).rows.append([
            Link(rep["title"], relpath(page, rep["page"])), rep["baseline"], rep["candidate"], rep["device"],
            g.ratio, (g.ci_low, g.ci_high), str(counts.get(Verdict.BETTER.value, 0)), str(counts.get(Verdict.WORSE.value, 0)),
            str(counts.get(Verdict.EQUIVALENT.value, 0)), str(sum(counts.get(v.value, 0) for v in UNSETTLED)),
        ])
    labels = archive.labels()
    record = "python -m collector run --out runs --label NEW-STACK-LABEL\nreporter build --runs runs"
    return {
        "comparisons": table,
        "validation": checks,
        "chosen_by": chosen_by,
        "config_name": config_name,
        "n_labels": len(labels),
        "only_label": labels[0] if len(labels) == 1 else None,
        "record_command": record,
        "skipped": list(skipped),
    }


# ---- trends ----------------------------------------------------------------------------------


@dataclass
class TrendInput:
    """What trends are built from: per device class, the summaries and the neighbour comparisons."""

    cls: DeviceClass
    summaries: pd.DataFrame  # compute_summaries of the class's runs
    neighbours: dict[tuple[str, str], Comparison]  # (previous label, label) -> comparison
    # Per label, the collector's timing method of its runs here (``timing_methods``):
    # neighbours timed differently get no ▲ / ▼, since the method moves short cases by itself.
    methods: Mapping[str, str] = field(default_factory=dict)
    # Per label, its recorded torch version and run dates (``compute_label_info``): the
    # release order of its series. Without it, the class's own order, as one series.
    info: Mapping[str, LabelInfo] = field(default_factory=dict)
    _steps: list["SeriesStep"] | None = field(default=None, repr=False)

    def steps(self, workloads: Mapping[str, WorkloadInfo]) -> list["SeriesStep"]:
        """``class_steps`` of this class, computed once (every language's pages and articles show them)."""
        if self._steps is None:
            self._steps = class_steps(self, workloads)
        return self._steps

    def series(self) -> list[Series]:
        """The class's release series (``compute_series``), or its labels as one series without label info."""
        return compute_series(self.cls, self.info) if self.info else [
            Series("", self.cls.labels, self.cls.labels, {}, self.cls.by_version)]


def span_of(inp: TrendInput, baseline: str, candidate: str) -> tuple[str, ...] | None:
    """The points of a series from ``baseline`` to ``candidate`` (in release order, either way round) when
    both are points of one series with at least one between them; else None."""
    for ser in inp.series():
        if baseline in ser.points and candidate in ser.points:
            i, j = sorted((ser.points.index(baseline), ser.points.index(candidate)))
            return ser.points[i:j + 1] if j - i >= 2 else None
    return None


def span_steps_view(t: Messages, inp: TrendInput, span: Sequence[str], workloads: Mapping[str, WorkloadInfo],
                    reports: Sequence[dict[str, Any]], page: str) -> dict[str, Any]:
    """An article's "when it changed": the steps of its series (the trends pages' own) between the span's
    first and last label, largest first, for the article at ``page``."""
    inside = set(span)
    found = [st for st in inp.steps(workloads) if st.before in inside and st.after in inside]
    rows = inp.summaries[inp.summaries["label"].astype(str).isin(inside)]
    steps = steps_in_words(t, found, rows, workloads, reports, article_names=True)
    return {"series": " → ".join(span), "n": len(steps), "steps": _steps_table(t, steps, page, with_family=True)}


def trends_views(inputs: Sequence[TrendInput], workloads: Mapping[str, WorkloadInfo], t: Messages,
                 chart_counter: list[int], reports: Sequence[dict[str, Any]] = ()) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The trends index view and one view per workload family.

    ``reports``: the published articles, linked from each neighbouring pair and step.
    """
    families: dict[str, dict[str, Any]] = {}
    all_steps: list[dict[str, Any]] = []
    for inp in inputs:
        if not inp.summaries.empty:
            all_steps += _class_trends(t, inp, workloads, chart_counter, reports, families)
    index = TableView([_col(t, "family", "link"), _col(t, "cases", right=True), _col(t, "labels", right=True)])
    ordered = [f for f in (*FAMILIES, OTHER_FAMILY) if f in families]
    for family in ordered:
        v = families[family]
        index.rows.append([Link(t.plain(f"family.{family}"), f"{family}.md"), str(v["n_cases"]), str(len(v["labels"]))])
    all_steps.sort(key=lambda st: -abs(st["size"]))
    return {"families": index, "steps": _steps_table(t, all_steps, "trends/index.md", with_family=True),
            "n_steps": len(all_steps)}, {f: families[f] for f in ordered}


def _class_trends(t: Messages, inp: TrendInput, workloads: Mapping[str, WorkloadInfo], chart_counter: list[int],
                  reports: Sequence[dict[str, Any]], families: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Add one device class's group to the view of each family it recorded (in ``families``); return its steps.

    The group speaks the device's own words, as its articles do (on a CPU: DDP across CPU processes)."""
    if inp.cls.words and t.words != inp.cls.words:
        t = Messages(t.lang, inp.cls.words)
    s = inp.summaries[~inp.summaries["metric"].isin(TREND_HIDDEN_METRICS)].copy()
    s["family"] = [family_of(w, workloads) for w in s["workload"]]
    series = inp.series()
    order = [lab for ser in series for lab in ser.labels]
    flags, timed_apart = _neighbour_flags(t, inp)
    found = inp.steps(workloads)
    steps: list[dict[str, Any]] = []
    for family, fam_rows in s.groupby("family", sort=False):
        view = families.setdefault(str(family), {"family": str(family), "groups": [], "n_cases": 0, "labels": set()})
        group = {"device": inp.cls.name, "order": " → ".join(order), "workloads": [],
                 "set_aside": ", ".join(f"{label} ({n})" for label, n in inp.cls.set_aside),
                 "timed_apart": t.plain("headline.sep").join(timed_apart),
                 "series": [_series_line(t, ser) for ser in series],
                 "pairs": _pairs_table(t, series, inp, str(family), reports, f"trends/{family}.md")}
        fam_steps = steps_in_words(t, [st for st in found if st.family == family], fam_rows, workloads, reports)
        group["steps"] = _steps_table(t, fam_steps, f"trends/{family}.md", with_family=False)
        steps += fam_steps
        for workload, w_rows in fam_rows.groupby("workload", sort=True):
            shown, present = _workload_trend(t, str(workload), w_rows, order, flags, workloads, chart_counter)
            group["workloads"].append(shown)
            view["n_cases"] += len(shown["table"].rows)
            view["labels"].update(present)
        view["groups"].append(group)
    return steps


def _neighbour_flags(t: Messages, inp: TrendInput) -> tuple[dict[tuple[str, str, str], str], list[str]]:
    """The verdict (better, worse) of each (label, case, metric) against the label before it, and a line for
    each neighbouring pair timed by different methods (which gets no flags)."""
    flags: dict[tuple[str, str, str], str] = {}
    timed_apart = []
    for (before, after), comparison in inp.neighbours.items():
        mb, ma = inp.methods.get(before), inp.methods.get(after)
        if mb and ma and mb != ma:
            timed_apart.append(t.plain("trends.timed_apart_pair", before=before, after=after,
                                       before_method=mb, after_method=ma))
            continue
        for r in comparison.rows.itertuples():
            if r.verdict in ("better", "worse"):
                flags[(after, r.case_id, r.metric)] = r.verdict
    return flags, timed_apart


def _workload_title(t: Messages, workload: str, workloads: Mapping[str, WorkloadInfo]) -> str:
    """The registry's title of ``workload``, or where ``t`` speaks a device's own words and they name it, theirs."""
    if t.words and t.raw(f"on_{t.words}.workload_name.{workload}") is not None:
        return t.plain(f"on_{t.words}.workload_name.{workload}")
    info = workloads.get(workload)
    return info.title_in(t.lang) if info else workload


def _workload_trend(t: Messages, workload: str, w_rows: pd.DataFrame, order: list[str],
                    flags: Mapping[tuple[str, str, str], str], workloads: Mapping[str, WorkloadInfo],
                    chart_counter: list[int]) -> tuple[dict[str, Any], list[str]]:
    """One workload's trend (its title, a table of each case's location per label, its charts), and its labels."""
    title = _workload_title(t, workload, workloads)
    shown = set(w_rows["label"].astype(str))
    present = [lab for lab in order if lab in shown]
    table = TableView([_col(t, "case"), _col(t, "metric")] + [Column(lab, "median_ci", True) for lab in present])
    names = _case_names(t, workload, w_rows)
    for (case_id, metric), rows in w_rows.groupby(["case_id", "metric"], sort=True):
        by_label = {str(r.label): r for r in rows.itertuples()}
        cells: list[Any] = [names.get(str(case_id)) or str(case_id), _metric(t, str(metric))]
        for lab in present:
            r = by_label.get(lab)
            if r is None:
                cells.append(None)
                continue
            cells.append({"median": shown_location(r.estimate, r.median), "low": r.ci_low, "high": r.ci_high, "unit": r.unit,
                          "flag": flags.get((lab, str(case_id), str(metric)))})
        table.rows.append(cells)
    charts = _workload_charts(t, w_rows, present, names, title, chart_counter)
    return {"title": title, "table": table, "charts": charts}, present


def _workload_charts(t: Messages, w_rows: pd.DataFrame, present: list[str], names: Mapping[str, str], title: str,
                     chart_counter: list[int]) -> list[ChartView]:
    """One workload's trend charts, of the first of TREND_CHART_METRICS it recorded: none for a single label."""
    chart_metric = next((m for m in TREND_CHART_METRICS if (w_rows["metric"] == m).any()), None)
    charts: list[ChartView] = []
    if chart_metric and len(present) >= 2:
        sub = w_rows[w_rows["metric"] == chart_metric]
        parts = _chart_parts(sorted(sub["case_id"].astype(str).unique()))
        for i, part in enumerate(parts, 1):
            chart_counter[0] += 1
            chart = _trend_chart(t, sub[sub["case_id"].astype(str).isin(part)], present, names, title,
                                 chart_metric, f"t{chart_counter[0]}")
            if len(parts) > 1:
                chart.title = t.plain("chart.trend_part", title=chart.title, part=i, parts=len(parts))
            charts.append(chart)
    return charts


def _chart_parts(cases: list[str]) -> list[list[str]]:
    """``cases`` in as few charts of at most MAX_CHART_SERIES lines as there can be, of even sizes."""
    n = -(-len(cases) // MAX_CHART_SERIES)
    size = -(-len(cases) // n) if n else 0
    return [cases[i:i + size] for i in range(0, len(cases), size)] if size else []


def _trend_chart(t: Messages, sub: Any, present: list[str], names: Mapping[str, str], title: str, metric: str,
                 key: str) -> ChartView:
    """One trend chart: each case of ``sub`` a line across the labels, named at its end."""
    points = [{"x": str(r.label), "y": shown_location(r.estimate, r.median), "y_low": r.ci_low, "y_high": r.ci_high,
               "series": names.get(str(r.case_id)) or str(r.case_id)} for r in sub.itertuples()]
    unit = str(sub["unit"].iloc[0])
    rank = {lab: i for i, lab in enumerate(present)}
    points.sort(key=lambda p: (rank[p["x"]], p["series"]))
    spec = chart_lines(points, x_title=t.plain("chart.label_axis"), y_title=_metric(t, metric), y_unit=unit, x_type="N",
                       log_x=False, log_y=unit in ("s", "bytes"), direct_labels=True)
    data = TableView([_col(t, "label"), _col(t, "case"), _col(t, "estimate", "value", True),
                      _col(t, "ci", "interval", True)])
    data.rows = [[p["x"], p["series"], (p["y"], unit), (p["y_low"], p["y_high"], unit)] for p in points]
    return ChartView(t.plain("chart.trend_title", workload=title, metric=_metric(t, metric)), spec, data, key)


# ---- trends: release series, neighbouring comparisons and change points ---------------------


def _series_line(t: Messages, ser: Series) -> str:
    """One series in release order: its labels with the versions they recorded."""
    labels = " → ".join(f"{lab} ({ser.versions[lab]})" if ser.versions.get(lab) else lab for lab in ser.labels)
    name = ser.name or t.plain("trends.release.series_rest")
    key = "trends.release.series_by_version" if ser.by_version else "trends.release.series_by_date"
    return t.plain(key, series=name, labels=labels)


def _verdict_text(t: Messages, verdict: Verdict) -> str:
    key = f"verdict.{verdict.name.lower()}"
    return t.plain(key) if t.has(key) else verdict.value


def _pair_link(t: Messages, before: str, after: str, device: str, reports: Sequence[dict[str, Any]], page: str) -> Any:
    """The published article of a pair when there is one, else the command that compares it."""
    for rep in reports:
        if rep["baseline"] == before and rep["candidate"] == after:
            return Link(rep["title"], relpath(page, rep["page"]))
    return f"reporter compare {before} {after}"


def _pairs_table(t: Messages, series: Sequence[Series], inp: TrendInput, family: str,
                 reports: Sequence[dict[str, Any]], page: str) -> TableView:
    """Each neighbouring pair of a series: the family's geometric mean ratio with its CI, and its article."""
    table = TableView([_col(t, "trend.pair"), _col(t, "geomean", "ratio", True), _col(t, "ci", "ci", True),
                       _col(t, "verdict"), _col(t, "trend.compare", "link_or_code")])
    for ser in series:
        for before, after in ser.pairs:
            c = inp.neighbours.get((before, after))
            g = c.geomeans.get(family) if c is not None else None
            verdict = _verdict_text(t, Verdict(g.verdict)) if g is not None and g.verdict else None
            table.rows.append([f"{before} → {after}", g.ratio if g else None, (g.ci_low, g.ci_high) if g else None,
                               verdict, _pair_link(t, before, after, inp.cls.name, reports, page)])
    return table


@dataclass(frozen=True)
class SeriesStep:
    """A change point of one case and metric along a release series, in no language."""

    family: str
    device: str
    series: str
    workload: str
    case_id: str
    metric: str
    lower_is_better: bool
    before: str  # the label before the step and the label after it
    after: str
    version: str  # what the label after the step recorded (else the label)
    step: Step
    covered: bool  # every point's interval covers its runs' spread

    @property
    def ratio(self) -> float:
        """Above 1: better after the step."""
        return math.exp(-self.step.size if self.lower_is_better else self.step.size)

    @property
    def ci(self) -> tuple[float, float]:
        sign = -1.0 if self.lower_is_better else 1.0
        lo, hi = sorted((math.exp(sign * self.step.ci_low), math.exp(sign * self.step.ci_high)))
        return lo, hi


def class_steps(inp: TrendInput, workloads: Mapping[str, WorkloadInfo]) -> list[SeriesStep]:
    """The change points of every case and metric the trends show for one device class, over each of its
    series' points (``compute_steps``; the spread pooled over the series where every point's interval
    covers its runs). The trends pages and the articles that span a series show these same steps."""
    import zlib

    rows = inp.summaries[~inp.summaries["metric"].isin(TREND_HIDDEN_METRICS)]
    out: list[SeriesStep] = []
    for ser in inp.series():
        if len(ser.points) < 2:
            continue
        sub = rows[rows["label"].astype(str).isin(ser.points)]
        for (workload, case_id, metric), g in sub.groupby(["workload", "case_id", "metric"], sort=True):
            by_label = {str(r.label): r for r in g.itertuples()}
            labels, points = [], []
            for lab in ser.points:
                r = by_label.get(lab)
                pt = point_of_summary(r.estimate, r.ci_low, r.ci_high, int(r.n_processes), int(r.n_runs),
                                      bool(r.runs_covered)) if r is not None else None
                if pt is not None:
                    labels.append(lab)
                    points.append(pt)
            if len(points) < 2:
                continue
            y, se, df = zip(*points)
            covered = all(bool(by_label[lab].runs_covered) for lab in labels)
            lower = str(g["better"].iloc[0]) == "lower"
            for st in compute_steps(y, se, df, seed=zlib.crc32(f"{case_id}|{metric}".encode()), pooled=covered,
                                    alpha=POOLED_ALPHA if covered else ALPHA):
                before, after = labels[st.index - 1], labels[st.index]
                out.append(SeriesStep(family_of(str(workload), workloads), inp.cls.name, ser.name, str(workload),
                                      str(case_id), str(metric), lower, before, after,
                                      ser.versions.get(after) or after, st, covered))
    return out


def steps_in_words(t: Messages, steps: Sequence[SeriesStep], rows: pd.DataFrame, workloads: Mapping[str, WorkloadInfo],
                   reports: Sequence[dict[str, Any]], *, article_names: bool = False) -> list[dict[str, Any]]:
    """Steps as the steps tables show them: named in ``t``'s language (cases named as in ``rows``, the
    class's summaries), largest first; each links the article of its pair where there is one.

    ``article_names``: workloads named as an article names its blocks (``workload_name``, in the
    device's own words: DDP across CPU processes on a CPU), not by the registry's title."""
    names: dict[str, dict[str, str]] = {}
    out = []
    for st in sorted(steps, key=lambda st: -abs(st.step.size)):
        if st.workload not in names:
            names[st.workload] = _case_names(t, st.workload, rows[rows["workload"].astype(str) == st.workload])
        title = _workload_title(t, st.workload, workloads)
        if article_names and t.has(f"workload_name.{st.workload}"):
            title = t.plain(f"workload_name.{st.workload}")
        out.append({"family": st.family, "device": st.device, "series": st.series, "workload": title,
                    "case": names[st.workload].get(st.case_id) or st.case_id, "metric": _metric(t, st.metric),
                    "before": st.before, "after": st.after, "version": st.version, "size": st.step.size,
                    "ratio": st.ratio, "ci": st.ci, "verdict": Verdict.BETTER if st.ratio > 1 else Verdict.WORSE,
                    "covered": st.covered, "pair": (st.before, st.after), "reports": reports})
    return out


def _steps_table(t: Messages, steps: Sequence[dict[str, Any]], page: str, *, with_family: bool) -> TableView:
    """Steps as rows: where (the version after the step), what, by how much, and the pair's comparison."""
    cols = [_col(t, "family", "link")] if with_family else []
    cols += [_col(t, "case"), _col(t, "metric"), _col(t, "trend.step_at"), _col(t, "ratio", "ratio", True),
             _col(t, "ci", "ci", True), _col(t, "verdict"), _col(t, "trend.compare", "link_or_code")]
    table = TableView(cols)
    for st in steps:
        cells: list[Any] = [Link(t.plain(f"family.{st['family']}"), relpath(page, f"trends/{st['family']}.md"))] if with_family else []
        where = t.plain("trends.release.step_at", before=st["before"], after=st["after"], version=st["version"])
        if not st["covered"]:
            where += " " + t.plain("trends.release.step_runs_not_covered")
        cells += [f"{st['workload']}: {st['case']}", st["metric"], where, st["ratio"], st["ci"],
                  _verdict_text(t, st["verdict"]),
                  _pair_link(t, *st["pair"], st["device"], st["reports"], page)]
        table.rows.append(cells)
    return table


def _case_names(t: Messages, workload: str, rows: Any) -> dict[str, str]:
    """Human labels of a workload's cases (reporter.present.labels), distinct within the workload."""
    from reporter.present.labels import case_label, distinct_labels, params_of

    first = rows.drop_duplicates("case_id").sort_values("case_id")
    ids = [str(c) for c in first["case_id"]]
    params = [params_of(p) for p in first["params"]]
    labels = distinct_labels(t, workload, params, lambda p: case_label(t, workload, p) or params_label(p))
    return dict(zip(ids, labels))


def _metric(t: Messages, metric: str) -> str:
    key = f"metric.{metric}"
    return t.plain(key) if t.has(key) else metric


# ---- methodology -----------------------------------------------------------------------------


def methodology_view(workloads: Mapping[str, WorkloadInfo], t: Messages) -> dict[str, Any]:
    lang = t.lang
    families = []
    for family in FAMILIES:
        ws = sorted((w for w in workloads.values() if w.family == family), key=lambda w: w.name)
        if ws:
            # The registry's paragraphs are Markdown written in this repository, not run data.
            families.append({"key": family, "workloads": [
                {"name": w.name, "title": w.title_in(lang), "method": Markup(w.method_in(lang))} for w in ws]})
    metrics = TableView([_col(t, "metric", "code"), _col(t, "unit"), _col(t, "better"), _col(t, "description")])
    for m in METRICS.values():
        key = f"metric_description.{m.name}"
        description = t(key) if t.has(key) and lang != "en" else m.description
        metrics.rows.append([m.name, m.unit, t(f"better.{m.better}"), description])
    timings = TableView([_col(t, "timing", "code"), _col(t, "description")])
    timings.rows = [[name, t(f"timing_description.{name}")] for name in TIMINGS]
    return {"families": families, "metrics": metrics, "timings": timings}
