"""`reporter compare` at the terminal: the shipped CPU and TF32 comparisons at 80-200 columns and in a pipe.

No line is wider than the width, and every row's ratio with its CI and its verdict stand
whole on one line; the figures are the article's (``compute_article``), so the terminal
and the site agree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from reporter.article.compute import compute_article
from reporter.article.config import ComparisonSpec
from reporter.data.load import load_archive
from reporter.model.compare import compare_labels
from reporter.present.messages import catalogue
from reporter.present.terminal_table import (
    article_rows, build_report, plain, render_runs_text, render_text, verdict_word, wrap,
)
from reporter.present.render import fmt_ratio_ci
from reporter.present.views import load_workloads
from reporter.present.wording import in_language

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs"
PAIRS = {
    "cpu": ("torch-2.13.0-cpu", "torch-2.14.1-cpu"),
    "tf32": ("h200-torch-2.11.0-cu130-defaults", "h200-torch-2.11.0-cu130-tf32-override-0"),
}
WIDTHS = (80, 100, 160, 200)


@pytest.fixture(scope="module")
def archive():
    return load_archive(str(RUNS))


@pytest.fixture(scope="module")
def articles(archive):
    workloads = load_workloads()
    out = {}
    for name, (b, c) in PAIRS.items():
        comparison = compare_labels(archive, b, c)
        article = in_language(compute_article(archive, ComparisonSpec(b, c), comparison=comparison,
                                              families={k: w.family for k, w in workloads.items()}), "en")
        out[name] = (article, comparison)
    return out


def _check(text: str, width: int, article, *, details: bool = False) -> None:
    lines = text.splitlines()
    wide = [line for line in lines if cell_len(line) > width]
    assert not wide, f"{len(wide)} line(s) wider than {width}: {wide[:2]}"
    t = catalogue("en")
    rows = [r for r in article_rows(article) if details or r.main]
    assert rows
    for r in rows:
        ratio, verdict = plain(fmt_ratio_ci(r.ratio)), verdict_word(t, r.verdict)
        # the ratio and the verdict are whole; a row's ratio is on the same line as a verdict, or
        # (folded at narrow widths) the verdict is on the line that follows it
        at = [i for i, line in enumerate(lines) if ratio in line]
        assert at, f"{r.label}: ratio {ratio!r} cut or missing at {width}"
        assert any(verdict in lines[i] or (i + 1 < len(lines) and lines[i + 1].strip().startswith(verdict))
                   for i in at), f"{r.label}: verdict {verdict!r} cut at {width}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_fits_every_width_and_never_cuts_ratio_or_verdict(articles, pair, width):
    article, comparison = articles[pair]
    text = render_text(build_report(article, comparison, catalogue("en")), width)
    _check(text, width, article)
    # the site's human labels, grouped by family, not raw case ids
    assert "conv2d[" not in text and "matmul[" not in text
    assert "Basic operations" in text


@pytest.mark.parametrize("width", (80, 160))
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_details_fit_too(articles, pair, width):
    article, comparison = articles[pair]
    text = render_text(build_report(article, comparison, catalogue("en"), details=True), width)
    _check(text, width, article, details=True)
    assert "p (adj.)" in text and "MDE" in text and "Processes" in text


def test_headline_first_and_calls_named(articles):
    article, comparison = articles["tf32"]
    text = render_text(build_report(article, comparison, catalogue("en")), 100)
    lines = text.splitlines()
    headline = next(i for i, line in enumerate(lines) if line.startswith("• "))
    table = next(i for i, line in enumerate(lines) if line.startswith("Case"))
    assert headline < table
    assert "matmul 4096³ tf32" in "\n".join(lines[headline:table])  # the article's largest change
    worse = [r for r in article_rows(article) if r.verdict.value == "worse"]
    assert f"worse ({len(worse)}):" in text
    for r in worse:
        assert r.full_label in text


def test_notes_are_numbered_footnotes(articles):
    article, comparison = articles["tf32"]
    report = build_report(article, comparison, catalogue("en"))
    text = render_text(report, 120)
    assert report.footnotes
    table, _, notes = text.partition("\n[1] ")
    marks = {int(n) for group in re.findall(r"\[(\d+(?:,\d+)*)\]", table) for n in group.split(",")}
    assert marks == set(range(1, len(report.footnotes) + 1))  # every footnote marks a row, every mark has its note
    for i, note in enumerate(report.footnotes, 1):
        assert f"[{i}] {note}" in text


def _cli(*args, env=None, width=None):
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if width:
        environment["COLUMNS"] = str(width)
    return subprocess.run([sys.executable, "-m", "reporter", *args], capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=300)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_in_a_pipe_the_width_is_100_and_columns_is_honoured(articles, pair):
    article, _ = articles[pair]
    r = _cli("compare", *PAIRS[pair])
    assert r.returncode == 0, r.stderr
    _check(r.stdout, 100, article)
    r = _cli("compare", *PAIRS[pair], width=80)
    assert r.returncode == 0, r.stderr
    _check(r.stdout, 80, article)


def test_runs_never_cuts_a_run_id(archive):
    r = _cli("runs", width=80)
    assert r.returncode == 0, r.stderr
    assert all(cell_len(line) <= 80 for line in r.stdout.splitlines())
    for run_id in archive.runs["run_id"].astype(str):
        assert run_id in r.stdout
    assert "status" in r.stdout.splitlines()[0]
    assert "Left out at 80 columns" in r.stdout


def test_runs_drop_columns_from_the_right():
    rows = [["a-very-long-label-of-a-stack", "20261205T194302Z-777a80-5bce98", "complete", "2026-12-05 19:43",
             "104/0/105", "cuda NVIDIA H100 80GB HBM3", "2.11.0+cu130", "13.0"]]
    wide, left = render_runs_text(rows, 200)
    assert not left and "13.0" in wide
    narrow, left = render_runs_text(rows, 120)
    assert left == ["device", "torch", "CUDA"]
    assert rows[0][1] in narrow and rows[0][2] in narrow and rows[0][4] in narrow
    grouped, left = render_runs_text(rows, 60)  # label, id and status too wide for a line: the label heads its runs
    assert grouped.splitlines()[2] == rows[0][0] and all(cell_len(x) <= 60 for x in grouped.splitlines())
    assert f"  {rows[0][1]}  {rows[0][2]}" in grouped


def test_wrap_counts_cells_and_splits_long_words():
    assert wrap("矩阵乘法 4096³ bf16", 8) == ["矩阵乘法", "4096³", "bf16"]
    assert all(cell_len(x) <= 10 for x in wrap("conv2d[batch=16,channels=64,dtype=fp32,kernel=3]", 10))
    assert "".join(wrap("abcdefghij", 3)) == "abcdefghij"


def test_every_verdict_of_the_vocabulary_has_words():
    from runformat.vocabulary import Verdict

    t = catalogue("en")
    for v in Verdict:
        word = verdict_word(t, v)
        assert word and not word.startswith("verdict.")
    assert verdict_word(t, "a verdict of a newer model") == "a verdict of a newer model"


def test_chinese_text_fits(articles):
    article, comparison = articles["cpu"]
    workloads = load_workloads()
    archive = load_archive(str(RUNS))
    zh = in_language(compute_article(archive, ComparisonSpec(*PAIRS["cpu"]), comparison=comparison,
                                     families={k: w.family for k, w in workloads.items()}), "zh")
    text = render_text(build_report(zh, comparison, catalogue("zh")), 80)
    assert all(cell_len(line) <= 80 for line in text.splitlines())
    assert "基础运算" in text
