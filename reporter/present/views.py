"""Views: what a page shows, arranged from computed data into tables, charts and links.

A view only arranges: every number comes from ``ArticleData`` (reporter.article.compute) or
reporter.model.compare/stats, every word from the message catalogues, and every table is a
``reporter.present.tables.Table`` whose cells the format hooks of reporter.present.render turn into text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from markupsafe import Markup

from runformat.vocabulary import OTHER_FAMILY, NoteCode, Verdict
from runformat.workloads import WORKLOADS, WorkloadInfo
from reporter.article.data import ArticleData, Block, CaseRow, ChartData, DerivedTable
from reporter.present.charts import chart_lines, chart_ratios
from reporter.article.paths import relpath
from reporter.present.notes import note_text
from reporter.present.render import Messages
from reporter.present.tables import Column, Table

RAW_FILES = ("environment.parquet", "cases.parquet", "samples.parquet")
VERDICT_MARK = {Verdict.BETTER: "▲ ", Verdict.WORSE: "▼ "}
# Each verdict is said by the [verdict] message named after it (Verdict.TOO_FEW: "too_few").
VERDICT_KEY = {v: v.name.lower() for v in Verdict}
SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass
class ChartView:
    """A chart: its title, its Vega-Lite specification, its data as a table, and where its SVG goes.

    ``href`` (the SVG file, relative to the page that shows it) is set by the build
    once it knows the page.
    """

    title: str
    spec: dict[str, Any]
    table: Table | None  # None: the tables right after the chart hold its data
    ident: str
    href: str | None = None


@dataclass(frozen=True)
class Link:
    """A link to a generated page or file: ``href`` is relative to the page that shows it."""

    text: str
    href: str


def load_workloads() -> dict[str, WorkloadInfo]:
    """Every workload's description, from the run format's table (``runformat.workloads``)."""
    return dict(WORKLOADS)


def family_of(workload: str, workloads: Mapping[str, WorkloadInfo]) -> str:
    info = workloads.get(workload)
    return info.family if info else OTHER_FAMILY


def col(t: Messages, key: str, kind: str = "text", right: bool = False, **values: Any) -> Column:
    return Column(t.plain(f"col.{key}", **values), kind, right)


def verdict_word(t: Messages, verdict: Verdict, row: CaseRow | None = None) -> str:
    """The verdict as a table says it; "not enough replicates" says how many processes a side it needs."""
    if verdict is Verdict.TOO_FEW and row is not None:
        needed = next((n.values.get("needed") for n in row.notes if n.code is NoteCode.TOO_FEW_UNITS), None)
        if needed is not None:
            return t.plain("verdict.too_few_needed", needed=needed)
    return VERDICT_MARK.get(verdict, "") + t.plain(f"verdict.{VERDICT_KEY[verdict]}")


# ---- the article ----------------------------------------------------------------------------------


class ArticleView:
    """``ArticleData`` arranged for the article template: tables, charts, footnotes, headline phrases."""

    def __init__(self, data: ArticleData, t: Messages, when: dict[str, Any] | None = None) -> None:
        self.a = data
        self.t = t
        # For an article whose sides span a release series: the series' labels from baseline to
        # candidate and the steps found between them (reporter.site.pages.span_steps_view).
        self.when = when
        self.notes: dict[str, int] = {}
        # Every chart, numbered in page order, before the page renders: the build gives each its SVG file.
        self.chart_views: list[ChartView] = []
        self._by_data: dict[int, ChartView] = {}
        for section in data.sections:
            for c in (section.chart, *(c for b in section.blocks for c in b.charts)):
                if c is not None:
                    view = self._make_chart(c, len(self.chart_views) + 1)
                    self.chart_views.append(view)
                    self._by_data[id(c)] = view

    def chart(self, data: ChartData | None) -> ChartView | None:
        return None if data is None else self._by_data[id(data)]

    def _make_chart(self, data: ChartData, number: int) -> ChartView:
        t = self.t
        if data.kind == "ratios":
            names = {v.value: t.plain(f"verdict.{k}") for v, k in VERDICT_KEY.items()}
            spec = chart_ratios(list(data.points), x_title=data.x_title, verdict_names=names)
            return ChartView(data.title, spec, None, f"c{number:03d}")
        spec = chart_lines(list(data.points), x_title=data.x_title, y_title=data.y_title, log_x=data.log_x, log_y=data.log_y,
                           y_unit=data.unit if data.unit in ("s", "bytes") else None,
                           stacks=data.stacks or (t.plain("side.baseline"), t.plain("side.candidate")))
        table = Table([Column(data.x_title), col(t, "series"), col(t, "median", "value", True),
                       col(t, "ci", "markup", True)], css="ib-details")
        table.rows = [[str(p["x"]), p["series"], (p["y"], data.unit), _ci_text(((p["y_low"], p["y_high"]), data.unit))]
                      for p in data.points]
        return ChartView(data.title, spec, table, f"c{number:03d}")

    def footnote(self, row: CaseRow) -> str:
        """The superscript numbers of a row's notes (one number per distinct note text on the page)."""
        marks = []
        for text in self.note_texts(row):
            if text not in self.notes:
                self.notes[text] = len(self.notes) + 1
            marks.append(str(self.notes[text]).translate(SUPERSCRIPTS))
        return "".join(marks)

    # The better calls the verdict's sentence names; the others are in the tables. Worse calls are all named.
    VERDICT_BETTER_NAMED = 3

    def verdict(self) -> dict[str, Any]:
        """The verdict box: its admonition kind, the sentence, every regression, the caveats, the evidence."""
        t, box = self.t, self.a.verdict
        sep = Markup(t.plain("headline.sep"))

        def item(r: CaseRow) -> Markup:
            return t("verdict_box.item", case=r.full_label, change=self.change(r), ci=self.change_ci(r))

        nb, nw = len(box.better), len(box.worse)
        better = sep.join(t("verdict_box.item_short", case=r.full_label, change=self.change(r))
                          for r in box.better[:self.VERDICT_BETTER_NAMED])
        if nb > self.VERDICT_BETTER_NAMED:
            better += t("verdict_box.more_better", n=nb - self.VERDICT_BETTER_NAMED)
        if nb and nw:
            sentence = t("verdict_box.better_and_worse", candidate=box.candidate, nb=nb, nw=nw, better=better)
        elif nb:
            sentence = t("verdict_box.better_only", candidate=box.candidate, n=nb, better=better)
        elif nw:
            sentence = t("verdict_box.worse_only", candidate=box.candidate, n=nw)
        elif box.unsettled == 0 and box.same:
            sentence = t("verdict_box.all_same", candidate=box.candidate, n=box.total, band=fmt_band(self.a.headline.equivalence))
        else:
            sentence = t("verdict_box.no_call", same=box.same, n=box.total, unsettled=box.unsettled,
                         band=fmt_band(self.a.headline.equivalence))
        if box.unsettled and box.mde is not None:
            sentence += Markup(t.plain("verdict_box.join")) + t("verdict_box.cannot_tell", mde=fmt_band(box.mde), n=box.unsettled)
        if box.versions:
            key = "verdict_box.upgrade" if box.upgrade else "verdict_box.downgrade"
            sentence = t(key, baseline=box.versions[0], candidate=box.versions[1]) + sentence
        def value(key: str, v: Any) -> Any:
            if key == "side":
                return t.plain(f"side.{v}")
            if key == "what" and t.has(f"stack.{v}"):
                return t.plain(f"stack.{v}")
            return t.plain("verdict_box.list_sep").join(v) if isinstance(v, tuple) else v

        caveats = [t(f"verdict_box.caveat.{c.code}", **{k: value(k, v) for k, v in c.params.items()}) for c in box.caveats]
        evidence = t("verdict_box.evidence", runs_b=box.runs[0], procs_b=box.processes[0],
                     runs_c=box.runs[1], procs_c=box.processes[1])
        kind = "failure" if nw else "success" if nb else "info"
        return {"kind": kind, "sentence": sentence, "regressions": [item(r) for r in box.worse],
                "caveats": caveats, "evidence": evidence}

    def warning_texts(self) -> list[str]:
        """The headline's warnings: confounders that touch many of the cases compared."""
        t = self.t
        out = []
        for n in self.a.headline.warnings:
            p = n.values
            sides = t.plain("headline.side_join").join(t.plain(f"side.{s}") for s in str(p.get("sides") or "").split(",") if s)
            out.append(t.plain(f"confounder_summary.{n.code.value}", cases=p.get("cases"), total=p.get("total"), sides=sides))
        return out

    def note_texts(self, row: CaseRow) -> list[str]:
        return [note_text(n, self.t.lang) for n in row.notes]

    def main_table(self, block: Block) -> Table:
        """At most six columns: case, baseline, candidate, ratio [CI], verdict, % of peak (where known)."""
        t = self.t
        columns = [col(t, "case"), col(t, "baseline", "value", True), col(t, "candidate", "value", True),
                   col(t, "ratio_ci", "ratio_ci", True), col(t, "verdict")]
        if block.has_peak:
            columns.append(col(t, "peak", "peak", True))
        table = Table(columns, css="ib-main")
        for r in block.main_rows:
            cells: list[Any] = [r.label, (r.baseline.value, r.unit), (r.candidate.value, r.unit), r.ratio,
                                verdict_word(t, r.verdict, r) + self.footnote(r)]
            if block.has_peak:
                cells.append(r.rates if r.metric in ("time", "latency") else None)
            table.rows.append(cells)
        return table

    def details_table(self, block: Block) -> Table:
        """Everything else about every row: medians with CIs, percentiles, rates, p, processes, MDE."""
        t = self.t
        columns = [col(t, "case"), col(t, "metric"), col(t, "baseline_ci", "value_ci", True),
                   col(t, "candidate_ci", "value_ci", True)]
        if block.has_latency:
            columns += [col(t, "p95_p99", "markup", True)]
        has_rate = any(x is not None for r in block.rows for x in r.rates)
        if has_rate:
            columns += [col(t, "rate_baseline", "rate", True), col(t, "rate_candidate", "rate", True)]
        columns += [col(t, "ratio_ci", "ratio_ci", True), col(t, "p_adjusted", "pvalue", True),
                    col(t, "processes", right=True), col(t, "mde", "percent", True), col(t, "note")]
        table = Table(columns, css="ib-details")
        for r in block.rows:
            cells: list[Any] = [r.label, t.plain(f"metric.{r.metric}") if t.has(f"metric.{r.metric}") else r.metric,
                                (r.baseline, r.unit), (r.candidate, r.unit)]
            if block.has_latency:
                cells.append(_percentiles_text(r))
            if has_rate:
                cells += [r.rates[0], r.rates[1]]
            cells += [r.ratio, r.p_adjusted, f"{r.n_units[0]} / {r.n_units[1]}", r.mde,
                      "; ".join(self.note_texts(r)) or None]
            table.rows.append(cells)
        return table

    def derived_table(self, d: DerivedTable) -> Table:
        t = self.t
        columns = [col(t, "case"), col(t, "baseline", "derived", True), col(t, "candidate", "derived", True)]
        has_detail = any(r.detail for r in d.rows)
        if has_detail:
            columns.append(col(t, "note"))
        table = Table(columns, css="ib-main")
        for r in d.rows:
            table.rows.append([r.label, (r.baseline, r.unit), (r.candidate, r.unit)] + ([r.detail] if has_detail else []))
        return table

    def best_table(self, rows: tuple[CaseRow, ...]) -> Table:
        t = self.t
        table = Table([col(t, "case"), col(t, "ratio_ci", "ratio_ci", True), col(t, "change", "markup", True)],
                      css="ib-main")
        for r in rows:
            table.rows.append([r.full_label, r.ratio, self.change(r)])
        return table

    def change(self, r: CaseRow) -> str:
        """The change a reader understands: '84% faster', '217× faster', '12% less memory'."""
        return change_phrase(self.t, r.ratio.value, r.unit, r.better, self.a.headline.cross_device)

    def change_ci(self, r: CaseRow) -> str:
        """The CI of ``change``, in the same form (% or ×) and direction as the point, low to high."""
        return change_ci_phrase(r.ratio, r.unit, self.a.headline.cross_device)

    def stacks_table(self) -> Table:
        t = self.t
        table = Table([col(t, "item"), col(t, "baseline"), col(t, "candidate"), col(t, "changed")], css="ib-wide")
        for s in self.a.stacks:
            table.rows.append([t.plain(f"stack.{s.name}"), s.baseline, s.candidate, "≠" if s.changed else None])
        return table

    def changes_lead(self) -> str:
        """What the what-changed table lists: fingerprint entries, and the precision defaults where they differ."""
        n_settings = sum(1 for key, _, _ in self.a.changes if key.startswith("settings."))
        n = len(self.a.changes) - n_settings
        if not n_settings:
            return self.t.plain("article.env.changes_lead", n=n)
        return self.t.plain("article.env.changes_lead_settings", n=n, settings=n_settings)

    # Up to this many differing entries are all shown; beyond it, the entries a reader weighs first
    # (WEIGHED_FIRST, precision settings, the variables that change numerics) stay in view and the
    # rest (a full lscpu, package lists) fold under a details box.
    CHANGES_SHOWN = 12
    WEIGHED_FIRST = ("torch.version", "cuda.runtime", "cuda.cudnn", "cuda.nccl", "driver.version", "gpu0.name", "gpu.count",
                     "cpu.model", "cpu.logical_cores", "container.image", "python.version")
    _NUMERICS_ENV = ("env.TORCH", "env.NVIDIA_TF32", "env.CUBLAS", "env.CUDNN", "env.OMP_NUM_THREADS")

    def _weighed_first(self, key: str) -> bool:
        return (key in self.WEIGHED_FIRST or key.startswith(("settings.", "cuda.tf32", "cuda.float32", "cudnn."))
                or key.startswith(self._NUMERICS_ENV))

    def changes_table(self, folded: bool = False) -> Table:
        """The differing fingerprint entries in view (``folded``: those under the details box)."""
        t = self.t
        table = Table([col(t, "key", "code"), col(t, "baseline"), col(t, "candidate")], css="ib-wide")
        changes = self.a.changes
        if len(changes) > self.CHANGES_SHOWN:
            changes = tuple(c for c in changes if self._weighed_first(c[0]) != folded)
            if not folded:  # in the order a reader weighs them: torch, CUDA, cuDNN, ..., then the settings
                order = {k: i for i, k in enumerate(self.WEIGHED_FIRST)}
                changes = tuple(sorted(changes, key=lambda c: order.get(c[0], len(order))))
        elif folded:
            changes = ()
        table.rows = [list(c) for c in changes]
        return table

    def policy_table(self) -> Table:
        t = self.t
        table = Table([col(t, "suite"), col(t, "warmup"), col(t, "samples_range", right=True), col(t, "block", right=True),
                       col(t, "target_ci", "percent", True), col(t, "budget", right=True)], css="ib-wide")
        for p in self.a.method.policy:
            table.rows.append([p.suite, f"≥ {p.warmup_s:g} s, ≥ {p.min_warmup}×", f"{p.min_samples}–{p.max_samples}",
                               f"≥ {p.min_block_s * 1e3:g} ms", p.target_rel_ci, f"{p.budget_s:g} s"])
        return table

    def runs_table(self) -> Table:
        t = self.t
        table = Table([col(t, "side"), col(t, "run", "link"), col(t, "started"), col(t, "status"),
                       col(t, "cases_ok", right=True), col(t, "cases_failed", right=True),
                       col(t, "cases_skipped", right=True)], css="ib-wide")
        for r in self.a.runs:
            table.rows.append([t.plain(f"side.{r.role}"), Link(r.run_id, relpath(self.a.page, r.page)), r.started,
                               t.plain(f"run_status.{r.status}") if t.has(f"run_status.{r.status}") else r.status,
                               str(r.cases_ok), str(r.cases_failed), str(r.cases_skipped)])
        return table

    def raw_table(self) -> Table:
        t = self.t
        table = Table([col(t, "side"), col(t, "run", "link"), col(t, "file_environment", "link"),
                       col(t, "file_cases", "link"), col(t, "file_samples", "link")], css="ib-wide")
        for r in self.a.runs:
            folder = r.page.rsplit("/", 1)[0]
            files = [Link(name, relpath(self.a.page, f"{folder}/{name}")) for name in RAW_FILES]
            table.rows.append([t.plain(f"side.{r.role}"), Link(r.run_id, relpath(self.a.page, r.page)), *files])
        return table

    def numerics_table(self, rows: Any) -> Table:
        t = self.t
        table = Table([col(t, "case"), col(t, "metric"), col(t, "baseline", "exact", True),
                       col(t, "candidate", "exact", True), col(t, "rel_diff", "reldiff", True)], css="ib-main")
        for r in rows:
            table.rows.append([r.label, t.plain(f"metric.{r.metric}") if t.has(f"metric.{r.metric}") else r.metric,
                               r.baseline, r.candidate, (r.identical, r.rel_diff, t.plain("article.identical"))])
        return table


def change_phrase(t: Messages, ratio: float, unit: str, better: str, cross_device: bool, *, bare: bool = False) -> str:
    """A ratio (> 1: candidate better) as a change of the candidate: faster/slower, less/more memory, higher/lower.

    Ratios of 1.5 and beyond, and every ratio of a cross-device article, read as factors
    ("217× faster") rather than percentages past 100%.
    """
    import math

    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "—"
    up = ratio >= 1
    factor = ratio if up else 1 / ratio
    as_factor = cross_device or factor >= 1.5
    amount = factor_text(factor) if as_factor else f"{(factor - 1) * 100:.1f}%"
    if bare:
        return amount
    if as_factor:  # 1.91× in English, 1.91 倍 in Chinese
        amount = t.plain("change.factor", x=amount.removesuffix("×"))
    if unit == "s":
        key = "faster" if up else "slower"
    elif unit == "bytes":
        key = "less_memory" if up else "more_memory"
        if not as_factor:  # memory changes read as the share of the baseline's memory
            amount = f"{(1 - 1 / ratio) * 100:.1f}%" if up else f"{(1 / ratio - 1) * 100:.1f}%"
    else:
        key = "higher" if up else "lower"
    return t.plain(f"change.{key}", amount=amount)


def factor_text(factor: float) -> str:
    """A factor with three significant digits (two decimals at most), never in scientific notation: 1.90×, 217×, 1,160×."""
    digits = 2 if factor < 10 else 1 if factor < 100 else 0
    return f"{factor:,.{digits}f}×"


def _change_amount(ratio: float, up: bool, as_factor: bool, memory: bool) -> float:
    """The size of a change in the direction ``up`` (the point's): a factor, or a percentage."""
    factor = ratio if up else 1 / ratio
    if as_factor:
        return factor
    if memory:  # memory changes read as the share of the baseline's memory
        return (1 - 1 / ratio) * 100 if up else (1 / ratio - 1) * 100
    return (factor - 1) * 100


def change_ci_phrase(ratio: Any, unit: str, cross_device: bool) -> str:
    """A ratio's 95% CI as the change phrase says it: both bounds as factors or both as percentages.

    The form follows the point estimate (``change_phrase``), so "31.2% faster" has a CI
    in percent ("13.1% – 52.0%") even where a bound passes 1.5×, and the bounds are in
    the point's direction, smaller first.
    """
    import math

    values = (ratio.value, ratio.low, ratio.high)
    if not all(v is not None and math.isfinite(v) and v > 0 for v in values):
        return "—"
    up = ratio.value >= 1
    point = ratio.value if up else 1 / ratio.value
    as_factor = cross_device or point >= 1.5
    memory = unit == "bytes"
    lo, hi = sorted(_change_amount(v, up, as_factor, memory) for v in (ratio.low, ratio.high))
    if as_factor:
        return f"{factor_text(lo)} – {factor_text(hi)}"
    return f"{lo:.1f}% – {hi:.1f}%"


def _ci_text(value: Any) -> str:
    from reporter.present.render import fmt_value

    (lo, hi), unit = value
    return f"[{fmt_value(lo, unit)}, {fmt_value(hi, unit)}]"


def _percentiles_text(r: CaseRow) -> str | None:
    from reporter.present.render import fmt_seconds

    parts = []
    for p in r.latency:
        parts.append(f"{fmt_seconds(p.p95)} / {fmt_seconds(p.p99)}" if p else "—")
    return None if all(p == "—" for p in parts) else " → ".join(parts)


def fmt_band(fraction: float) -> str:
    """A band or detectable change as a percentage of the readers' size: ±2%, ±27%, ±0.5%."""
    pct = 100 * fraction
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%".replace(".0%", "%")
