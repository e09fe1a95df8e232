"""Every published article (the shipped archive, both languages): its verdict box and its
"How to reproduce" block.

The verdict box opens the article, names every significant regression (never folded into
"and N more") and says how much evidence each side has. The reproduce block names no
redacted value and no folder of the machine that recorded or built it; its ``collector run``
commands parse with the collector's own parser and record both sides, interleaved where the
sides ran the same selection; its ``reporter compare`` names the article's two selections.
"""

from __future__ import annotations

import html
import math
import re
import shlex
from pathlib import Path

import pytest

from collector.cli import build_parser
from reporter.article.compute import _reproduce, compute_article
from reporter.article.config import ComparisonSpec, load_config
from reporter.data.load import load_archive
from reporter.present.render import Messages
from reporter.present.views import ArticleView
from reporter.present.wording import in_language
from reporter.site.build import build_site
from runformat.redact import REDACTED
from runformat.vocabulary import Verdict

ROOT = Path(__file__).resolve().parent.parent

# A path of some machine: absolute or home-relative, as a shell word or after "python:".
_FOREIGN_PATH = re.compile(r"(?:^|[\s=:\"'])(?:/|~/)[\w.-]")


def _block(page: str) -> str:
    """The reproduce section of an article's Markdown (from its heading to the next one)."""
    start = re.search(r"^## \d+\. (How to reproduce|如何复现)$", page, re.M)
    assert start, "no reproduce section"
    end = re.search(r"^## ", page[start.end():], re.M)
    return page[start.end(): start.end() + end.start()] if end else page[start.end():]


def _commands(block: str) -> list[str]:
    """The shell commands of the block's <pre> boxes, unescaped."""
    return [html.unescape(c).replace("\\\n", " ") for c in re.findall(r"<pre[^>]*><code>(.*?)</code></pre>", block, re.S)]


def _record(args: list[str]):
    """``collector run`` arguments as the collector parses them (variables stand for real paths)."""
    return build_parser().parse_args([a.replace("$BASELINE_PYTHON", "/x/python").replace("$CANDIDATE_PYTHON", "/y/python")
                                      for a in args[3:]] if args[:3] == ["python", "-m", "collector"] else args)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    result = build_site(ROOT / "runs", site, None, config_path=ROOT / "imagebench.toml", chart_workers=1)
    assert result.reports
    return site


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[str, str]:
    found = {str(p.relative_to(site)): p.read_text(encoding="utf-8")
             for p in list(site.glob("reports/*.md")) + list(site.glob("zh/reports/*.md")) if p.name != "index.md"}
    assert any(k.startswith("zh/") for k in found) and any(not k.startswith("zh/") for k in found)
    return found


def test_no_published_reproduce_block_names_a_redacted_value_or_a_foreign_path(pages: dict[str, str]) -> None:
    for name, page in pages.items():
        block = _block(page)
        text = html.unescape(block)
        assert REDACTED not in text and "redacted" not in text, name
        for command in _commands(block):
            assert not _FOREIGN_PATH.search(command), (name, command)


def test_every_published_block_records_both_sides_and_rebuilds_the_article(pages: dict[str, str]) -> None:
    for name, page in pages.items():
        commands = _commands(_block(page))
        records = [shlex.split(c) for c in commands if c.startswith("python -m collector run")]
        compares = [shlex.split(c) for c in commands if c.startswith("reporter compare ")]
        assert records and len(compares) == 1 and any(c.startswith("reporter build ") for c in commands), name
        labels = [label for args in records for label in _record(args).label]
        stacks = [s for args in records for s, _ in _record(args).stack]
        assert len(labels) == 2 and len(stacks) == 2, (name, labels, stacks)
        # The compare names the article's two selections, whose labels are the recorded ones.
        assert [s.partition("@")[0] for s in compares[0][2:4]] == labels, name
        if len(records) == 1:
            assert _record(records[0]).interleave, name


def test_every_published_article_opens_with_its_verdict(pages: dict[str, str]) -> None:
    for name, page in pages.items():
        zh = name.startswith("zh/")
        verdict = page.find('"结论"' if zh else '"Verdict"')
        summary = page.find('!!! abstract "概要"' if zh else '!!! abstract "In short"')
        assert 0 < verdict < summary, name
        box = page[verdict:summary]
        assert ("证据：基线" if zh else "Evidence: baseline") in box, name


@pytest.mark.parametrize("archive_dir, config", [("runs", "imagebench.toml"), ("tests/data/golden_runs", None)])
def test_the_verdict_names_every_regression(archive_dir: str, config: str | None) -> None:
    archive = load_archive(ROOT / archive_dir)
    specs = ([s for s in load_config(ROOT / config, explicit=True).comparisons if s.lang is None] if config else
             [ComparisonSpec("golden-2.8.0", "golden-2.9.0"), ComparisonSpec("golden-2.9.0", "golden-2.10.0")])
    named = 0
    for spec in specs:
        if spec.candidate not in archive.labels() and spec.candidate.partition("@")[0] not in archive.labels():
            continue  # this machine's label: recorded by `make report`, not shipped
        for lang in ("en", "zh"):
            data = in_language(compute_article(archive, spec), lang)
            worse = [r for s in data.sections for b in s.blocks for r in b.rows if r.main and r.verdict is Verdict.WORSE]
            box = ArticleView(data, Messages(lang)).verdict()
            assert len(box["regressions"]) == len(worse), (spec, lang)
            for r, text in zip(sorted(worse, key=lambda r: r.ratio.value), box["regressions"]):
                assert r.full_label in html.unescape(str(text)) or html.unescape(r.full_label) in html.unescape(str(text))
            assert (box["kind"] == "failure") == bool(worse)
            named += len(worse)
    assert named  # both archives have regressions to name


def test_what_changed_keeps_the_entries_a_reader_weighs_first_in_view(pages: dict[str, str]) -> None:
    folded_somewhere = False
    for name, page in pages.items():
        start = re.search(r"^### 1\.2 ", page, re.M)
        section = page[start.end(): page.index("\n## ", start.end())]
        in_view, _, folded = section.partition('\n<details class="note">')
        keys = re.findall(r"^<tr>\n<td><code>([^<]+)</code>", in_view, re.M)
        assert len(keys) <= ArticleView.CHANGES_SHOWN or folded, name
        assert "collect&#95;env.cpu&#95;info" not in in_view, name  # a full lscpu dump is never in view
        if folded:
            folded_somewhere = True
            assert "<code>torch.version</code>" not in folded, name
            assert keys and (keys[0] == "torch.version" or "<code>torch.version</code>" not in section), (name, keys[:3])
    assert folded_somewhere


def test_one_setting_read_otherwise_by_two_workloads_is_flagged_on_both_rows() -> None:
    """The TF32 article: BERT-base 8×128 at FP32 is timed by bert_train (called worse) and by AMP's
    FP32 rows (inconclusive); both rows say so and the verdict box lists them. BERT-base 32×128,
    called better by both, is not flagged."""
    from runformat.vocabulary import NoteCode

    archive = load_archive(ROOT / "runs")
    data = in_language(compute_article(archive, ComparisonSpec("h200-torch-2.11.0-cu130@20261202T161602Z",
                                                               "h200-torch-2.11.0-cu130-tf32-override")), "en")
    rows = {r.case_id: r for s in data.sections for b in s.blocks for r in b.rows if r.metric == "time"}
    flagged = {cid for cid, r in rows.items() if any(n.code is NoteCode.DISAGREES for n in r.notes)}
    assert flagged == {"bert_train[batch=8,model=bert-base,seq=128]", "amp[batch=8,model=bert-base,precision=fp32,seq=128]"}
    note = next(n for n in rows["bert_train[batch=8,model=bert-base,seq=128]"].notes if n.code is NoteCode.DISAGREES)
    assert note.values["verdict"] == "inconclusive" and "AMP" in note.values["other"]
    assert any(c.code == "disagree" for c in data.verdict.caveats)


def test_articles_of_cpu_runs_speak_of_processes_and_host_memory(pages: dict[str, str]) -> None:
    cpu_only = {name: page for name, page in pages.items() if "h100" not in name and "h200" not in name}
    assert len(cpu_only) >= 6  # three CPU articles, two languages
    for name, page in cpu_only.items():
        for word in ("multi-GPU", "Multi-GPU", "-GPU", "per GPU", "多 GPU", "块 GPU", "显存"):
            assert word not in page, (name, word)
    assert any("DDP" in page for page in cpu_only.values())


def _fingerprint(**run: str) -> dict[tuple[str, str], list[str]]:
    return {("run", k): [v] for k, v in run.items()}


def test_a_recorded_machine_path_becomes_a_variable_and_a_checkout_path_stays() -> None:
    fps = {
        "baseline": _fingerprint(stack="python:/opt/stacks/torch-2.13.0/bin/python", suite="cpu", processes="3", only="[]"),
        "candidate": _fingerprint(stack="python:venvs/torch-2.14.1/bin/python", suite="cpu", processes="3", only="[]",
                                  stack_env='{"OMP_NUM_THREADS": "2"}'),
    }
    fps["baseline"][("command", "argv")] = ["collector run --out /tmp/x/runs --label '[redacted]'"]
    r = _reproduce(ComparisonSpec("torch-2.13.0", "torch-2.14.1"), fps)
    assert r.variables == (("BASELINE_PYTHON", "torch-2.13.0"),)
    (record,) = r.record
    assert "/opt/" not in record and "/tmp/" not in record and REDACTED not in record
    ns = _record(shlex.split(record.replace("\\\n", " ")))
    assert ns.interleave and ns.label == ["torch-2.13.0", "torch-2.14.1"] and ns.suite == "cpu" and ns.processes == 3
    assert ns.stack[1][0] == "python:venvs/torch-2.14.1/bin/python"
    assert "--env OMP_NUM_THREADS=2" in record and record.index("--env") > record.index("torch-2.14.1 ")


def test_different_selections_and_one_label_twice_record_one_invocation_a_side() -> None:
    full = _fingerprint(suite="full", processes="3", only="[]")
    full[("container", "image")] = ["ghcr.io/acme/pytorch:2.9 cuda"]
    narrow = _fingerprint(suite="full", processes="3", only='["resnet50_train", "amp*precision=fp32*"]')
    narrow[("container", "image")] = ["ghcr.io/acme/pytorch:2.9"]
    r = _reproduce(ComparisonSpec("a@20260101T000000Z", "b"), {"baseline": full, "candidate": narrow})
    assert len(r.record) == 2 and not r.variables
    first, second = (_record(shlex.split(c.replace("\\\n", " "))) for c in r.record)
    assert [s for s, _ in first.stack] == ["docker:ghcr.io/acme/pytorch:2.9 cuda"] and first.label == ["a"] and not first.only
    assert second.only == ["resnet50_train", "amp*precision=fp32*"] and second.label == ["b"]
    assert shlex.split(r.compare) == ["reporter", "compare", "a@20260101T000000Z", "b"]
    same = _reproduce(ComparisonSpec("a@1", "a@2"), {"baseline": full, "candidate": full})
    assert len(same.record) == 2 and "--interleave" not in " ".join(same.record)


def test_a_title_that_names_what_did_not_run_is_flagged_and_the_published_titles_are_not() -> None:
    archive = load_archive(ROOT / "runs")
    tf32 = ("h200-torch-2.11.0-cu130@20261202T161602Z", "h200-torch-2.11.0-cu130-tf32-override")
    # The override run timed training and inference only: no matrix-multiply microbenchmark.
    promised = in_language(compute_article(archive, ComparisonSpec(*tf32, title="TF32 on for FP32 matrix multiplies on an H200")), "en")
    (caveat,) = [c for c in promised.verdict.caveats if c.code == "title"]
    assert caveat.params["terms"] == "matrix multiplies"
    box = ArticleView(promised, Messages("en")).verdict()
    assert any("The title names matrix multiplies" in str(c) for c in box["caveats"])
    zh = in_language(compute_article(archive, ComparisonSpec(*tf32, title="为 FP32 矩阵乘法开启 TF32")), "zh")
    assert [c.params["terms"] for c in zh.verdict.caveats if c.code == "title"] == ["矩阵乘法"]
    for spec in load_config(ROOT / "imagebench.toml", explicit=True).comparisons:
        if spec.candidate.partition("@")[0] not in archive.labels():
            continue
        data = in_language(compute_article(archive, spec), spec.lang or "en")
        assert not [c for c in data.verdict.caveats if c.code == "title"], spec.title


def test_chinese_boxes_use_full_width_punctuation_without_stray_spaces(pages: dict[str, str]) -> None:
    """The verdict and summary boxes of every Chinese article: no ASCII colon after Chinese or
    bold text, and no space after a full-width stop, semicolon or comma."""
    for name, page in pages.items():
        if not name.startswith("zh/"):
            continue
        boxes = re.sub(r"<[^>]+>", "", page[: page.index("\n## 1.")])
        assert not re.search(r"(?:[\u3400-\u9fff）]|\*\*): ", boxes), (name, re.search(r".{20}(?:[\u3400-\u9fff）]|\*\*): .{20}", boxes))
        assert not re.search(r"[。；，：] ", boxes), (name, re.search(r".{20}[。；，：] .{10}", boxes))


def test_one_comparison_gives_the_same_counts_and_geomean_on_every_page_and_in_the_cli(site: Path) -> None:
    """The CPU comparison: the article, the reports index, the home page and `reporter compare
    --format json` count the same verdicts and give the same geometric mean."""
    import json as jsonlib

    from click.testing import CliRunner

    from reporter.cli import cli

    out = CliRunner().invoke(cli, ["compare", "torch-2.13.0-cpu", "torch-2.14.1-cpu", "--runs", str(ROOT / "runs"),
                                   "--format", "json"])
    assert out.exit_code == 0, out.output
    records = jsonlib.loads(out.stdout)
    rows = [r for r in records if r["counted"]]
    cli_counts = {v: sum(r["verdict"] == v for r in rows) for v in ("better", "worse", "equivalent")}
    (geo,) = [r for r in records if r["case"] == "geomean"]
    spec = next(s for s in load_config(ROOT / "imagebench.toml", explicit=True).comparisons
                if (s.baseline, s.candidate, s.lang) == ("torch-2.13.0-cpu", "torch-2.14.1-cpu", None))
    article = in_language(compute_article(load_archive(ROOT / "runs"), spec), "en")
    h = article.headline
    assert {k: h.counts[k] for k in cli_counts} == cli_counts
    assert h.total == len(rows)
    assert (h.geomean.value, h.geomean.low, h.geomean.high) == pytest.approx((geo["ratio"], geo["ci_low"], geo["ci_high"]))
    box = article.verdict
    assert (len(box.better), len(box.worse), box.total) == (cli_counts["better"], cli_counts["worse"], len(rows))
    # The reports index: the article's line, with its geomean, CI and counts.
    index = (site / "reports" / "index.md").read_text(encoding="utf-8")
    row = next(r for r in re.findall(r"<tr>\n(.*?)</tr>", index, re.S) if f'<a href="{spec.slug}/">' in r)
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert cells[4] == f"{geo['ratio']:.3f}×" and cells[5] == f"[{geo['ci_low']:.3f}, {geo['ci_high']:.3f}]"
    inconclusive = h.total - sum(h.counts[k] for k in ("better", "worse", "equivalent", "unchanged"))
    assert cells[6:10] == [str(cli_counts["better"]), str(cli_counts["worse"]), str(cli_counts["equivalent"]),
                           str(inconclusive)]
    # The home page names the article's one significant change.
    home = (site / "index.md").read_text(encoding="utf-8")
    entry = next(ln for ln in home.splitlines() if f"reports/{spec.slug}.md" in ln)
    for r in box.better + box.worse:
        assert html.unescape(r.full_label) in html.unescape(entry)


def _intervals(summary, rows) -> list[tuple[float, float, float]]:
    """``summary``'s (estimate, CI) at each (case, metric) of ``rows``."""
    s = summary.set_index(["case_id", "metric"])
    return [float(s.loc[(r["case_id"], r["metric"]), k]) for r in rows for k in ("estimate", "ci_low", "ci_high")]


def test_a_label_shows_one_interval_in_its_article_the_cli_its_run_pages_and_its_trends() -> None:
    """The location view: the sides of the CPU article and of `reporter compare --format json` give
    each label's case the interval its trend points show (``compute_summaries`` of the label's runs),
    and a one-run side (``LABEL@RUN``) the interval of that run's page (``compute_run_summaries``)."""
    import json as jsonlib

    from click.testing import CliRunner

    from reporter.article.config import restrict
    from reporter.cli import cli
    from reporter.model.compare import compute_run_summaries, compute_summaries

    archive = load_archive(ROOT / "runs")
    spec = next(s for s in load_config(ROOT / "imagebench.toml", explicit=True).comparisons
                if (s.baseline, s.candidate, s.lang) == ("torch-2.13.0-cpu", "torch-2.14.1-cpu", None))
    article = in_language(compute_article(archive, spec), "en")
    out = CliRunner().invoke(cli, ["compare", spec.baseline, spec.candidate, "--runs", str(ROOT / "runs"), "--format", "json"])
    assert out.exit_code == 0, out.output
    records = [r for r in jsonlib.loads(out.stdout) if r["case"] != "geomean"]
    rows = [{"case_id": r.case_id, "metric": r.metric, "side": r} for r in article.rows if math.isfinite(r.baseline.low)]
    assert len(rows) > 20
    for side in ("baseline", "candidate"):
        label = getattr(spec, side)
        ids = frozenset(archive.runs.loc[archive.runs["label"].astype(str) == label, "run_id"].astype(str))
        pages = _intervals(compute_summaries(restrict(archive, ids)), rows)
        shown = [x for r in rows for x in (getattr(r["side"], side).value, getattr(r["side"], side).low,
                                           getattr(r["side"], side).high)]
        assert shown == pytest.approx(pages, rel=1e-9)
        # The CLI's record of each row (known by its metric and both sides' estimates) gives the same.
        for r, (value, low, high) in zip(rows, zip(pages[::3], pages[1::3], pages[2::3])):
            other = getattr(r["side"], "candidate" if side == "baseline" else "baseline").value
            (rec,) = [x for x in records if x["metric"] == r["metric"] and x[f"{side}_value"] == pytest.approx(value, rel=1e-12)
                      and x[("candidate" if side == "baseline" else "baseline") + "_value"] == pytest.approx(other, rel=1e-12)]
            assert (rec[f"{side}_ci_low"], rec[f"{side}_ci_high"]) == pytest.approx((low, high), rel=1e-9)
    # One run a side: the side is that run's page.
    aa = ("h200-torch-2.11.0-cu130@20261202T172425Z", "h200-torch-2.11.0-cu130@20261202T174022Z")
    from reporter.model.compare import compare_labels

    cmp = compare_labels(archive, *aa)
    tested = cmp.rows[cmp.rows["baseline_ci_low"].notna()].to_dict("records")
    assert tested
    for side, sel in zip(("baseline", "candidate"), aa):
        run = next(r for r in archive.runs["run_id"].astype(str) if r.startswith(sel.partition("@")[2]))
        page = compute_run_summaries(restrict(archive, frozenset({run})))[run]
        got = [x for r in tested for x in (r[f"{side}_value"], r[f"{side}_ci_low"], r[f"{side}_ci_high"])]
        assert got == pytest.approx(_intervals(page, tested), rel=1e-9, nan_ok=True)
