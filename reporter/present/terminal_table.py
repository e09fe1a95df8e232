"""``reporter compare`` and ``reporter runs`` as a person reads them: text that fits the terminal, Markdown for CI.

Everything shown comes from ``ArticleData`` (reporter.article.compute), the same data the
site's article is made of: its human case labels, blocks, rows, headline and counts, so
the terminal and the article agree. Words come from the message catalogues; a verdict
is said by the ``[verdict]`` entry named after it (``Verdict.TOO_FEW`` -> ``too_few``),
else by its vocabulary value, so a verdict added to the vocabulary needs nothing here.

Text layout: the columns that carry a number or a verdict are never cut. The case label
takes what is left of the width and wraps; where too little is left for it, each row
becomes its label on a line of its own, then its figures indented below, folded onto
further lines if they still do not fit. No line is wider than the width asked for.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rich.cells import cell_len

from runformat.vocabulary import FAMILIES, OTHER_FAMILY, Verdict
from reporter.article.data import ArticleData, Block, CaseRow
from reporter.model.compare import Comparison
from reporter.present.messages import Catalogue
from reporter.present.notes import note_text
from reporter.present.render import fmt_percent, fmt_pvalue, fmt_ratio_ci, fmt_value, fmt_value_ci
from reporter.present.tables import Column, Table, render_markdown
from reporter.present.terminal import inert

GAP = "  "
INDENT = "    "
MIN_LABEL = 24  # below this many cells, a row's label goes on a line of its own
ANSI = {Verdict.BETTER: "\x1b[1;32m", Verdict.WORSE: "\x1b[1;31m"}
RESET = "\x1b[0m"


# ---- words and numbers ---------------------------------------------------------------------------


def verdict_word(t: Catalogue, verdict: Verdict | str) -> str:
    """A verdict in the catalogue's language: ``[verdict]`` at its name, else its vocabulary value."""
    v = _verdict(verdict)
    if v is None:
        return str(verdict)
    key = f"verdict.{v.name.lower()}"
    return t.plain(key) if t.has(key) else v.value


def _verdict(verdict: Verdict | str) -> Verdict | None:
    if isinstance(verdict, Verdict):
        return verdict
    try:
        return Verdict(str(verdict))
    except ValueError:
        return None


def plain(markup: Any) -> str:
    """A cell formatted for the site (Markdown with character references) as plain text."""
    return html.unescape(str(markup))


def _word(t: Catalogue, key: str, **values: Any) -> str:
    return t.plain(f"cli.{key}", **values)


# ---- the report: what is shown, in order, before any layout ---------------------------------------


@dataclass
class Group:
    """A block of the article: its heading and its rows (cells as text, verdict, note numbers)."""

    title: str
    rows: list[tuple[list[str], Verdict | None, list[str]]] = field(default_factory=list)


@dataclass
class Family:
    title: str
    groups: list[Group] = field(default_factory=list)


@dataclass
class Report:
    """A comparison as the terminal and the CLI's Markdown show it (text only; no layout)."""

    sides: list[str]
    headline: list[str]
    columns: list[Column]
    families: list[Family]
    footnotes: list[str]
    common_notes: list[str]
    trailer: list[str | tuple[str, list[str]]]  # a line, or a heading and its list
    details: bool
    verdict: list[str | tuple[str, list[str]]] = field(default_factory=list)  # the article's verdict box


def article_rows(a: ArticleData) -> list[CaseRow]:
    """Every row the article compared, in article order."""
    return [r for s in a.sections for b in s.blocks for r in b.rows]


def build_report(a: ArticleData, c: Comparison, t: Catalogue, *, details: bool = False) -> Report:
    """Arrange ``a`` (and the method facts of ``c``, the comparison it was computed from) for reading."""
    cols = [Column(t.plain("col.case")), Column(t.plain("col.baseline"), right=True),
            Column(t.plain("col.candidate"), right=True), Column(t.plain("col.ratio_ci"), right=True),
            Column(t.plain("col.verdict"), "verdict")]
    if details:
        cols[1:3] = [Column(t.plain("col.baseline_ci"), right=True), Column(t.plain("col.candidate_ci"), right=True)]
        cols += [Column(t.plain("col.p_adjusted"), right=True), Column(t.plain("col.processes"), right=True),
                 Column(t.plain("col.mde"), right=True)]
    blocks = [b for s in a.sections for b in s.blocks]
    shown = [r for b in blocks for r in _rows_of(b, details)]
    # A note every row carries is said once, above the footnotes, and marks no row.
    texts = {id(r): list(dict.fromkeys(note_text(n, t.lang) for n in r.notes)) for r in shown}
    common = [x for x in (texts[id(shown[0])] if shown else []) if all(x in texts[id(r)] for r in shown)]
    footnotes: list[str] = []
    by_family: dict[str, list[Block]] = {}
    for b in blocks:
        if _rows_of(b, details):
            by_family.setdefault(b.rows[0].family, []).append(b)
    order = [f for f in (*FAMILIES, OTHER_FAMILY) if f in by_family] + [f for f in by_family if f not in FAMILIES
                                                                       and f != OTHER_FAMILY]
    geomeans = {f.family: f.geomean for f in a.headline.families}
    families = []
    for fam in order:
        name = t.plain(f"family.{fam}") if t.has(f"family.{fam}") else fam
        g = geomeans.get(fam)
        if g is not None:
            name = _word(t, "family_geomean", family=name, ratio=plain(fmt_ratio_ci(g)))
        family = Family(name)
        for b in by_family[fam]:
            group = Group(b.title)
            for r in _rows_of(b, details):
                marks = []
                for x in texts[id(r)]:
                    if x in common:
                        continue
                    if x not in footnotes:
                        footnotes.append(x)
                    marks.append(str(footnotes.index(x) + 1))
                label = r.label + (f" [{','.join(marks)}]" if marks and not details else "")
                if details:
                    cells = [label, plain(fmt_value_ci((r.baseline, r.unit))), plain(fmt_value_ci((r.candidate, r.unit)))]
                else:
                    cells = [label, plain(fmt_value(r.baseline.value, r.unit)), plain(fmt_value(r.candidate.value, r.unit))]
                cells += [plain(fmt_ratio_ci(r.ratio)), verdict_word(t, r.verdict)]
                if details:
                    cells += [plain(fmt_pvalue(r.p_adjusted)), f"{r.n_units[0]} / {r.n_units[1]}",
                              plain(fmt_percent(r.mde)) if r.mde is not None else "—"]
                group.rows.append((cells, r.verdict, [x for x in texts[id(r)] if x not in common] if details else []))
            family.groups.append(group)
        families.append(family)
    sides = [_word(t, "side", role=t.plain(f"side.{s.role}"), selector=s.selector, device=s.device or "?")
             for s in (a.baseline, a.candidate)]
    return Report(sides, headline_lines(a, t), cols, families, footnotes, common, trailer_lines(a, c, t), details,
                  verdict_lines(a, t))


def _plain_markup(text: Any) -> str:
    """A message rendered for a page (Markdown with escapes) as plain text."""
    from markupsafe import Markup

    return html.unescape(Markup(str(text)).striptags()).replace("**", "")


def verdict_lines(a: ArticleData, t: Catalogue) -> list[str | tuple[str, list[str]]]:
    """The article's verdict box as plain text: its sentence, every regression, the caveats, the evidence."""
    from reporter.present.render import Messages
    from reporter.present.views import ArticleView

    box = ArticleView(a, Messages(t.lang, a.words)).verdict()
    title = t.plain("verdict_box.title") + t.plain("headline.label_sep")
    out: list[str | tuple[str, list[str]]] = [title + _plain_markup(box["sentence"])]
    if box["regressions"]:
        out.append((t.plain("verdict_box.regressions"), [_plain_markup(r) for r in box["regressions"]]))
    if box["caveats"]:
        out.append((t.plain("verdict_box.caveats"), [_plain_markup(c) for c in box["caveats"]]))
    out.append(_plain_markup(box["evidence"]))
    return out


def _rows_of(b: Block, details: bool) -> tuple[CaseRow, ...]:
    return b.rows if details else b.main_rows


def headline_lines(a: ArticleData, t: Catalogue) -> list[str]:
    """The article's "In short", one line per family, then the counts and the geomean, as plain text."""
    from reporter.present.views import change_ci_phrase, change_phrase

    h = a.headline
    out = []
    for f in sorted(h.families, key=lambda f: -f.n_significant):
        name = t.plain(f"family.{f.family}") if t.has(f"family.{f.family}") else f.family
        if f.changes:
            parts = [f"{r.full_label}: " + t.plain("headline.change", change=change_phrase(
                t, r.ratio.value, r.unit, r.better, h.cross_device), ci=change_ci_phrase(r.ratio, r.unit, h.cross_device))
                for r in f.changes]
            text = t.plain("headline.sep").join(parts)
            if f.n_significant > len(f.changes):
                text += t.plain("headline.more", n=f.n_significant - len(f.changes))
            text += t.plain("headline.end")
        else:
            band = plain(fmt_percent(h.equivalence))
            if f.n_inconclusive == f.n_total:
                text = t.plain("headline.all_inconclusive", n=f.n_total)
            elif f.n_equivalent == f.n_total:
                text = t.plain("headline.all_equivalent", n=f.n_total, band=band)
            else:
                text = t.plain("headline.none", n=f.n_total)
                if f.n_equivalent:
                    text += " " + t.plain("headline.equivalent", n=f.n_equivalent, total=f.n_total, band=band)
            if f.mde is not None and f.n_equivalent < f.n_total:
                text += " " + t.plain("headline.mde", mde=plain(fmt_percent(f.mde)))
        out.append(f"{name}: {text}")
    out.append(counts_line(h.counts, h.total, t))
    if h.geomean is not None:
        out.append(t.plain("headline.geomean", ratio=plain(fmt_ratio_ci(h.geomean)), n=h.n_geomean))
    if h.shared_shift is not None:
        text = t.plain("headline.shared_shift", ratio=plain(fmt_ratio_ci(h.shared_shift)),
                       share=plain(fmt_percent(h.shared_share)))
        if h.aa is not None:
            text += " " + t.plain("headline.aa_share", share=plain(fmt_percent(h.aa.share_at_least(h.shared_shift.value))),
                                  pairs=h.aa.pairs)
        out.append(text)
    if h.aa is not None:
        out.append(t.plain("headline.aa", pairs=h.aa.pairs, rate=plain(fmt_percent(h.aa.false_call_rate)),
                           tested=h.aa.rows_tested, median=plain(fmt_percent(h.aa.median_shift)),
                           largest=plain(fmt_percent(h.aa.largest_shift))))
    if h.cross_device:
        out.append(t.plain("headline.cross_device"))
    return [x.replace("**", "") for x in out]


def counts_line(counts: dict[str, int], total: int, t: Catalogue) -> str:
    """``Of 28 case metrics: 1 better, 25 …`` over every verdict of the vocabulary that occurs."""
    parts = [f"{n} {verdict_word(t, v)}" for v, n in counts.items() if n]
    return _word(t, "counts", total=total, counts=", ".join(parts) or "0")


def trailer_lines(a: ArticleData, c: Comparison, t: Catalogue) -> list[str | tuple[str, list[str]]]:
    """Which cases were called better or worse, by name; the method; what only one side measured."""
    rows = article_rows(a)
    out: list[str | tuple[str, list[str]]] = []
    for v in (Verdict.BETTER, Verdict.WORSE):
        called = [r for r in rows if r.verdict is v]
        if called:
            out.append((_word(t, "called", verdict=verdict_word(t, v), n=len(called)),
                        [f"{r.full_label}: {plain(fmt_ratio_ci(r.ratio))}" for r in called]))
    tested = int(c.rows["p_value"].notna().sum())
    out.append(_word(t, "method", analysis=c.analysis, correction=t.plain(f"correction.{c.correction}"),
                     tested=tested, noise=f"{c.noise:.0%}",
                     mde=plain(fmt_percent(c.mde)) if math.isfinite(c.mde) else "—"))
    out.append(_word(t, "ratio_reads"))
    for side in ("baseline", "candidate"):
        only = [label for label, s in a.unmatched if s == side]
        if only:
            out.append(_word(t, "only_one_side", side=t.plain(f"side.{side}"), n=len(only), cases="; ".join(only)))
    return out


# ---- text layout ---------------------------------------------------------------------------------


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken at spaces (a word longer than a line is split)."""
    width = max(1, width)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        while cell_len(word) > width:  # split by cells, for ids and CJK text without spaces
            if line:
                lines.append(line)
                line = ""
            head = ""
            for ch in word:
                if cell_len(head + ch) > width:
                    break
                head += ch
            lines.append(head)
            word = word[len(head):]
        candidate = f"{line} {word}" if line else word
        if cell_len(candidate) <= width:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line or not lines:
        lines.append(line)
    return lines


def _pad(text: str, width: int, right: bool) -> str:
    space = " " * max(0, width - cell_len(text))
    return space + text if right else text + space


def fold(widths: Sequence[int], avail: int) -> list[list[int]]:
    """Column indices in lines of at most ``avail`` cells (a column wider than a line gets one alone)."""
    lines: list[list[int]] = []
    used = 0
    for i, w in enumerate(widths):
        if lines and used + len(GAP) + w <= avail:
            lines[-1].append(i)
            used += len(GAP) + w
        else:
            lines.append([i])
            used = w
    return lines


def hang(prefix: str, text: str, width: int) -> list[str]:
    """``text`` wrapped after ``prefix``, its further lines indented under the text."""
    lines = wrap(text, width - cell_len(prefix))
    return [(prefix if k == 0 else " " * cell_len(prefix)) + line for k, line in enumerate(lines)]


def render_text(report: Report, width: int, *, color: bool = False) -> str:
    """The report laid out in ``width`` cells (see the module's docstring)."""
    out: list[str] = []
    for line in report.sides:
        out.extend(wrap(inert(line), width))
    out.append("")
    for line in report.verdict:
        out.extend(hang("", inert(line), width) if isinstance(line, str) else _listed(line, width))
    if report.verdict:
        out.append("")
    for line in report.headline:
        out.extend(hang("• ", inert(line), width))
    for family in report.families:
        out.append("")
        out.extend(wrap(inert(family.title), width))
        out.extend(_family_lines(report.columns, family, width, color))
    if report.common_notes or report.footnotes:
        out.append("")
    for n in report.common_notes:
        out.extend(wrap(inert(n), width))
    for i, n in enumerate(report.footnotes, 1):
        out.extend(hang(f"[{i}] ", inert(n), width))
    out.append("")
    for line in report.trailer:
        out.extend(hang("", inert(line), width) if isinstance(line, str) else _listed(line, width))
    return "\n".join(x.rstrip() for x in out) + "\n"


def _listed(item: tuple[str, list[str]], width: int) -> list[str]:
    head, entries = item
    return wrap(inert(head), width) + [x for e in entries for x in hang("  - ", inert(e), width)]


def _family_lines(cols: Sequence[Column], family: Family, width: int, color: bool) -> list[str]:
    """One family's table: its own column widths, side by side where the label keeps ``MIN_LABEL`` cells."""
    rows = [(cells, v, notes) for g in family.groups for cells, v, notes in g.rows]
    fixed = [max([cell_len(c.title)] + [cell_len(inert(cells[i])) for cells, _, _ in rows])
             for i, c in enumerate(cols) if i > 0]
    longest = max([cell_len(cols[0].title)] + [cell_len(inert(cells[0])) + 2 for cells, _, _ in rows])
    label_width = min(width - sum(fixed) - len(GAP) * len(fixed), longest)
    stacked = label_width < min(MIN_LABEL + len(GAP), longest)
    groups = fold(fixed, width - len(INDENT)) if stacked else [list(range(len(fixed)))]

    def cell(i: int, text: str, v: Verdict | None) -> str:
        padded = _pad(text, fixed[i], cols[i + 1].right)
        if color and cols[i + 1].kind == "verdict" and v in ANSI:
            return ANSI[v] + padded + RESET
        return padded

    def lines_of(cells: Sequence[str], v: Verdict | None, indent: str) -> list[str]:
        cells = [inert(x) for x in cells]
        if stacked:
            label = [indent + x for x in wrap(cells[0], width - len(indent))]
            return label + [(INDENT + GAP.join(cell(i, cells[i + 1], v) for i in g)).rstrip() for g in groups]
        label = wrap(cells[0], label_width - len(indent))
        first = _pad(indent + label[0], label_width, False) + GAP + GAP.join(cell(i, cells[i + 1], v)
                                                                            for i in range(len(fixed)))
        return [first.rstrip()] + [indent + x for x in label[1:]]

    header = lines_of([c.title for c in cols], None, "")
    out = header + ["─" * min(width, max(cell_len(x) for x in header))]
    for group in family.groups:
        out.extend(wrap(inert(group.title), width))
        for cells, v, notes in group.rows:
            out.extend(lines_of(cells, v, "  "))
            for n in notes:
                out.extend(hang(INDENT + "· ", inert(n), width))
    return out


def _strip_ansi(text: str) -> str:
    for code in (*ANSI.values(), RESET):
        text = text.replace(code, "")
    return text


# ---- Markdown (GitHub-flavoured: a pull-request comment, a CI job summary) -------------------------


def md(text: Any) -> str:
    """Text that renders literally in a GitHub Markdown table cell or paragraph."""
    from reporter.present.render import md_escape

    return str(md_escape(inert(str(text))))


def render_markdown_report(report: Report, details: Report | None = None, summary: str = "Details") -> str:
    """The report in GitHub-flavoured Markdown; ``details``' tables in a collapsible ``<details>`` box.

    ``markdown="1"`` lets Python-Markdown (``md_in_html``) read the box's content; GitHub
    drops the attribute and reads it anyway.
    """
    hooks = {"text": md}
    out = [" · ".join(md(s) for s in report.sides), ""]
    for line in report.verdict:
        if isinstance(line, str):
            out += [md(line) + "  "]
        else:
            out += ["", md(line[0]), ""] + [f"- {md(e)}" for e in line[1]] + [""]
    out += [""] if report.verdict else []
    out += [f"- {md(line)}" for line in report.headline] + [""]
    out += _md_tables(report, hooks)
    if report.common_notes or report.footnotes:
        out += [md(n) + "  " for n in report.common_notes]
        out += [f"{i}. {md(n)}" for i, n in enumerate(report.footnotes, 1)] + [""]
    if details is not None:
        out += ['<details markdown="1">', f"<summary>{md(summary)}</summary>", ""]
        out += _md_tables(details, hooks)
        out += ["</details>", ""]
    for line in report.trailer:
        if isinstance(line, str):
            out += [md(line) + "  "]
        else:
            out += ["", md(line[0]), ""] + [f"- {md(e)}" for e in line[1]] + [""]
    return "\n".join(out).rstrip() + "\n"


def _md_tables(report: Report, hooks: dict[str, Any]) -> list[str]:
    out = []
    for family in report.families:
        out += [f"#### {md(family.title)}", ""]
        for group in family.groups:
            table = Table(list(report.columns))
            for cells, v, notes in group.rows:
                row = list(cells)
                if report.details and notes:
                    row[0] = f"{row[0]} ({'; '.join(notes)})"
                if v is Verdict.BETTER:
                    row[4] = f"▲ {row[4]}"
                elif v is Verdict.WORSE:
                    row[4] = f"▼ {row[4]}"
                table.rows.append(row)
            out += [f"**{md(group.title)}**", "", render_markdown(table, hooks, title=md), ""]
    return out


# ---- the runs of an archive ----------------------------------------------------------------------


# Columns a narrow terminal leaves out first: the last of this list goes first.
RUN_COLUMNS = ("label", "run id", "status", "date (UTC)", "cases ok/failed/total", "device", "torch", "CUDA")
KEEP = 3  # label, run id and status are never left out


def render_runs_text(rows: Iterable[Sequence[str]], width: int) -> tuple[str, list[str]]:
    """The runs as a table of at most ``width`` cells, and the columns left out to fit.

    No cell is ever cut (a run id is what ``LABEL@RUN`` needs): columns are left out from
    the end of ``RUN_COLUMNS`` until the rest fits, never the first ``KEEP``. Where even
    those do not fit on one line, each label becomes a heading over its runs.
    """
    rows = [[inert(x) for x in r] for r in rows]
    widths = [max([cell_len(h)] + [cell_len(r[i]) for r in rows]) for i, h in enumerate(RUN_COLUMNS)]

    def span(first: int, keep: int) -> int:
        return sum(widths[first:keep]) + len(GAP) * (keep - first - 1)

    grouped = span(0, KEEP) > width
    first, indent = (1, "  ") if grouped else (0, "")
    keep = len(RUN_COLUMNS)
    while keep > KEEP and len(indent) + span(first, keep) > width:
        keep -= 1

    def line(cells: Sequence[str]) -> str:
        return (indent + GAP.join(_pad(cells[i], widths[i], False) for i in range(first, keep))).rstrip()

    lines = [line(RUN_COLUMNS)]
    lines.append("─" * min(width, cell_len(lines[0])))
    label = None
    for r in rows:
        if grouped and r[0] != label:
            label = r[0]
            lines += wrap(label, width)
        lines.append(line(r))
    return "\n".join(lines) + "\n", list(RUN_COLUMNS[keep:])


# ---- the CI gate: --fail-on ----------------------------------------------------------------------


@dataclass(frozen=True)
class FailOn:
    """A rule of ``--fail-on``: any case called worse (in ``family``, when given) by more than ``beyond``.

    ``beyond`` is a fraction of the point estimate: ``worse:5%`` fails on a case called
    worse whose ratio says the candidate is more than 5% slower (a ratio below 1/1.05);
    the verdict itself, with its CI and correction, is the article's.
    """

    text: str
    family: str | None = None
    beyond: float = 0.0

    def matches(self, r: CaseRow) -> bool:
        if r.verdict is not Verdict.WORSE:
            return False
        if self.family is not None and r.family != self.family:
            return False
        return math.isfinite(r.ratio.value) and r.ratio.value > 0 and 1.0 / r.ratio.value - 1.0 > self.beyond

    def describe(self, t: Catalogue) -> str:
        pct = f"{self.beyond * 100:g}%"
        if self.family is None:
            return _word(t, "gate_worse_beyond", pct=pct) if self.beyond else _word(t, "gate_worse")
        family = t.plain(f"family.{self.family}") if t.has(f"family.{self.family}") else self.family
        key = "gate_family_beyond" if self.beyond else "gate_family"
        return _word(t, key, family=family, pct=pct)


FAIL_ON_FORMS = "worse, worse:PCT%, family:NAME or family:NAME:PCT%"


def parse_fail_on(text: str, families: Iterable[str] = (*FAMILIES, OTHER_FAMILY)) -> FailOn:
    """``worse``, ``worse:5%``, ``family:compile`` or ``family:compile:5%``; ValueError names what is wrong."""
    parts = text.strip().split(":")
    head, rest = parts[0].lower(), parts[1:]
    family = None
    if head == "family":
        if not rest or not rest[0]:
            raise ValueError(f"{text!r}: name the family, as in family:compile (one of: {', '.join(families)})")
        family, rest = rest[0], rest[1:]
        if family not in families:
            raise ValueError(f"{text!r}: no family {family!r}; choose one of: {', '.join(families)}")
    elif head != "worse":
        raise ValueError(f"{text!r}: expected {FAIL_ON_FORMS}")
    beyond = 0.0
    if len(rest) > 1:
        raise ValueError(f"{text!r}: expected {FAIL_ON_FORMS}")
    if rest:
        number = rest[0].strip().removesuffix("%")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{text!r}: {rest[0]!r} must be a percentage of 0 or more, as in worse:5%")
        beyond = value / 100.0
    return FailOn(text.strip(), family, beyond)


def check_fail_on(rules: Sequence[FailOn], a: ArticleData, t: Catalogue) -> tuple[bool, list[tuple[str, list[str]]]]:
    """Whether any rule fails on the article's rows; per rule, its verdict line and the cases it failed on.

    Rules that passed come first, so the last line is why the command failed.
    """
    rows = article_rows(a)
    results = []
    for rule in rules:
        hits = sorted((r for r in rows if rule.matches(r)), key=lambda r: r.ratio.value)
        if hits:
            worst = f"{hits[0].full_label} {plain(fmt_ratio_ci(hits[0].ratio))}"
            line = _word(t, "gate_failed", rule=rule.text, n=len(hits), what=rule.describe(t), worst=worst)
        else:
            line = _word(t, "gate_passed", rule=rule.text, what=rule.describe(t))
        results.append((line, [f"{r.full_label}: {plain(fmt_ratio_ci(r.ratio))}" for r in hits]))
    results.sort(key=lambda x: bool(x[1]))
    return any(hits for _, hits in results), results


def render_gate_text(results: Sequence[tuple[str, list[str]]], width: int) -> str:
    """The gate's lines for a terminal: each failed rule's cases, then its verdict line, wrapped to ``width``."""
    out: list[str] = []
    for line, hits in results:
        out += [x for h in hits for x in hang("  - ", inert(h), width)]
        out += hang("", inert(line), width)
    return "\n".join(out) + "\n"
