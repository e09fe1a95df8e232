"""Charts for the site: Altair specifications rendered to SVG with vl-convert (no network).

Each ``chart_*`` function takes plain rows (already computed by the article or page it
belongs to) and returns a Vega-Lite specification as a dict; ``render_svgs`` turns many
of them into SVG strings, in a few processes when there are many. The data is inlined in
the specification, so rendering needs neither a network nor a browser.

What a reader gets from every chart:

- labels in full: long case and stack names wrap onto several lines at their commas and
  spaces (or between Chinese characters), never cut short, never numbered;
- time and memory axes in the unit that fits the data (µs, ms or s; KiB, MiB or GiB),
  with ticks at round values (1, 2, 5 × 10ⁿ on a log axis, the measured sizes on a size
  axis) instead of the scale's every minor tick;
- the 95% CI of every point as an error bar;
- one colour per stack, fixed by the article's two labels (``stacks``: baseline first),
  so a stack has the same colour in every chart of an article; variants of a case
  (dtype, layout) differ by the shape of their points, with their own legend.

The text is measured by vl-convert with two fonts: the Liberation Sans it ships (for
Latin text, the same on every machine; the charts name it, or a font of its widths, for the
browser to draw with: ``FONT``) and one font with Chinese glyphs installed where the site is
built (``chinese_font_file``). Without the latter, Chinese labels are laid out too
narrow and overlap (scripts/setup.sh installs one).

Strings from runs (labels, case names) only ever travel as data values: Vega's SVG
renderer writes them as XML-escaped text, never as markup.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import re
import subprocess
import tempfile
import unicodedata
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from runformat.workloads import WORKLOADS

WIDTH = 560
PADDING = 5  # Vega's own padding around a chart, in pixels
# The charts' text: laid out with vl-convert's Liberation Sans (``chart_fonts``), and drawn by
# the reader's browser with it or a font of the same widths (Arial; Helvetica is close), so
# a label fits the room it was given. With "sans-serif" alone a browser may draw a wider
# font (DejaVu Sans, 12% wider, on many Linux systems) and cut the longest labels short.
FONT = "Liberation Sans, Arial, Helvetica, sans-serif"
DATASET = "rows"
WRAP_CHARS = 40  # a legend line holds about this many Latin characters (a Chinese one counts two)
CASE_WRAP_CHARS = 52  # a case label beside the ratio chart (about 270 px)
LINE_HEIGHT = 12
LINES_HEIGHT = 240  # the plot of a line chart, in pixels
LABEL_ROOM = 170  # what a line chart with direct labels gives its names, out of WIDTH
LABEL_WRAP_CHARS = 28  # a direct label's line (about 150 px at 10 px)
ROW_HEIGHT = 18
MAX_TICKS = 7
VERDICT_COLORS = {
    "better": "#1a9850",
    "worse": "#d73027",
    "equivalent": "#4d4d4d",
    "inconclusive": "#a6a6a6",
    "no ratio": "#fdae61",
}
# Baseline, candidate (Paul Tol's bright scheme): apart from the verdict colours, and told
# apart with any colour vision.
STACK_COLORS = ("#4477aa", "#aa3377")
MORE_COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000")
# Multi-line labels: the data carries lines joined by "\n"; Vega draws an array as lines.
_LINES = "split(datum.label, '\\n')"
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTE_UNITS = (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10), ("B", 1.0))
_MANTISSAS = ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
              (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9))


# ---- labels ------------------------------------------------------------------------------------


def _char_width(c: str) -> int:
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def text_width(text: str) -> int:
    """``text``'s width in Latin characters (a Chinese character counts two)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


# Where a label may break: after a comma, semicolon, middle dot or space, after Chinese
# punctuation, and between two Chinese characters; never inside a word or an id.
_BREAK = re.compile(r"(?<=, )|(?<=; )|(?<=· )|(?<= )(?=[^\s·])|(?<=[，、；：）])|(?<=[\u3400-\u9fff])(?=[\u3400-\u9fff（])")


_CJK = re.compile(r"[\u3400-\u9fff]")


def wrap_label(text: str, width: int = WRAP_CHARS) -> str:
    """``text`` on lines of at most ``width`` (in Latin characters), joined by ``\\n``.

    Lines break only where ``_BREAK`` allows; a single word longer than ``width`` keeps
    its own line whole.
    """
    text = " ".join(str(text).split())
    if text_width(text) <= width:
        return text
    lines: list[str] = []
    line = ""
    for piece in (p for p in _BREAK.split(text) if p):
        if line and text_width(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def _distinct(labels: Sequence[str]) -> list[str]:
    """Labels made distinct where two are equal, invisibly (zero-width spaces), so a category axis keeps both."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        n = seen.get(label, 0)
        seen[label] = n + 1
        out.append(label + "\u200b" * n)
    return out


def _lines(label: str) -> int:
    return label.count("\n") + 1


# ---- units and ticks ---------------------------------------------------------------------------


def _finite(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def scale_unit(values: Sequence[Any], unit: str | None) -> tuple[str | None, float]:
    """The unit to show ``values`` (stored in ``unit``) in, and what a stored value is divided by.

    Seconds become ns, µs, ms or s and bytes B, KiB, MiB or GiB, whichever puts the
    largest value at 1 or more; any other unit is kept as it is.
    """
    finite = [abs(v) for v in _finite(values) if v != 0]
    table = _TIME_UNITS if unit == "s" else _BYTE_UNITS if unit in ("bytes", "B") else None
    if table is None or not finite:
        return unit, 1.0
    top = max(finite)
    for name, size in table:
        if top >= size:
            return name, size
    return table[-1]


def log_ticks(low: float, high: float, max_ticks: int = MAX_TICKS) -> list[float]:
    """Round tick values for a log axis from ``low`` to ``high`` (both > 0): at most ``max_ticks``.

    The finest of 10ⁿ, (1, 3), (1, 2, 5), ... × 10ⁿ that fits; across many decades, every
    second or third power of ten; within less than one step, linear round ticks.
    """
    if not (low > 0 and high > 0) or not (math.isfinite(low) and math.isfinite(high)):
        return []
    low, high = min(low, high), max(low, high)
    best: list[float] = []
    for mantissas in _MANTISSAS:
        ticks = [_round(m * 10.0**e) for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
                 for m in mantissas]
        ticks = [v for v in ticks if low <= v <= high]
        if len(ticks) > max_ticks:
            break
        best = ticks
    if len(best) >= 2:
        return best
    if not best:  # many decades: powers of ten, every k-th
        first, last = math.ceil(math.log10(low)), math.floor(math.log10(high))
        step = max(1, math.ceil((last - first + 1) / max_ticks))
        powers = [_round(10.0**e) for e in range(first, last + 1, step)]
        if len(powers) >= 2:
            return powers
    return linear_ticks(low, high, max_ticks)


def linear_ticks(low: float, high: float, max_ticks: int = MAX_TICKS) -> list[float]:
    """Round tick values (a step of 1, 2 or 5 × 10ⁿ) from ``low`` to ``high``: at most ``max_ticks``, at least two."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    low, high = min(low, high), max(low, high)
    if high == low:
        return [_round(low)]
    raw = (high - low) / max(1, max_ticks - 1)
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * 10.0**exp
        if step >= raw:
            break
    first = math.ceil(low / step - 1e-9)
    ticks = [_round(i * step) for i in range(first, math.floor(high / step + 1e-9) + 1)]
    return ticks


def _round(value: float) -> float:
    """``value`` to 12 significant digits (1.2000000000000002 is 1.2), so ticks print as round numbers."""
    return float(f"{value:.12g}")


def _padded_log(low: float, high: float, pad: float = 1.08) -> list[float]:
    if low == high:
        return [low / 1.5, high * 1.5]
    return [low / pad, high * pad]


# ---- charts ------------------------------------------------------------------------------------


def _clean(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows with non-finite numbers as None (JSON has no NaN)."""
    out = []
    for row in rows:
        clean = {}
        for k, v in row.items():
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def chart_ratios(rows: Sequence[Mapping[str, Any]], *, x_title: str, verdict_names: Mapping[str, str]) -> dict[str, Any]:
    """Ratio (> 1: candidate better) with its 95% CI as an error bar, one line per case.

    ``rows``: dicts with ``case`` (the y label), ``ratio``, ``ci_low``, ``ci_high`` and
    ``verdict`` (one of the keys of VERDICT_COLORS), in the order to show them.
    ``verdict_names`` names the verdicts in the page's language.
    """
    cases = _distinct([wrap_label(str(r["case"]), CASE_WRAP_CHARS) for r in rows])
    data = _clean([{**r, "case": case, "verdict_name": verdict_names.get(str(r["verdict"]), str(r["verdict"]))}
                   for r, case in zip(rows, cases)])
    # The legend names the verdicts the chart shows, in a fixed order, each in its own colour.
    present = [k for k in VERDICT_COLORS if any(str(r["verdict"]) == k for r in rows)]
    step = max(ROW_HEIGHT, LINE_HEIGHT * max((_lines(c) for c in cases), default=1) + 6)
    spec = json.loads(_ratio_skeleton(x_title, step))
    _patch(spec, ("verdict_name",), scale={"domain": [verdict_names.get(k, k) for k in present],
                                           "range": [VERDICT_COLORS[k] for k in present]})
    values = _finite([r.get(k) for r in rows for k in ("ratio", "ci_low", "ci_high")])
    values = [v for v in values if v > 0] + [1.0]
    domain = _padded_log(min(values), max(values))
    ticks = log_ticks(*domain)
    _patch(spec, ("ci_low", "ratio", "one"), scale={"domain": domain}, axis={"values": ticks} if ticks else None)
    return _with_data(spec, data)


@lru_cache(maxsize=64)
def _ratio_skeleton(x_title: str, step: int) -> str:
    import altair as alt

    base = alt.Chart(alt.NamedData(name=DATASET))
    # sort=None keeps the cases in the order of the data; the height steps with the cases.
    y = alt.Y("case:N", sort=None, title=None, axis=alt.Axis(labelLimit=0, labelExpr=_LINES, labelLineHeight=LINE_HEIGHT))
    # Log scale: a ratio of 2 and one of 1/2 lie equally far from 1, and wide CIs stay readable.
    x_scale = alt.Scale(type="log", zero=False, nice=False)
    x_axis = alt.Axis(labelExpr="format(datum.value, '~g') + '×'", grid=True, labelOverlap=True)
    colors = alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values()))  # set per chart
    legend = alt.Legend(title=None, orient="bottom", labelLimit=0, symbolLimit=1000)
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", scale=x_scale, title=x_title, axis=x_axis), x2="ci_high:Q", y=y,
        color=alt.Color("verdict_name:N", scale=colors, legend=legend),
    )
    points = base.mark_point(filled=True, size=50).encode(
        x=alt.X("ratio:Q", scale=x_scale, axis=x_axis), y=y, color=alt.Color("verdict_name:N", scale=colors, legend=legend)
    )
    one = alt.Chart(alt.Data(values=[{"one": 1.0}])).mark_rule(strokeDash=[4, 3], color="#444").encode(
        x=alt.X("one:Q", scale=x_scale, axis=x_axis))
    chart = alt.layer(one, bars, points).properties(width=WIDTH - 280, height=alt.Step(step))
    return json.dumps(chart.to_dict(validate=False))


def chart_lines(
    rows: Sequence[Mapping[str, Any]],
    *,
    x_title: str,
    y_title: str,
    x_type: str = "Q",
    log_x: bool = True,
    log_y: bool = True,
    y_unit: str | None = None,
    stacks: Sequence[str] | None = None,
    direct_labels: bool = False,
) -> dict[str, Any]:
    """Medians with 95% CI error bars, one line per series: time by size, scaling, trends.

    ``rows``: dicts with ``x`` (a number; or, for ``x_type="N"``, a label: labels then
    appear in the order of their first row), ``y``, ``y_low``, ``y_high`` and ``series``
    (the line's name). With ``stacks`` (the article's labels, baseline first) the colour
    is the stack: a row names its stack in ``stack`` and its variant (what else tells its
    line apart: dtype, layout) in ``variant``; without those keys, a ``series`` of the form
    ``"<stack> · <variant>"`` is read that way. Without ``stacks`` every series has its
    own colour.

    ``y_unit`` is the unit ``y`` is stored in: seconds (``"s"``) and bytes are shown in the
    unit that fits the data, named after ``y_title`` in brackets; any other unit is named
    as it is. With ``y_unit=None``, ``y_title`` is shown as given.

    ``direct_labels`` (without ``stacks``, at most ``len(MORE_COLORS)`` series): each line
    is named at its right end, in its colour, instead of in a legend; names that would
    overlap are moved apart (see ``_spread``).
    """
    unit, size = scale_unit([r.get("y") for r in rows], y_unit)
    xs = [r["x"] for r in rows]
    by_stack = bool(stacks)
    data = _line_rows(rows, size, stacks or (), by_stack)
    variants = len({d.get("variant") for d in data}) > 1 if by_stack else False
    direct = direct_labels and not by_stack
    if direct:
        series = {d["series"] for d in data}
        if len(series) > len(MORE_COLORS):
            raise ValueError(f"{len(series)} series for a chart of at most {len(MORE_COLORS)} directly labelled lines")
        for d in data:
            d["series"] = wrap_label(str(d["series"]), LABEL_WRAP_CHARS)
    spec = json.loads(_lines_skeleton(x_title, _unit_title(y_title, unit), x_type, log_x, log_y, by_stack, variants, direct))
    if by_stack:
        stack_names = [wrap_label(s) for s in (stacks or ())]
        names = stack_names + sorted({d["stack"] for d in data} - set(stack_names))
        palette = list(STACK_COLORS) + [c for c in MORE_COLORS if c not in STACK_COLORS]
        _patch(spec, ("stack",), scale={"domain": names, "range": palette[:len(names)]})
    y_domain = _patch_y_scale(spec, data, log_y, direct)
    if direct:
        _end_labels(data, xs, x_type, y_domain, log_y)
    if x_type == "Q":
        _patch_x_scale(spec, xs, log_x)
    return _with_data(spec, data)


def _unit_title(title: str, unit: str | None) -> str:
    """``title`` with ``unit`` after it in brackets (Chinese ones in a Chinese title)."""
    if not unit:
        return title
    if _CJK.search(title):
        return f"{title}（{unit}）"
    return f"{title} ({unit})"


def _line_rows(rows: Sequence[Mapping[str, Any]], size: float, stacks: Sequence[str], by_stack: bool) -> list[dict[str, Any]]:
    """The data of a line chart: ``y`` and its CI divided by ``size`` (the unit shown), names wrapped, and
    with ``by_stack`` each row's stack and variant (``_stack_of``)."""
    data = []
    for r in rows:
        d = dict(r)
        for k in ("y", "y_low", "y_high"):
            v = r.get(k)
            d[k] = v / size if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        if by_stack:
            stack, variant = _stack_of(r, stacks)
            d["stack"], d["variant"] = wrap_label(stack), wrap_label(variant) if variant else ""
        d["series"] = wrap_label(str(r["series"]))
        data.append(d)
    return data


def _patch_y_scale(spec: dict[str, Any], data: Sequence[Mapping[str, Any]], log_y: bool, direct: bool) -> list[float] | None:
    """Give a line chart's y scale its domain and ticks; return the domain (None: left to Vega-Lite)."""
    ys = _finite([d.get(k) for d in data for k in ("y", "y_low", "y_high")])
    if log_y:
        ys = [v for v in ys if v > 0]
        if not ys:
            return None
        y_domain = _padded_log(min(ys), max(ys))
        _patch(spec, ("y", "y_low"), scale={"domain": y_domain}, axis={"values": log_ticks(*y_domain)})
        return y_domain
    if not (direct and ys):
        return None
    # The names are placed in pixels: the scale's domain must be known.
    pad = (max(ys) - min(ys)) * 0.05 or abs(max(ys)) * 0.05 or 0.5
    y_domain = [min(ys) - pad, max(ys) + pad]
    _patch(spec, ("y", "y_low"), scale={"domain": y_domain, "nice": False}, axis={"values": linear_ticks(*y_domain)})
    return y_domain


def _patch_x_scale(spec: dict[str, Any], xs: Sequence[Any], log_x: bool) -> None:
    """Give a line chart's quantitative x scale its domain and ticks."""
    xv = sorted(set(_finite(xs)))
    if log_x:
        xv = [v for v in xv if v > 0]
    if not xv:
        return
    # A handful of measured sizes or counts: the ticks are those values.
    ticks = xv if len(xv) <= 10 else (log_ticks(xv[0], xv[-1]) if log_x else linear_ticks(xv[0], xv[-1]))
    if log_x:
        domain = _padded_log(xv[0], xv[-1], 1.15)
    else:
        pad = (xv[-1] - xv[0]) * 0.05 or 0.5
        domain = [xv[0] - pad, xv[-1] + pad]
    _patch(spec, ("x",), scale={"domain": domain}, axis={"values": ticks})


def _end_labels(data: list[dict[str, Any]], xs: Sequence[Any], x_type: str, y_domain: Sequence[float] | None,
                log_y: bool) -> None:
    """Mark the last point of each series (``end``) with where its name goes (``end_y``, in
    pixels from the plot's top): beside the height of that point, apart from the other names."""
    rank = {x: i for i, x in enumerate(dict.fromkeys(xs))} if x_type == "N" else None
    ends: dict[str, dict[str, Any]] = {}
    for d in data:
        y = d.get("y")
        if not isinstance(y, (int, float)) or not math.isfinite(y) or (log_y and y <= 0):
            continue
        key = rank[d["x"]] if rank is not None else d["x"]
        best = ends.get(d["series"])
        if best is None or key >= (rank[best["x"]] if rank is not None else best["x"]):
            ends[d["series"]] = d
    if not ends or y_domain is None:
        return
    lo, hi = y_domain
    scale = (lambda v: math.log(v)) if log_y else (lambda v: v)
    span = (scale(hi) - scale(lo)) or 1.0
    wanted = {name: LINES_HEIGHT * (1 - (scale(d["y"]) - scale(lo)) / span) for name, d in ends.items()}
    placed = _spread(wanted, {name: _lines(name) * LINE_HEIGHT for name in ends}, LINES_HEIGHT)
    for name, d in ends.items():  # the top of the name's first line
        d["end"], d["end_y"] = True, placed[name] - _lines(name) * LINE_HEIGHT / 2 + 1


def _spread(wanted: Mapping[str, float], heights: Mapping[str, float], room: float) -> dict[str, float]:
    """Centres (pixels from the plot's top) near ``wanted`` at which no two names overlap.

    Each name is pushed below the one above it; then, where the last runs past the bottom
    of the ``room``, the column is pushed back up from the bottom, each name staying above
    the one below it. Names that cannot all fit the room keep their order and run past
    its top (the chart grows to hold them).
    """
    order = sorted(wanted, key=lambda n: (wanted[n], n))
    gap = {(a, b): (heights[a] + heights[b]) / 2 for a, b in zip(order, order[1:])}
    placed = {order[0]: wanted[order[0]]}
    for above, name in zip(order, order[1:]):
        placed[name] = max(wanted[name], placed[above] + gap[above, name])
    placed[order[-1]] = min(placed[order[-1]], room - heights[order[-1]] / 2 + LINE_HEIGHT / 2)
    for above, below in reversed(list(zip(order, order[1:]))):
        placed[above] = min(placed[above], placed[below] - gap[above, below])
    return placed


def _stack_of(row: Mapping[str, Any], stacks: Sequence[str]) -> tuple[str, str]:
    if "stack" in row:
        return str(row["stack"]), str(row.get("variant") or "")
    series = str(row["series"])
    for s in sorted(stacks, key=len, reverse=True):  # the longest label that starts the series
        if series == s:
            return s, ""
        if series.startswith(s + " · "):
            return s, series[len(s) + 3:]
    return series, ""


@lru_cache(maxsize=64)
def _lines_skeleton(x_title: str, y_title: str, x_type: str, log_x: bool, log_y: bool, by_stack: bool,
                    variants: bool, direct: bool = False) -> str:
    import altair as alt

    if x_type == "Q":
        x = alt.X("x:Q", title=x_title, scale=alt.Scale(type="log" if log_x else "linear", zero=False, nice=False),
                  axis=alt.Axis(format="~g", labelOverlap=True))
    else:  # labels (stacks in version order): slanted, so long ones stay whole and apart
        x = alt.X("x:N", title=x_title, sort=None, axis=alt.Axis(labelAngle=-40, labelAlign="right", labelLimit=0))
    y_scale = alt.Scale(type="log" if log_y else "linear", zero=False, nice=not log_y)
    y_axis = alt.Axis(format="~g" if log_y else "~s", labelOverlap=True)
    base = alt.Chart(alt.NamedData(name=DATASET))
    legend = {"labelLimit": 0, "symbolLimit": 1000, "labelExpr": _LINES}
    extra: dict[str, Any] = {}
    if by_stack:
        color = alt.Color("stack:N", title=None, legend=alt.Legend(orient="top", direction="horizontal", **legend))
        if variants:  # told apart by the shape of their points (a dash too would take a second legend)
            extra["shape"] = alt.Shape("variant:N", title=None, sort="ascending",
                                       legend=alt.Legend(orient="bottom", columns=1, symbolFillColor="#555", **legend))
        detail = alt.Detail("series:N")
    elif direct:  # named at the line's end instead (see _end_labels)
        color = alt.Color("series:N", title=None, sort="ascending", scale=alt.Scale(range=list(MORE_COLORS)), legend=None)
        detail = alt.Detail("series:N")
    else:
        color = alt.Color("series:N", title=None, sort="ascending", scale=alt.Scale(range=list(MORE_COLORS)),
                          legend=alt.Legend(orient="bottom", columns=1, **legend))
        detail = alt.Detail("series:N")
    y = alt.Y("y:Q", title=y_title, scale=y_scale, axis=y_axis)
    line = base.mark_line(point=alt.OverlayMarkDef(filled=True, size=40)).encode(
        x=x, y=y, color=color, detail=detail, **extra)
    bars = base.mark_rule(strokeWidth=1.5).encode(x=x, y=alt.Y("y_low:Q", title=y_title, scale=y_scale, axis=y_axis),
                                                  y2="y_high:Q", color=color, detail=detail)
    layers = [bars, line]
    width = WIDTH - 120
    if direct:
        width = WIDTH - 50 - LABEL_ROOM  # the y axis takes about 50 px, the names LABEL_ROOM
        # In one column right of the plot (pixels, not data), each name's first line at the top of its room.
        names = base.transform_filter("datum.end").mark_text(
            align="left", baseline="top", lineBreak="\n", lineHeight=LINE_HEIGHT, fontSize=10).encode(
            x=alt.value(width + 10), y=alt.Y("end_y:Q", scale=None, axis=None), text="series:N", color=color)
        layers.append(names)
    chart = alt.layer(*layers).properties(width=width, height=LINES_HEIGHT)
    spec = chart.to_dict(validate=False)
    # Several legends below the chart are stacked, not set side by side.
    spec.setdefault("config", {}).setdefault("legend", {})["layout"] = {
        "bottom": {"anchor": "start", "direction": "vertical", "margin": 8},
        "top": {"anchor": "start", "direction": "vertical", "margin": 8},
    }
    return json.dumps(spec)


def _patch(spec: dict[str, Any], fields: Sequence[str], *, scale: Mapping[str, Any] | None = None,
           axis: Mapping[str, Any] | None = None) -> None:
    """Set scale and axis properties of every encoding (in every layer) of one of ``fields``."""
    for layer in [spec, *spec.get("layer", [])]:
        for enc in layer.get("encoding", {}).values():
            if isinstance(enc, dict) and enc.get("field") in fields:
                if scale:
                    enc.setdefault("scale", {}).update(scale)
                if axis and "axis" in enc and enc["axis"] is not None:
                    enc["axis"].update(axis)
                elif axis and "axis" not in enc:
                    enc["axis"] = dict(axis)


def _with_data(spec: dict[str, Any], data: list[dict[str, Any]]) -> dict[str, Any]:
    """A chart's specification with this chart's rows as its dataset.

    Building the Altair chart once per kind of chart (cached) and filling in the data
    costs a fraction of building a new chart each time, which matters at hundreds of
    charts. ARIA attributes are left out of the SVG (the figure carries a label and the
    same data follows as a table), which halves the rendering time.
    """
    spec["datasets"] = {DATASET: _clean(data)}
    config = spec.setdefault("config", {})
    config["aria"] = False
    config["font"] = FONT
    slack = _slack(data)
    if slack:
        spec["padding"] = {"left": PADDING + slack, "right": PADDING + slack, "top": PADDING, "bottom": PADDING}
    return spec


def _slack(data: Sequence[Mapping[str, Any]]) -> int:
    """Pixels a browser may draw a label of ``data`` wider than vl-convert measured it: none
    for Latin text (the same font, ``FONT``), about 2 px at each change between Chinese and
    other characters in a line (a browser shapes each side in a font run of its own; a
    label of 6 such changes measured 221 px and was drawn 228 px wide)."""
    most = 0
    for row in data:
        for value in row.values():
            if isinstance(value, str) and _CJK.search(value):
                for line in value.split("\n"):
                    han = [bool(_CJK.match(c)) for c in line]
                    most = max(most, sum(a != b for a, b in zip(han, han[1:])))
    return 2 * most


@lru_cache(maxsize=1)
def measures_chinese() -> bool:
    """Whether vl-convert finds a font with Chinese glyphs here (else Chinese labels are laid out too narrow).

    Ten Chinese characters at 10 px are 100 px wide in any such font; without one,
    vl-convert measured them as 36 px.
    """
    spec = {"data": {"values": [{"a": "汉字汉字汉字汉字汉字"}]}, "mark": "point",
            "encoding": {"color": {"field": "a", "type": "nominal", "legend": {"title": None, "labelLimit": 0}}},
            "config": {"aria": False}}
    svg = render_svg(spec)
    # The legend entry's background spans its symbol (16 px) and the label as measured.
    m = re.search(r'role-legend-entry.*?<path class="background"[^>]*d="M0,0h0v0h0Z".*?d="M0,0h([\d.]+)v', svg, re.S)
    return bool(m) and float(m.group(1)) >= 16 + 90


def render_svg(spec: Mapping[str, Any]) -> str:
    """One Vega-Lite specification as a standalone SVG document."""
    import vl_convert as vlc

    chart_fonts()
    return vlc.vegalite_to_svg(dict(spec))


@lru_cache(maxsize=1)
def chinese_font_file() -> str | None:
    """The font file fontconfig picks for Chinese sans-serif text, else any with Chinese glyphs; None without one."""
    face = chinese_font_face()
    return face[0] if face else None


@lru_cache(maxsize=1)
def chinese_font_face() -> tuple[str, int] | None:
    """``chinese_font_file()`` with the index of the face fontconfig picks in it (0 but in a collection)."""
    def ask(*args: str) -> str:
        try:
            return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    files = sorted({line.strip() for line in ask("fc-list", "-f", "%{file}\n", ":lang=zh").splitlines()} - {""})
    best, _, index = ask("fc-match", "-f", "%{file}\n%{index}", "sans-serif:lang=zh-cn").strip().partition("\n")
    if best in files:
        return best, int(index) if index.strip().isdigit() else 0
    return (files[0], 0) if files else None


# A text mark: rendering it starts vl-convert's font database.
_FONT_PROBE = {"width": 10, "height": 10, "data": [{"name": "t", "values": [{"s": "0"}]}],
               "marks": [{"type": "text", "from": {"data": "t"}, "encode": {"enter": {"text": {"field": "s"}}}}]}


@lru_cache(maxsize=1)
def chart_fonts() -> str:
    """Start vl-convert's fonts in this process, once: its Liberation Sans and ``chinese_font_file()``. Returns their names.

    vl-convert measures every label character by character, and for each character it opens
    and maps the file of every font it considers. With all the fonts of a system (about 40
    on a Debian machine with DejaVu, Liberation and WenQuanYi) a label of 30 Latin characters
    took 2.5 ms and a chart 50 ms; with only the Liberation Sans that vl-convert holds in
    memory and one font file with Chinese glyphs, 0.26 ms and 27 ms, and Latin text is
    measured with the same font on every machine. vl-convert reads its fonts through
    fontconfig: for this process only, and only while its font database starts,
    ``FONTCONFIG_FILE`` names a file listing a folder with just that Chinese font.
    """
    import vl_convert as vlc

    face = chinese_font_face()
    font = face[0] if face else None
    conf = _fontconfig_file(font, face[1] if face else 0)
    before = os.environ.get("FONTCONFIG_FILE")
    if conf is not None:
        os.environ["FONTCONFIG_FILE"] = str(conf)
    try:
        vlc.vega_to_svg(_FONT_PROBE)
    finally:
        if before is None:
            os.environ.pop("FONTCONFIG_FILE", None)
        else:
            os.environ["FONTCONFIG_FILE"] = before
    if conf is None:
        return "system"
    return "Liberation Sans (vl-convert's)" + (f" + {Path(font).name}" if font else "")


def _fontconfig_file(font: str | None, index: int = 0) -> Path | None:
    """A fontconfig file whose folders hold ``font`` (no folder without one); None if none can be written.

    In the reporter's cache folder, else a temporary one: fontdb opens a font file again at
    each use, so the folder must outlive the process's charts. Of a font collection
    (``.ttc``, the usual packaging of Chinese fonts) the folder holds the face ``index``
    alone, as a font file of its own: fontdb reads a collection's header and maps the whole
    file again for every character it measures (the Chinese charts of a site spent 3.1 of
    their 9.4 CPU-s in the kernel; 1.5 with the face apart, the same SVGs byte for byte).
    A single font is linked.

    Before it, in a folder of its own that fontconfig lists first, the same face cut down to
    the characters the charts are written in (``_subset_face``): vl-convert looks for a
    character missing from Liberation Sans in the fonts in that order and, for each one,
    maps the file it finds it in, which costs in proportion to the file's size (4.6 MB for
    WenQuanYi Micro Hei, 0.3 MB cut down). A character the cut-down face lacks (a Chinese
    label of a run) is found in the whole face, with the same widths.
    """
    from reporter.data.cache import cache_base

    try:
        stat = os.stat(font) if font else None
    except OSError:
        stat = None
    chars = _chart_characters() if font else ""
    ident = f"{font}\0{index}\0{stat.st_size}\0{stat.st_mtime_ns}\0{SUBSET_FORMAT}\0{chars}" if stat else str(font)
    name = hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    for base in (cache_base() / "fonts", Path(tempfile.gettempdir()) / "imagebench-fonts"):
        folder = base / name
        conf = folder / "fonts.conf"
        try:
            held = [folder / "font" / Path(font).name, folder / "font" / f"{Path(font).stem}-{index}.ttf"] if font else []
            if conf.is_file() and (not held or any(h.exists() for h in held)) and all(
                    Path(d).is_dir() for d in re.findall(r"<dir>(.*?)</dir>", conf.read_text(encoding="utf-8"))):
                return conf
            (folder / "font").mkdir(parents=True, exist_ok=True)
            dirs = []
            if font:
                faces = _collection_faces(Path(font))
                if faces is None or not 0 <= index < len(faces):
                    face = folder / "font" / Path(font).name
                    tmp = folder / "font" / f".{Path(font).name}.{os.getpid()}"
                    tmp.unlink(missing_ok=True)
                    os.symlink(font, tmp)
                    os.replace(tmp, face)
                else:
                    face = folder / "font" / f"{Path(font).stem}-{index}.ttf"
                    tmp = folder / "font" / f".{face.name}.{os.getpid()}"
                    tmp.write_bytes(faces[index])
                    os.replace(tmp, face)
                subset = _subset_face(face, chars)
                if subset is not None:
                    (folder / "subset").mkdir(exist_ok=True)
                    target = folder / "subset" / f"{Path(font).stem}-{index}-subset.ttf"
                    tmp = folder / "subset" / f".{target.name}.{os.getpid()}"
                    tmp.write_bytes(subset)
                    os.replace(tmp, target)
                    dirs.append(folder / "subset")
                dirs.append(folder / "font")
            listed = "".join(f"  <dir>{_xml_text(str(d))}</dir>\n" for d in dirs)
            text = f'<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n{listed}</fontconfig>\n'
            tmp = folder / f".fonts.conf.{os.getpid()}"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, conf)  # last: a folder with a fonts.conf is complete
            return conf
        except OSError:
            continue
    return None


# The way ``_subset_face`` cuts a face: a change here makes every cached subset stale.
SUBSET_FORMAT = 2
I18N_DIR = Path(__file__).resolve().parent / "i18n"
# Blocks kept whole, whatever the catalogs hold: the symbols the reporter writes into labels itself
# (1024³, µs, ×, ≥, →, fullwidth punctuation). Each takes the face a character of a label
# continues in, so one left out would be measured in another font than the whole face's.
KEPT_BLOCKS = (
    (0x00A0, 0x024F),  # Latin-1 Supplement, Latin Extended-A and -B
    (0x0370, 0x03FF),  # Greek (µ, σ, Δ)
    (0x2000, 0x22FF),  # punctuation, super- and subscripts, currency, letterlike, arrows, maths
    (0x2460, 0x25FF),  # enclosed numbers, box drawing, geometric shapes
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
)


@lru_cache(maxsize=1)
def _chart_characters() -> str:
    """The characters, beyond ASCII, a chart's text is made of when it comes from imagebench: those of
    the message catalogs (titles, axes, legends, case labels), of the workloads' titles and of
    ``KEPT_BLOCKS``."""
    found: set[str] = {chr(c) for lo, hi in KEPT_BLOCKS for c in range(lo, hi + 1)}
    for catalog in sorted(I18N_DIR.glob("*.toml")):
        found.update(catalog.read_text(encoding="utf-8"))
    for w in WORKLOADS.values():
        found.update(f"{w.title}{w.title_zh}")
    return "".join(sorted(c for c in found if ord(c) > 0x7F and not unicodedata.category(c).startswith("C")))


def _subset_face(face: Path, chars: str) -> bytes | None:
    """``face`` cut down to ``chars`` (and ASCII), every table that lays text out kept (fontTools'
    subsetter); None without fontTools or when it cannot read the face."""
    try:
        from fontTools import subset
        from fontTools.ttLib import TTFont
    except ImportError:
        return None
    import io
    import logging

    options = subset.Options()
    options.layout_features = ["*"]  # every substitution and position a shaper may apply
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.ignore_missing_unicodes = True
    level = logging.getLogger("fontTools").level
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    try:
        font = TTFont(str(face), lazy=True)
        cutter = subset.Subsetter(options)
        cutter.populate(text="".join(chr(c) for c in range(0x20, 0x7F)) + chars)
        cutter.subset(font)
        out = io.BytesIO()
        font.save(out)
        return out.getvalue()
    except Exception:  # noqa: BLE001 (fontTools raises many kinds on a font it cannot read; the whole face serves)
        return None
    finally:
        logging.getLogger("fontTools").setLevel(level)


def _collection_faces(path: Path) -> list[bytes] | None:
    """Each face of a TrueType/OpenType collection as a font file of its own; None when ``path`` is not a
    collection (or not one this can read: then it is used as it is).

    A face is its table directory with the tables it points to, copied out of the
    collection (OpenType spec, "Font Collections"): the tables and their checksums
    unchanged, each at a new 4-byte-aligned offset.
    """
    import struct

    try:
        data = path.read_bytes()
        if data[:4] != b"ttcf":
            return None
        (count,) = struct.unpack_from(">I", data, 8)
        faces = []
        for offset in struct.unpack_from(f">{count}I", data, 12):
            version, n = struct.unpack_from(">IH", data, offset)
            records = [struct.unpack_from(">4sIII", data, offset + 12 + 16 * i) for i in range(n)]
            header = bytearray(data[offset:offset + 12])
            body = bytearray()
            start = 12 + 16 * n
            for tag, checksum, at, length in records:
                if at + length > len(data):
                    return None
                header += struct.pack(">4sIII", tag, checksum, start + len(body), length)
                body += data[at:at + length]
                body += b"\0" * (-len(body) % 4)
            faces.append(bytes(header + body))
        return faces or None
    except (OSError, struct.error):
        return None


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _renderer_version(render: Callable[..., Any]) -> str:
    """What a chart's SVG depends on beyond its specification: the renderer and the fonts it found."""
    name = f"{getattr(render, '__module__', '?')}.{getattr(render, '__qualname__', '?')}"
    if render is not render_svgs:
        return name
    import vl_convert as vlc

    return f"{name} vl-convert {getattr(vlc, '__version__', '?')} fonts={chart_fonts()} chinese-font={measures_chinese()}"


def _renderer_facts(render: Callable[..., Any]) -> tuple[str, bool]:
    """``_renderer_version`` and ``measures_chinese``, found in one process (a chart process)."""
    return _renderer_version(render), measures_chinese()


def render_svgs(specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Render specifications one after the other in this process."""
    return [render_svg(s) for s in specs]


# Charts per job handed to a chart process (``ChartRenderer.submit``).
CHARTS_PER_JOB = 2


class ChartRenderer:
    """Renders charts in the background while the build goes on, in up to ``workers`` processes.

    ``submit`` hands over one page's charts and returns at once; ``results`` waits for
    all of them, in submission order. With ``workers <= 1`` (or a ``render`` function
    other than ``render_svgs``, as tests pass) everything is rendered in this process
    when ``results`` is called. With ``cache``, a chart whose specification was rendered
    before (by this build or an earlier one, ``reporter.data.cache``) is not rendered
    again, and one specification shown twice is rendered once.
    """

    def __init__(self, workers: int | None = None, render: Callable[[Sequence[Mapping[str, Any]]], list[str]] = render_svgs,
                 *, cache: bool = False) -> None:
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.render = render
        self.cache = cache
        self.pool: ProcessPoolExecutor | None = None
        self.jobs: list[tuple[list[str], Any]] = []  # (keys, the job rendering them)
        self.order: list[str] = []  # the key of every submitted chart, in order
        self.known: dict[str, str] = {}  # key -> SVG, from the cache
        self.pending: set[str] = set()
        self.version: Any = None  # the renderer's version (a cache key's part), or the job finding it
        self.chinese: bool | None = None  # whether the chart processes' vl-convert measures Chinese text (``start``)

    def start(self) -> None:
        """Start the chart processes now, before the first chart, and find the renderer's version in one.

        The version names the fonts vl-convert found, which starts vl-convert's runtime and its
        fonts (and writes the fonts' cache on a first build): done in a chart process, which
        needs them anyway, that work leaves this process free (and it may fork: a process in
        which vl-convert started may not). Call it once nothing else forks this process.
        """
        if self.pool is None and self.workers > 1 and self.render is render_svgs:
            self.pool = self._new_pool()
            if self.cache:
                self.version = self.pool.submit(_renderer_facts, render_svgs)

    def _new_pool(self) -> ProcessPoolExecutor:
        # Spawned, never forked: a fork of a process whose vl-convert runtime has started its
        # threads (any chart rendered here before) deadlocks the child.
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))

    def _version(self) -> str:
        if self.version is None:
            self.version = _renderer_version(self.render)
        elif not isinstance(self.version, str):
            self.version, self.chinese = self.version.result()
        return self.version

    def measures_chinese(self) -> bool:
        """``measures_chinese()`` where the charts are laid out: the chart processes' answer once
        ``start`` has asked one of them (this process then never starts vl-convert), else this process's."""
        if self.chinese is None and self.version is not None and not isinstance(self.version, str):
            self._version()
        return self.chinese if self.chinese is not None else measures_chinese()

    def submit(self, specs: Sequence[Mapping[str, Any]]) -> None:
        if not specs:
            return
        if self.cache:
            from reporter.data.cache import chart_key, load_svg

            version = self._version()
            keys = [chart_key(spec, version) for spec in specs]
        else:
            keys = [str(len(self.order) + i) for i in range(len(specs))]
        self.order.extend(keys)
        todo: dict[str, Mapping[str, Any]] = {}
        for key, spec in zip(keys, specs):
            if key in self.known or key in self.pending or key in todo:
                continue
            svg = load_svg(key) if self.cache else None
            if svg is not None:
                self.known[key] = svg
            else:
                todo[key] = spec
        if not todo:
            return
        self.pending.update(todo)
        if self.workers > 1 and self.render is render_svgs:
            if self.pool is None:
                self.pool = self._new_pool()
            # A few charts a job: a page of many charts (a trends family) is shared by the processes,
            # and none is left rendering the end of a long job alone while the others wait.
            keys, specs = list(todo), list(todo.values())
            for at in range(0, len(keys), CHARTS_PER_JOB):
                self.jobs.append((keys[at:at + CHARTS_PER_JOB], self.pool.submit(render_svgs, specs[at:at + CHARTS_PER_JOB])))
        else:
            self.jobs.append((list(todo), list(todo.values())))

    def results(self) -> list[str]:
        rendered: dict[str, str] = {}
        try:
            for keys, job in self.jobs:
                rendered.update(zip(keys, self.render(job) if isinstance(job, list) else job.result()))
        finally:
            self.close()
        if self.cache:
            from reporter.data.cache import store_svgs

            store_svgs(rendered.items())
        rendered.update(self.known)
        return [rendered[k] for k in self.order]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
