"""compute_article on the golden runs: the numbers and labels of ArticleData, with no Markdown involved."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

from runformat.vocabulary import Verdict, format_cudnn_version
from reporter.article.compute import compute_article
from reporter.article.data import Message, RowName
from reporter.model.compare import compare_labels
from reporter.article.config import ComparisonSpec
from reporter.data.load import load_archive
from reporter.present.messages import catalogue
from reporter.present.views import change_phrase
from reporter.present.wording import in_language

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
from make_golden_runs import GOLDEN_WORKLOADS  # noqa: E402

FAMILIES = {name: info["family"] for name, info in GOLDEN_WORKLOADS.items()}


@pytest.fixture(scope="module")
def article():
    archive = load_archive(ROOT / "tests" / "data" / "golden_runs")
    spec = ComparisonSpec("golden-2.8.0", "golden-2.9.0")
    return in_language(compute_article(archive, spec, families=FAMILIES), "en"), compare_labels(archive, spec.baseline, spec.candidate)


def test_article_data_is_frozen(article) -> None:
    data, _ = article
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.title = "x"  # type: ignore[misc]


def test_rows_carry_compare_numbers_and_human_labels(article) -> None:
    data, c = article
    rows = [r for s in data.sections for b in s.blocks for r in b.rows]
    by_key = {(r.case_id, r.metric): r for r in rows}
    for rec in c.rows.itertuples():
        if rec.metric == "wall_time":
            assert (rec.case_id, rec.metric) not in by_key
            continue
        r = by_key[(rec.case_id, rec.metric)]
        assert r.verdict is Verdict(rec.verdict)
        assert r.ratio.value == pytest.approx(rec.ratio, nan_ok=True)
    matmul = [r for r in rows if r.workload == "matmul"]
    assert matmul and all("=" not in r.label and "³" in r.label for r in matmul)


def test_an_article_is_computed_in_no_language_and_said_in_each() -> None:
    archive = load_archive(ROOT / "tests" / "data" / "golden_runs")
    data = compute_article(archive, ComparisonSpec("golden-2.8.0", "golden-2.9.0"), families=FAMILIES)
    assert data.lang is None and isinstance(data.title, Message)
    assert data.rows and all(isinstance(r.label, RowName) and isinstance(r.full_label, RowName) for r in data.rows)
    en, zh = in_language(data, "en"), in_language(data, "zh")
    assert (en.lang, zh.lang) == ("en", "zh")
    assert [r.ratio for r in en.rows] == [r.ratio for r in zh.rows] == [r.ratio for r in data.rows]
    assert all(isinstance(r.label, str) and isinstance(r.full_label, str) for r in en.rows + zh.rows)
    assert en.title == catalogue("en").plain("article.default_title", candidate="golden-2.9.0",
                                             baseline="golden-2.8.0", device=data.device)
    assert zh.title != en.title and any(a.full_label != b.full_label for a, b in zip(en.rows, zh.rows))
    # The blocks hold the same said rows as the article's list of them.
    said = {(r.case_id, r.metric): r for r in zh.rows}
    assert all(said[(r.case_id, r.metric)] == r for s in zh.sections for b in s.blocks for r in b.rows)


def test_headline_names_the_largest_significant_change_per_family(article) -> None:
    data, _ = article
    rows = [r for s in data.sections for b in s.blocks for r in b.main_rows]
    for f in data.headline.families:
        calls = [r for r in rows if r.family == f.family and r.verdict.is_call]
        assert f.n_significant == len(calls)
        if calls:
            largest = max(abs(math.log(r.ratio.value)) for r in calls)
            assert abs(math.log(f.changes[0].ratio.value)) == pytest.approx(largest)
        else:
            assert f.changes == ()


def test_sections_hold_only_what_ran_and_the_rest_is_listed(article) -> None:
    data, _ = article
    assert all(s.blocks or s.numerics for s in data.sections)
    assert [s.number for s in data.sections] == list(range(2, 2 + len(data.sections)))
    for n in data.not_measured:
        assert n.reason in catalogue("en").raw("not_measured")


def test_cudnn_versions_and_cross_device_phrasing() -> None:
    assert format_cudnn_version("92400") == "9.24.0" and format_cudnn_version("8902") == "8.9.2"
    t = catalogue("en")
    assert change_phrase(t, 667.97, "s", "lower", True) == "668× faster"
    assert change_phrase(t, 1.092, "s", "lower", False) == "9.2% faster"
    assert change_phrase(t, 0.5, "s", "lower", False) == "2.00× slower"  # three significant digits


def test_a_change_and_its_ci_are_said_in_one_form() -> None:
    from reporter.article.data import Interval
    from reporter.present.views import change_ci_phrase

    t = catalogue("en")
    # 31.2% faster whose upper bound passes 1.5x: the CI stays in percent
    assert change_phrase(t, 1.312, "s", "lower", False) == "31.2% faster"
    assert change_ci_phrase(Interval(1.312, 1.131, 1.52), "s", False) == "13.1% – 52.0%"
    # a slowdown read as a factor: both bounds as factors, smaller first
    assert change_ci_phrase(Interval(0.1406, 0.1399, 0.1416), "s", False) == "7.06× – 7.15×"
    assert change_ci_phrase(Interval(0.95, 0.94, 0.96), "s", False) == "4.2% – 6.4%"
    assert change_ci_phrase(Interval(669.0, 387.0, 1160.4), "s", True) == "387× – 1,160×"


def test_the_article_says_whether_the_sides_ran_on_the_same_gpus(article) -> None:
    """By the GPU UUIDs the runs recorded: volatile for the list of changes (a fleet's runs
    differ in them), yet a reader of a comparison across hosts must learn of it."""
    from reporter.article.compute import _gpu_boards

    data, _ = article
    assert data.gpus is None  # the golden runs record no GPU
    a, b = {("gpu0", "uuid"): ["A"]}, {("gpu0", "uuid"): ["B"]}
    assert _gpu_boards(a, dict(a)) == "same"
    assert _gpu_boards(a, b) == "different"
    assert _gpu_boards({("gpu0", "uuid"): ["A", "B"]}, b) == "mixed"  # a side of two runs, one on each board
    assert _gpu_boards(a, {("gpu", "count"): ["1"]}) is None

    runs = load_archive(ROOT / "runs")
    label = "h100-torch-2.11.0-cu130"
    one_host = in_language(compute_article(runs, ComparisonSpec(f"{label}@20261205T194302Z", f"{label}@20261205T194845Z")), "en")
    two_hosts = in_language(compute_article(runs, ComparisonSpec(f"{label}@20261205T194302Z", f"{label}@20261205T215842Z")), "en")
    assert one_host.gpus == "same" and two_hosts.gpus == "different"
    for lang in ("en", "zh"):
        assert catalogue(lang).plain("article.env.gpus_different")


def test_the_article_warns_when_the_sides_were_timed_by_different_collector_methods() -> None:
    """The same stack on one H100, recorded by the collector of 6367d3a (before timing methods
    were numbered) and by today's (method 4): its short cases move with the method alone."""
    runs = load_archive(ROOT / "runs")
    label = "h100-torch-2.11.0-cu130"
    old = f"{label}-collector-6367d3a@20261206T022958Z"  # the label also holds a full run of another host
    across = in_language(compute_article(runs, ComparisonSpec(old, f"{label}@20261206T022215Z")), "en")
    same = in_language(compute_article(runs, ComparisonSpec(f"{label}@20261205T194302Z", f"{label}@20261205T194845Z")), "en")
    timing = [c for c in across.confounders if c.what == "timing_method"]
    assert [(c.baseline, c.candidate) for c in timing] == [("legacy", "4")]
    assert not [c for c in same.confounders if c.what == "timing_method"]
    # Same hardware and drivers: the headline says the methods differ, not the machines.
    assert across.headline.timed_apart and not across.headline.confounded
    assert [a.key for a in across.advice if a.key in ("confounded", "timed_apart")] == ["timed_apart"]
    assert not same.headline.timed_apart and "timed_apart" not in [a.key for a in same.advice]
    for lang in ("en", "zh"):
        for key in ("stack.timing_method", "article.summary_timed_apart", "advice.timed_apart"):
            assert catalogue(lang).plain(key)
