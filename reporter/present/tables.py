"""One table model for every page and format, and the CLI's machine formats of comparisons and runs.

A ``Table`` is columns (a title, a cell *kind*, an alignment) and rows of raw values; a
renderer draws it through *format hooks*, one function per kind that turns a raw value
into text (as hyperfine's ``markup.rs`` serves every format with row and divider hooks).
The site's HTML (``render_html``, hooks in ``reporter.present.render``) and the CLI's
Markdown (``render_markdown``, from ``reporter.present.terminal_table``) draw the same model;
CSV and JSON serialise ``comparison_records``, which keeps numbers as numbers. Nothing here
computes a statistic.

CSS hook for the site: a table is written as HTML inside ``<div class="ib-table {css}">``,
which the site's Markdown keeps as a raw block, so ``.ib-table.ib-main`` is an article's main
table (at most six columns: case, baseline, candidate, ratio with CI, verdict, % of peak),
``.ib-table.ib-details`` a details table in a collapsible box, and ``.ib-table.ib-wide`` any
other table that may need to scroll inside its own box. Every table the site shows carries
``ib-table``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import pandas as pd
from rich.console import Console

from runformat.schema import METRICS
from reporter.model.compare import Comparison, counted
from reporter.data.load import Archive
from reporter.present.notes import note_text
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


def render_markdown(table: Table, hooks: Mapping[str, Hook], *, title: Hook = str) -> str:
    """A GitHub-flavoured Markdown table; hooks must escape their output."""
    lines = ["|" + "".join(f" {title(c.title)} |" for c in table.columns),
             "|" + "".join(" ---: |" if c.right else " --- |" for c in table.columns)]
    lines += ["|" + "".join(f" {cell} |" for cell in row) for row in render_cells(table, hooks)]
    return "\n".join(lines)


RIGHT = ' style="text-align: right;"'


def render_html(table: Table, hooks: Mapping[str, Hook], *, title: Hook = str) -> str:
    """The table as HTML in its CSS box; hooks must return HTML.

    The markup is the one Python-Markdown's tables extension writes for ``render_markdown``'s
    table (a line per tag, right-aligned cells styled), which the site's CSS and scripts
    (reporter/present/assets) are written for.
    """
    align = [RIGHT if c.right else "" for c in table.columns]
    parts = [f'<div class="ib-table {table.css}">\n<table>\n<thead>\n<tr>\n']
    parts += [f"<th{a}>{str(title(c.title)).strip()}</th>\n" for a, c in zip(align, table.columns)]
    parts.append("</tr>\n</thead>\n<tbody>\n")
    for row in render_cells(table, hooks):
        parts.append("<tr>\n")
        parts += [f"<td{a}>{str(cell).strip()}</td>\n" for a, cell in zip(align, row)]
        parts.append("</tr>\n")
    parts.append("</tbody>\n</table>\n</div>")
    return "".join(parts)


UNMATCHED = "unmatched"
# ---------------------------------------------------------------------- comparison


RECORD_KEYS = (
    "case", "workload", "family", "metric", "unit", "baseline_value", "candidate_value", "baseline_median",
    "candidate_median", "ratio", "ci_low", "ci_high", "p_value", "p_adjusted", "verdict", "analysis", "mde",
    "processes_needed", "notes", "note", "baseline_ci_low", "baseline_ci_high", "candidate_ci_low",
    "candidate_ci_high", "n_baseline_units", "n_candidate_units", "n_baseline_runs", "n_candidate_runs", "n_cases",
    "ci_level", "lender_labels", "lender_runs", "run_sd", "counted",
)


def comparison_records(c: Comparison) -> list[dict[str, Any]]:
    """One dict per row, then one per unmatched (case, metric), then the ``geomean`` entry.

    Keys are ``RECORD_KEYS`` (the columns of ``reporter.model.compare``'s rows); ``notes`` is a
    list of ``{"code", "params"}``, and ``note`` their English text joined by "; "
    (``reporter.present.notes``); NaN becomes ``None``. Unmatched entries have verdict
    ``unmatched`` and a note naming the side that measured them. Geomean entries (one per
    family, ``case`` = ``geomean:<family>``, then the overall one last, ``case`` =
    ``geomean``) carry ``ratio``, its CI, ``verdict``, ``analysis``, ``mde``,
    ``family``, ``n_cases`` and the replicate units in ``n_baseline_units``. ``counted`` says
    whether a row is one of those the article counts (``reporter.model.compare.counted``);
    None for unmatched and geomean entries.
    """
    out = []
    for r in c.rows.to_dict("records"):
        rec = {k: r.get(k) for k in RECORD_KEYS}
        rec["case"] = r["case_id"]
        rec["notes"] = [n.to_json() for n in r.get("notes", ())]
        rec["note"] = "; ".join(note_text(n, "en") for n in r.get("notes", ()))
        rec["n_cases"] = None
        rec["counted"] = counted(str(r["metric"]), r["verdict"])
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


# The machine formats of `reporter compare` (text and Markdown: reporter.present.terminal_table).
RENDERERS: dict[str, Callable[[Comparison], str]] = {
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


def runs_cells(archive: Archive) -> list[list[str]]:
    """The archive's runs as text cells in the order of ``terminal_table.RUN_COLUMNS``."""
    out = []
    for r in archive.runs.itertuples(index=False):
        date = "–" if pd.isna(r.started_at) else r.started_at.strftime("%Y-%m-%d %H:%M")
        device = " ".join(str(x) for x in (r.device_type, r.device_name) if x)
        out.append([str(x) for x in (r.label, r.run_id, r.status or "–", date, f"{r.cases_ok}/{r.cases_failed}/{r.cases_total}",
                                     device or "–", r.torch or "–", r.cuda or "–")])
    return out


def render_problems(archive: Archive, console: Console) -> None:
    """List what could not be read while loading (a run, a file, some attempts), one line each."""
    if not archive.problems:
        return
    console.print(f"{len(archive.problems)} problem(s) reading the archive; each says what was left out:", highlight=False, markup=False,
                  style="yellow")
    for p in archive.problems:
        console.print(inert(f"  {p.path}: {p.reason}"), highlight=False, markup=False)

