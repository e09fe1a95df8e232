"""Charts for the site: Altair specifications rendered to SVG with vl-convert (no network).

Each ``chart_*`` function takes plain rows (already computed by reporter.compare or
reporter.pages) and returns a Vega-Lite specification as a dict; ``render_svgs`` turns
many of them into SVG strings, in a few processes when there are many. The data is
inlined in the specification, so rendering needs neither a network nor a browser, and
the SVG is embedded in the page as is.

Strings from runs (labels, case names) only ever travel as data values: Vega's SVG
renderer writes them as XML-escaped text, never as markup.
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

WIDTH = 560
DATASET = "rows"
LABEL_CHARS = 56  # longer case and series names are cut (the table below the chart has them whole)
ROW_HEIGHT = 18
VERDICT_COLORS = {
    "better": "#1a9850",
    "worse": "#d73027",
    "no significant difference": "#7f7f7f",
    "inconclusive": "#fdae61",
}


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
    ``verdict`` (one of reporter.stats.VERDICTS), in the order to show them.
    """
    cases = _distinct_short([str(r["case"]) for r in rows])
    data = _clean([{**r, "case": case, "verdict_name": verdict_names.get(str(r["verdict"]), str(r["verdict"]))}
                   for r, case in zip(rows, cases)])
    names = tuple(verdict_names.get(k, k) for k in VERDICT_COLORS)
    return _with_data(_ratio_skeleton(x_title, names), data)


@lru_cache(maxsize=64)
def _ratio_skeleton(x_title: str, verdict_names: tuple[str, ...]) -> str:
    import altair as alt

    base = alt.Chart(alt.NamedData(name=DATASET))
    # sort=None keeps the cases in the order of the data; the height steps with the cases.
    y = alt.Y("case:N", sort=None, title=None, axis=alt.Axis(labelLimit=0))
    # Log scale: a ratio of 2 and one of 1/2 lie equally far from 1, and wide CIs stay readable.
    x_scale = alt.Scale(type="log", zero=False, nice=False, padding=8)
    colors = alt.Scale(domain=list(verdict_names), range=list(VERDICT_COLORS.values()))
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", scale=x_scale, title=x_title), x2="ci_high:Q", y=y,
        color=alt.Color("verdict_name:N", scale=colors, legend=alt.Legend(title=None, orient="bottom")),
    )
    points = base.mark_point(filled=True, size=50).encode(
        x=alt.X("ratio:Q", scale=x_scale), y=y, color=alt.Color("verdict_name:N", scale=colors)
    )
    one = alt.Chart(alt.Data(values=[{"one": 1.0}])).mark_rule(strokeDash=[4, 3], color="#444").encode(x="one:Q")
    chart = alt.layer(one, bars, points).properties(width=WIDTH - 280, height=alt.Step(ROW_HEIGHT))
    return json.dumps(chart.to_dict(validate=False))


def chart_lines(
    rows: Sequence[Mapping[str, Any]],
    *,
    x_title: str,
    y_title: str,
    x_type: str = "Q",
    log_x: bool = True,
    log_y: bool = True,
) -> dict[str, Any]:
    """Medians with 95% CI error bars, one line per series: time by size, scaling, trends.

    ``rows``: dicts with ``x`` (a number; or, for ``x_type="N"``, a label: labels then
    appear in the order of their first row), ``y``, ``y_low``, ``y_high`` and ``series``
    (the line: a label, or a case).
    """
    names = sorted({str(r["series"]) for r in rows})
    series = dict(zip(names, _distinct_short(names)))
    xs = sorted({r["x"] for r in rows if isinstance(r["x"], str)})
    xs = dict(zip(xs, _distinct_short(xs)))
    data = _clean([{**r, "series": series[str(r["series"])], "x": xs.get(r["x"], r["x"]) if isinstance(r["x"], str) else r["x"]}
                   for r in rows])
    return _with_data(_lines_skeleton(x_title, y_title, x_type, log_x, log_y), data)


@lru_cache(maxsize=64)
def _lines_skeleton(x_title: str, y_title: str, x_type: str, log_x: bool, log_y: bool) -> str:
    import altair as alt

    if x_type == "Q":
        x = alt.X("x:Q", title=x_title, scale=alt.Scale(type="log" if log_x else "linear", zero=False))
    else:
        x = alt.X("x:N", title=x_title, sort=None, axis=alt.Axis(labelAngle=-30, labelLimit=0))
    y_scale = alt.Scale(type="log" if log_y else "linear", zero=False)
    base = alt.Chart(alt.NamedData(name=DATASET))
    color = alt.Color("series:N", title=None, sort="ascending",
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=0))
    line = base.mark_line(point=True).encode(x=x, y=alt.Y("y:Q", title=y_title, scale=y_scale), color=color)
    bars = base.mark_rule().encode(x=x, y=alt.Y("y_low:Q", scale=y_scale), y2="y_high:Q", color=color)
    chart = alt.layer(bars, line).properties(width=WIDTH - 120, height=240)
    return json.dumps(chart.to_dict(validate=False))


def _with_data(skeleton: str, data: list[dict[str, Any]]) -> dict[str, Any]:
    """A chart's specification: the cached Altair output with this chart's rows as its dataset.

    Building the Altair chart once per kind of chart and filling in the data costs a
    fraction of building a new chart each time, which matters at hundreds of charts.
    ARIA attributes are left out of the SVG (the figure carries a label and the same
    data follows as a table); with label truncation done here instead of by Vega's text
    measurement, that halves the rendering time.
    """
    spec = json.loads(skeleton)
    spec["datasets"] = {DATASET: data}
    spec.setdefault("config", {})["aria"] = False
    return spec


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` cut in the middle to ``limit`` characters (the ends tell cases apart)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return text[:head] + "…" + text[len(text) - (limit - head - 1):]


def _distinct_short(names: Sequence[str]) -> list[str]:
    """Shortened names, numbered where shortening made two of them equal."""
    short = [_short(n) for n in names]
    seen: dict[str, int] = {}
    out = []
    for full, cut in zip(names, short):
        if cut != full and short.count(cut) > 1:
            seen[cut] = seen.get(cut, 0) + 1
            cut = f"{cut} #{seen[cut]}"
        out.append(cut)
    return out


def render_svg(spec: Mapping[str, Any]) -> str:
    """One Vega-Lite specification as a standalone SVG document."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(dict(spec))


def render_svgs(specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Render specifications one after the other in this process."""
    return [render_svg(s) for s in specs]


class ChartRenderer:
    """Renders charts in the background while the build goes on, in up to ``workers`` processes.

    ``submit`` hands over one page's charts and returns at once; ``results`` waits for
    all of them, in submission order. With ``workers <= 1`` (or a ``render`` function
    other than ``render_svgs``, as tests pass) everything is rendered in this process
    when ``results`` is called.
    """

    def __init__(self, workers: int | None = None, render: Callable[[Sequence[Mapping[str, Any]]], list[str]] = render_svgs) -> None:
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.render = render
        self.pool: ProcessPoolExecutor | None = None
        self.jobs: list[Any] = []

    def submit(self, specs: Sequence[Mapping[str, Any]]) -> None:
        if not specs:
            return
        if self.workers > 1 and self.render is render_svgs:
            if self.pool is None:
                self.pool = ProcessPoolExecutor(max_workers=self.workers)
            self.jobs.append(self.pool.submit(render_svgs, list(specs)))
        else:
            self.jobs.append(list(specs))

    def results(self) -> list[str]:
        out: list[str] = []
        try:
            for job in self.jobs:
                out.extend(self.render(job) if isinstance(job, list) else job.result())
        finally:
            self.close()
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
