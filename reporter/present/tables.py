"""One table model for every page and format, and the CLI renderings of comparisons and runs.

A ``Table`` is columns (a title, a cell *kind*, an alignment) and rows of raw values; a
renderer draws it through *format hooks*, one function per kind that turns a raw value
into text (as hyperfine's ``markup.rs`` serves every format with row and divider hooks).
The site's Markdown renderer (``render_markdown``, hooks in ``reporter.present.render``), the
terminal (rich) and the CLI's Markdown all draw the same model; CSV and JSON serialise
``comparison_records``, which keeps numbers as numbers. Nothing here computes a statistic.

CSS hook for the site: a table with a ``css`` class is written inside
``<div class="ib-table {css}" markdown>`` (the ``md_in_html`` extension), so
``.ib-table.ib-main`` is an article's main table (at most six columns: case, baseline,
candidate, ratio with CI, verdict, % of peak), ``.ib-table.ib-details`` a details table
in a collapsible box, and ``.ib-table.ib-wide`` any other table that may need to scroll
inside its own box. Every table the site shows carries ``ib-table``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import pandas as pd
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from runformat.schema import METRICS
from reporter.model.compare import Comparison
from reporter.data.load import Archive
from reporter.model.stats import VERDICT_BETTER, VERDICT_INCONCLUSIVE, VERDICT_WORSE
from reporter.present.terminal import inert


@dataclass(frozen=True)
class Column:
    """A column: its heading, the kind of its cells (which hook formats them), alignment."""

    title: Any
    kind: str = "text"
    right: bool = False


@dataclass
class Table:
    """Columns and rows of raw values (one per column); ``css`` names its box on the site."""

    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    css: str = "ib-wide"

    @property
    def fmt(self) -> None:  # pragma: no cover - guards against the old TableView API
        raise AttributeError("Table has no fmt")


Hook = Callable[[Any], str]


def render_cells(table: Table, hooks: Mapping[str, Hook]) -> list[list[str]]:
    """Every cell of ``table`` as text, through the hook of its column's kind (``text`` when unknown)."""
    fallback = hooks["text"]
    shown = [hooks.get(c.kind, fallback) for c in table.columns]
    return [[f(v) for f, v in zip(shown, row)] for row in table.rows]


def render_markdown(table: Table, hooks: Mapping[str, Hook], *, title: Hook = str, boxed: bool = True) -> str:
    """A GitHub-flavoured Markdown table (in its CSS box when ``boxed``); hooks must escape their output."""
    lines = ["|" + "".join(f" {title(c.title)} |" for c in table.columns),
             "|" + "".join(" ---: |" if c.right else " --- |" for c in table.columns)]
    lines += ["|" + "".join(f" {cell} |" for cell in row) for row in render_cells(table, hooks)]
    body = "\n".join(lines)
    if not boxed:
        return body
    return f'<div class="ib-table {table.css}" markdown>\n\n{body}\n\n</div>'


def render_rich(table: Table, hooks: Mapping[str, Hook], console: Console, *,
                styles: Callable[[Column, str], str] = lambda c, v: "") -> None:
    """The same table in the terminal."""
    out = RichTable(show_edge=False, header_style="bold", pad_edge=False)
    for c in table.columns:
        out.add_column(Text(inert(str(c.title))), justify="right" if c.right else "left", no_wrap=c.kind != "verdict")
    for row in render_cells(table, hooks):
        if len(row) == 1 or all(not x for x in row[1:]):
            out.add_row(Text(inert(row[0]), style="bold cyan"))
            continue
        out.add_row(*(Text(inert(v), style=styles(c, v)) for c, v in zip(table.columns, row)))
    console.print(out)


FORMATS = ("table", "markdown", "csv", "json")
UNMATCHED = "unmatched"
_VERDICT_STYLE = {VERDICT_BETTER: "bold green", VERDICT_WORSE: "bold red", VERDICT_INCONCLUSIVE: "yellow"}
_SCALES = {
    "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "bytes": ((2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B")),
    "items/s": ((1e9, "G items/s"), (1e6, "M items/s"), (1e3, "k items/s"), (1.0, "items/s")),
}


def format_value(value: float, unit: str) -> str:
    """A value with its unit, scaled for reading: ``1.23 ms``, ``2.00 GiB``, ``4.1 k/s``."""
    if value is None or not math.isfinite(value):
        return "–"
    for scale, name in _SCALES.get(unit, ()):
        if abs(value) >= scale or scale == _SCALES[unit][-1][0]:
            return f"{_sig(value / scale)} {name}"
    if unit == "%":
        return f"{_sig(value)}%"
    if unit in ("count", "1"):
        return f"{value:g}"
    return f"{_sig(value)} {unit}"


def _sig(x: float, digits: int = 3) -> str:
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}"


def _ratio(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.3f}×"


def _pvalue(p: float) -> str:
    if p is None or not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _spread(median: float, low: float, high: float) -> str:
    """The CI as ± the larger distance from the median, in percent (benchstat's style)."""
    if not all(map(math.isfinite, (median, low, high))) or median == 0:
        return ""
    half = max(abs(high - median), abs(median - low)) / abs(median)
    return f" ±{half * 100:.1f}%" if half >= 0.0005 else " ±0%"


# ---------------------------------------------------------------------- comparison


_PLAIN_HOOKS: dict[str, Hook] = {"text": lambda v: "" if v is None else str(v)}


def comparison_table(c: Comparison) -> tuple[Table, list[str], list[str]]:
    """A comparison as one ``Table`` (a heading row per workload), its numbered notes and its trailer lines."""
    table = Table([Column("case"), Column("metric"), Column(f"baseline: {c.baseline}", right=True),
                   Column(f"candidate: {c.candidate}", right=True), Column("ratio", right=True),
                   Column("95% CI", right=True), Column("p (adj.)", right=True), Column("processes", right=True),
                   Column("verdict", "verdict")])
    notes: list[str] = []
    for workload, rows in c.rows.groupby("workload", sort=False):
        table.rows.append([str(workload)] + [""] * 8)
        for r in rows.itertuples(index=False):
            verdict = r.verdict
            if r.note:
                if r.note not in notes:
                    notes.append(r.note)
                verdict += f" [{notes.index(r.note) + 1}]"
            table.rows.append([
                r.case_id, r.metric,
                format_value(r.baseline_value, r.unit) + _spread(r.baseline_value, r.baseline_ci_low, r.baseline_ci_high),
                format_value(r.candidate_value, r.unit) + _spread(r.candidate_value, r.candidate_ci_low, r.candidate_ci_high),
                _ratio(r.ratio),
                f"[{_ratio(r.ci_low)[:-1]}, {_ratio(r.ci_high)[:-1]}]" if math.isfinite(r.ci_low) else "–",
                _pvalue(r.p_adjusted), f"{r.n_baseline_units}/{r.n_candidate_units}", verdict,
            ])
    g = c.geomean
    g_ci = f"[{g.ci_low:.3f}, {g.ci_high:.3f}]" if math.isfinite(g.ci_low) else "–"
    table.rows.append(["geomean", c.geomean_metric or "all metrics", "", "", _ratio(g.ratio), g_ci, "", "",
                       f"{g.n_cases} case(s)"])
    counts = ", ".join(f"{n} {v}" for v, n in c.counts.items() if n)
    band = f"±{c.noise:.0%} noise band"
    correction = {"holm": "Holm", "bh": "Benjamini–Hochberg"}[c.correction]
    tested = int(c.rows["p_value"].notna().sum())
    mde = f"{c.mde:.1%}" if math.isfinite(c.mde) else "–"
    trailer = [
        f"ratio > 1: the candidate is better (time: baseline/candidate; throughput: candidate/baseline). "
        f"Estimates (geometric means of process medians) ± the half-width of their 95% CI. "
        f"{c.analysis} analysis; p-values {correction}-corrected across {tested} tested rows; {band}; "
        f"median minimum detectable effect {mde}"
        + ("." if c.run_level_covered else "; run-to-run variation not covered in every row."),
        f"verdicts: {counts}.",
    ]
    if c.advice is not None:
        a = c.advice
        need = ", ".join(x for x in (f"{a.processes} processes" if a.processes else "", f"{a.runs} runs" if a.runs else "") if x)
        trailer.append(f"noisiest family: {a.family} (median MDE {a.mde:.1%}); to resolve ±{a.target:.0%} there: "
                       f"{need or 'not reachable by more processes or runs alone'} a side.")
    if c.unmatched:
        only = {side: [f"{case} ({metric})" for case, metric, s in c.unmatched if s == side] for side in ("baseline", "candidate")}
        for side, items in only.items():
            if items:
                trailer.append(f"unmatched, measured only in the {side} ({len(items)}): {', '.join(items)}")
    return table, notes, trailer


def render_comparison_table(c: Comparison, console: Console) -> None:
    """Print a comparison as a rich table, grouped by workload (benchstat's layout)."""
    table, notes, trailer = comparison_table(c)
    render_rich(table, _PLAIN_HOOKS, console,
                styles=lambda col, v: _VERDICT_STYLE.get(v.split(" [")[0], "") if col.kind == "verdict" else "")
    for i, note in enumerate(notes, 1):
        console.print(inert(f"[{i}] {note}"), highlight=False, markup=False)
    for line in trailer:
        console.print(inert(line), highlight=False, markup=False)


def render_comparison_markdown(c: Comparison) -> str:
    """A comparison as one GitHub-flavoured Markdown table, a bold row per workload."""
    table, notes, trailer = comparison_table(c)
    workloads = {i for i, row in enumerate(table.rows) if all(x == "" for x in row[1:])}
    for i in workloads:
        table.rows[i][0] = f"**{table.rows[i][0]}**"
    hooks = {"text": lambda v: _md_escape(v) if not str(v).startswith("**") else "**" + _md_escape(str(v)[2:-2]) + "**"}
    lines = [render_markdown(table, hooks, boxed=False).replace("| --- | --- |", "|---|---|", 0)]
    lines.append("")
    lines += [f"[{i}] {_md_escape(n)}  " for i, n in enumerate(notes, 1)]
    lines += [_md_escape(t) + "  " for t in trailer]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("_", "\\_").replace("\n", " ")


RECORD_KEYS = (
    "case", "workload", "family", "metric", "unit", "baseline_value", "candidate_value", "baseline_median",
    "candidate_median", "ratio", "ci_low", "ci_high", "p_value", "p_adjusted", "verdict", "analysis", "mde",
    "processes_needed", "notes", "note", "baseline_ci_low", "baseline_ci_high", "candidate_ci_low",
    "candidate_ci_high", "n_baseline_units", "n_candidate_units", "n_baseline_runs", "n_candidate_runs", "n_cases",
)


def comparison_records(c: Comparison) -> list[dict[str, Any]]:
    """One dict per row, then one per unmatched (case, metric), then the ``geomean`` entry.

    Keys are ``RECORD_KEYS`` (the columns of ``reporter.model.compare``'s rows); ``notes`` is a
    list of ``{"code", "params"}``; NaN becomes ``None``. Unmatched entries have verdict
    ``unmatched`` and a note naming the side that measured them. Geomean entries (one per
    family, ``case`` = ``geomean:<family>``, then the overall one last, ``case`` =
    ``geomean``) carry ``ratio``, its CI, ``verdict``, ``analysis``, ``mde``,
    ``family``, ``n_cases`` and the replicate units in ``n_baseline_units``.
    """
    out = []
    for r in c.rows.to_dict("records"):
        rec = {k: r.get(k) for k in RECORD_KEYS}
        rec["case"] = r["case_id"]
        rec["notes"] = [n.to_json() for n in r.get("notes", ())]
        rec["n_cases"] = None
        out.append(rec)
    for case, metric, side in c.unmatched:
        rec = dict.fromkeys(RECORD_KEYS)
        rec.update(case=case, workload=case.split("[", 1)[0], metric=metric, unit=METRICS[metric].unit if metric in METRICS else None, verdict=UNMATCHED, note=f"measured only in the {side}", notes=[])
        out.append(rec)
    for name, g in [(f"geomean:{f}", g) for f, g in c.geomeans.items()] + [("geomean", c.geomean)]:
        rec = dict.fromkeys(RECORD_KEYS)
        rec.update(case=name, family=g.family, metric=c.geomean_metric, unit="ratio", ratio=g.ratio, ci_low=g.ci_low,
                   ci_high=g.ci_high, p_value=g.p_value, verdict=g.verdict, analysis=g.analysis, mde=g.mde,
                   n_cases=g.n_cases, n_baseline_units=g.n_units, n_candidate_units=g.n_units, notes=[])
        out.append(rec)
    return [{k: _plain(v) for k, v in rec.items()} for rec in out]


def _plain(v: Any) -> Any:
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def render_comparison_json(c: Comparison) -> str:
    """``comparison_records`` as a JSON list (strict JSON: no NaN)."""
    return json.dumps(comparison_records(c), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def render_comparison_csv(c: Comparison) -> str:
    """``comparison_records`` as CSV with a header row, numbers at full precision."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(RECORD_KEYS), lineterminator="\n")
    writer.writeheader()
    for rec in comparison_records(c):
        rec["notes"] = json.dumps(rec["notes"], ensure_ascii=False) if rec["notes"] is not None else None
        writer.writerow({k: "" if v is None else (repr(v) if isinstance(v, float) else v) for k, v in rec.items()})
    return buf.getvalue()


RENDERERS: dict[str, Callable[[Comparison], str]] = {
    "markdown": render_comparison_markdown,
    "csv": render_comparison_csv,
    "json": render_comparison_json,
}


# ---------------------------------------------------------------------------- runs


def runs_records(archive: Archive) -> list[dict[str, Any]]:
    """One dict per valid run (the ``Archive.runs`` columns), timestamps as ISO strings."""
    df = archive.runs.copy()
    for col in ("started_at", "finished_at"):
        df[col] = df[col].map(lambda t: None if pd.isna(t) else t.isoformat())
    df["label"] = df["label"].astype(str)
    df["run_id"] = df["run_id"].astype(str)
    return [{k: _plain(v) for k, v in rec.items()} for rec in df.astype(object).where(df.notna(), None).to_dict("records")]


def render_runs_table(archive: Archive, console: Console) -> None:
    """Print the archive's runs as a table, then every validation problem."""
    if archive.runs.empty:
        console.print(inert(f"No valid runs under {archive.root}."), highlight=False, markup=False)
    else:
        table = Table([Column(name) for name in ("label", "run id", "date (UTC)", "status", "device", "torch", "CUDA",
                                                  "cases ok/failed/total")])
        for r in archive.runs.itertuples(index=False):
            date = "–" if pd.isna(r.started_at) else r.started_at.strftime("%Y-%m-%d %H:%M")
            device = " ".join(str(x) for x in (r.device_type, r.device_name) if x)
            cells = (
                r.label, r.run_id, date, r.status or "–", device or "–", r.torch or "–", r.cuda or "–",
                f"{r.cases_ok}/{r.cases_failed}/{r.cases_total}",
            )
            table.rows.append([str(x) for x in cells])
        render_rich(table, _PLAIN_HOOKS, console)
        labels = archive.labels()
        console.print(inert(f"{len(archive.runs)} run(s) under {len(labels)} label(s) in {archive.root}."), highlight=False, markup=False)
    render_problems(archive, console)


def render_problems(archive: Archive, console: Console) -> None:
    """List what could not be read while loading (a run, a file, some attempts), one line each."""
    if not archive.problems:
        return
    console.print(f"{len(archive.problems)} problem(s) reading the archive; each says what was left out:", highlight=False, markup=False,
                  style="yellow")
    for p in archive.problems:
        console.print(inert(f"  {p.path}: {p.reason}"), highlight=False, markup=False)

