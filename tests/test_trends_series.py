"""Trend pages in release order: series of labels, their order by recorded torch version, and their change points."""

from __future__ import annotations

import math

import pandas as pd

from reporter.article.config import DeviceClass
from reporter.article.series import LabelInfo, compute_series, series_stem
from reporter.present.render import Messages, render_table
from reporter.site.pages import TrendInput, span_of, span_steps_view, trends_views
from runformat.vocabulary import OTHER_FAMILY


def _day(d: int) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-{d:02d}", tz="UTC")


def test_labels_whose_names_differ_only_in_versions_form_a_series() -> None:
    assert series_stem("torch-2.13.0-cpu") == series_stem("torch-2.14.1-cpu") == "torch-*-cpu"
    assert series_stem("pytorch-2.9-cu124") == series_stem("pytorch-2.10-cu126")
    assert series_stem("torch-2.13.0") != series_stem("torch-2.13.0-cpu")


def test_order_is_the_recorded_torch_version_not_the_name_nor_the_date() -> None:
    # Names and dates both say a, b, c; the runs recorded 2.12, 2.10 and 2.11.
    labels = ("stack-1.0", "stack-2.0", "stack-3.0")
    info = {"stack-1.0": LabelInfo("2.12.0+cpu", _day(1), _day(1)),
            "stack-2.0": LabelInfo("2.10.0+cu128", _day(2), _day(2)),
            "stack-3.0": LabelInfo("2.11.0+cu130", _day(3), _day(3))}
    (ser,) = compute_series(DeviceClass("cpu", labels, frozenset(), True), info)
    assert ser.by_version and ser.labels == ("stack-2.0", "stack-3.0", "stack-1.0")
    assert ser.pairs == [("stack-2.0", "stack-3.0"), ("stack-3.0", "stack-1.0")]


def test_without_a_parseable_version_the_series_is_in_date_order() -> None:
    labels = ("x-1.0", "x-2.0")
    info = {"x-1.0": LabelInfo("2.10.0", _day(5), _day(5)), "x-2.0": LabelInfo(None, _day(1), _day(1))}
    (ser,) = compute_series(DeviceClass("cpu", labels, frozenset(), True), info)
    assert not ser.by_version and ser.labels == ("x-2.0", "x-1.0")


def test_labels_of_one_torch_version_are_ordered_by_their_names_versions() -> None:
    # Image releases rebuilt around the same torch are each a point, compared with the previous:
    # a-1.10 comes after a-1.9 (versions, not strings), whatever the dates say.
    labels = ("a-1.10", "a-1.9", "b-9.9")  # b-9.9 stands alone: the series of the rest
    info = {"a-1.10": LabelInfo("2.10.0", _day(1), _day(1)), "a-1.9": LabelInfo("2.10.0", _day(2), _day(4)),
            "b-9.9": LabelInfo("2.11.0", _day(3), _day(3))}
    series = compute_series(DeviceClass("cpu", labels, frozenset(), True), info)
    assert [s.name for s in series] == ["a-*", ""]
    assert series[0].points == ("a-1.9", "a-1.10") and series[0].pairs == [("a-1.9", "a-1.10")]


def _summaries(levels: dict[str, float], halfwidth: float = 0.01) -> pd.DataFrame:
    rows = []
    for label, level in levels.items():
        for case, factor in (("k[n=1]", 1.0), ("k[n=2]", 2.0)):
            est = level * factor if case == "k[n=1]" else factor
            rows.append({"label": label, "case_id": case, "workload": "k", "params": {"n": case[4]},
                         "metric": "time", "unit": "s", "better": "lower", "median": est,
                         "ci_low": est * math.exp(-halfwidth), "ci_high": est * math.exp(halfwidth),
                         "estimate": est, "n_processes": 9, "n_runs": 3, "runs_covered": True})
    return pd.DataFrame(rows)


def test_trend_pages_name_the_step_its_version_its_size_and_the_pairs_comparison() -> None:
    levels = {"torch-2.10.0": 1.0, "torch-2.11.0": 1.0, "torch-2.12.1": 1.0, "torch-2.13.0": 1.25, "torch-2.14.1": 1.25}
    labels = tuple(levels)
    info = {lab: LabelInfo(lab.removeprefix("torch-") + "+cu130", _day(i + 1), _day(i + 1)) for i, lab in enumerate(labels)}
    cls = DeviceClass("AMD EPYC (cpu)", labels, frozenset(), True)
    reports = [{"title": "The 2.13 article", "page": "reports/a.md", "baseline": "torch-2.12.1", "candidate": "torch-2.13.0"}]
    t = Messages("en")
    index, families = trends_views([TrendInput(cls, _summaries(levels), {}, {}, info)], {}, t, [0], reports)
    assert index["n_steps"] == 1  # case n=2 is flat: no step
    (row,) = index["steps"].rows
    assert "torch-2.12.1 → torch-2.13.0 (2.13.0+cu130)" in row[3]
    assert row[4] == math.exp(-math.log(1.25)) or abs(row[4] - 0.8) < 1e-9  # slower after: ratio below 1
    assert row[5][0] < 0.8 < row[5][1] < 1
    assert row[7].href == "../reports/a.md"
    group = families[OTHER_FAMILY]["groups"][0]
    assert "2.10.0+cu128" not in group["series"][0] and "torch-2.10.0 (2.10.0+cu130) → torch-2.11.0" in group["series"][0]
    # Pairs without an article link the command that compares them.
    commands = [r[-1] for r in group["pairs"].rows if isinstance(r[-1], str)]
    assert "reporter compare torch-2.13.0 torch-2.14.1" in commands
    html = str(render_table(index["steps"], page="trends/index.md"))
    assert "torch-2.12.1 → torch-2.13.0" in html and "0.800×" in html


def test_flat_series_show_no_step() -> None:
    levels = {f"torch-2.1{i}.0": 1.0 + 0.002 * (-1) ** i for i in range(5)}
    labels = tuple(levels)
    info = {lab: LabelInfo(lab.removeprefix("torch-"), _day(i + 1), _day(i + 1)) for i, lab in enumerate(labels)}
    cls = DeviceClass("cpu", labels, frozenset(), True)
    index, _ = trends_views([TrendInput(cls, _summaries(levels, 0.02), {}, {}, info)], {}, Messages("zh"), [0])
    assert index["n_steps"] == 0 and not index["steps"].rows


def test_a_workload_of_many_cases_takes_charts_of_at_most_eight_named_lines() -> None:
    labels = ("torch-2.10.0", "torch-2.11.0", "torch-2.12.1")
    info = {lab: LabelInfo(lab.removeprefix("torch-"), _day(i + 1), _day(i + 1)) for i, lab in enumerate(labels)}
    rows = []
    for i, label in enumerate(labels):
        for n in range(1, 12):  # eleven cases: two charts, of six and five lines
            est = 1e-3 * n * (1 + 0.01 * i)
            rows.append({"label": label, "case_id": f"k[n={n:02d}]", "workload": "k", "params": {"n": n},
                         "metric": "time", "unit": "s", "better": "lower", "median": est, "ci_low": est * 0.99,
                         "ci_high": est * 1.01, "estimate": est, "n_processes": 9, "n_runs": 3, "runs_covered": True})
    cls = DeviceClass("AMD EPYC (cpu)", labels, frozenset(), True)
    _, families = trends_views([TrendInput(cls, pd.DataFrame(rows), {}, {}, info)], {}, Messages("en"), [0], [])
    charts = families[OTHER_FAMILY]["groups"][0]["workloads"][0]["charts"]
    counts = [len({d["series"] for d in c.spec["datasets"]["rows"]}) for c in charts]
    assert counts == [6, 5]
    assert [c.title.endswith(f"({i} of 2)") for i, c in enumerate(charts, 1)] == [True, True]
    for chart in charts:  # each line named once, at its last label, with no legend
        ends = [d for d in chart.spec["datasets"]["rows"] if d.get("end")]
        assert sorted(d["series"] for d in ends) == sorted({d["series"] for d in chart.spec["datasets"]["rows"]})
        assert all(d["x"] == "torch-2.12.1" for d in ends)
        assert "legend" not in str(chart.spec["layer"][1]["encoding"]["color"]) or \
            chart.spec["layer"][1]["encoding"]["color"]["legend"] is None


def test_an_article_spanning_the_series_shows_the_trends_steps_between_its_sides() -> None:
    levels = {"torch-2.10.0": 1.0, "torch-2.11.0": 1.0, "torch-2.12.1": 1.0, "torch-2.13.0": 1.25, "torch-2.14.1": 1.25}
    labels = tuple(levels)
    info = {lab: LabelInfo(lab.removeprefix("torch-"), _day(i + 1), _day(i + 1)) for i, lab in enumerate(labels)}
    inp = TrendInput(DeviceClass("cpu", labels, frozenset(), True), _summaries(levels), {}, {}, info)
    reports = [{"title": "The 2.13 article", "page": "reports/b.md", "baseline": "torch-2.12.1", "candidate": "torch-2.13.0"}]
    assert span_of(inp, "torch-2.13.0", "torch-2.14.1") is None  # neighbours: the article itself is the step
    span = span_of(inp, "torch-2.14.1", "torch-2.10.0")  # either way round, in release order
    assert span == labels
    view = span_steps_view(Messages("en"), inp, span, {}, reports, "reports/a.md")
    assert view["n"] == 1 and view["series"] == " → ".join(labels)
    (row,) = view["steps"].rows
    index, _ = trends_views([inp], {}, Messages("en"), [0], reports)
    assert row[1:7] == index["steps"].rows[0][1:7]  # the trends index's own step, worded alike
    assert row[7].href == "b.md"  # the pair's article, relative to the article
    # A span that stops before the step shows none of it.
    assert span_steps_view(Messages("zh"), inp, labels[:3], {}, reports, "reports/a.md")["n"] == 0


def test_a_cpu_class_names_its_workloads_in_its_own_words_as_its_articles_do() -> None:
    from reporter.present.views import load_workloads

    workloads = load_workloads()
    levels = {"torch-2.10.0": 1.0, "torch-2.11.0": 1.0, "torch-2.12.1": 1.25}
    labels = tuple(levels)
    info = {lab: LabelInfo(lab.removeprefix("torch-"), _day(i + 1), _day(i + 1)) for i, lab in enumerate(labels)}
    rows = _summaries(levels).assign(workload="multigpu", case_id=lambda d: "multigpu" + d["case_id"].str[1:])
    for lang in ("en", "zh"):
        t = Messages(lang)
        titles = {}
        for cls_name in ("Intel Xeon (cpu)", "NVIDIA H200 (cuda)"):
            cls = DeviceClass(cls_name, labels, frozenset(), True)
            index, families = trends_views([TrendInput(cls, rows, {}, {}, info)], workloads, t, [0])
            (group,) = [g for v in families.values() for g in v["groups"]]
            titles[cls_name] = [w["title"] for w in group["workloads"]]
            assert index["n_steps"] >= 1 and all(r[0] for r in index["steps"].rows)
        assert titles["Intel Xeon (cpu)"] == [Messages(lang, "cpu").plain("workload_name.multigpu")]
        assert titles["NVIDIA H200 (cuda)"] == [workloads["multigpu"].title_in(lang)]
        assert titles["Intel Xeon (cpu)"] != titles["NVIDIA H200 (cuda)"]
