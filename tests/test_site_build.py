"""reporter build: generated folders, config, default comparisons, escaping, languages, mkdocs --strict.

Charts are stubbed here (their SVG is the browser test's subject) so each build takes a
couple of seconds; the MkDocs builds are real.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from reporter.site.build import GENERATED_MARKER, MARKER_FILE, build_site
from reporter.article.config import ComparisonSpec, compute_device_classes, default_comparisons, label_version, load_config
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from reporter.present.render import Messages, html_pre, make_environment, md_escape
from reporter.present.views import WorkloadInfo, load_workloads

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_RUNS = ROOT / "tests" / "data" / "golden_runs"
sys.path.insert(0, str(ROOT / "tests" / "data"))
from make_golden_runs import GOLDEN_WORKLOADS  # noqa: E402

WORKLOADS = {name: WorkloadInfo(name=name, **info) for name, info in GOLDEN_WORKLOADS.items()}
HOSTILE = "x|<script>alert(1)</script>{{ 7*7 }}[a](javascript:alert(1))`b`*c*_d_\n# e"


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[bool, list[str]]] = []
        self.details = 0
        self.in_cell = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.details += tag == "details"
        if tag == "tr":
            self.rows.append((self.details > 0, []))
        elif tag in ("td", "th"):
            self.rows[-1][1].append("")
            self.in_cell = True

    def handle_endtag(self, tag: str) -> None:
        self.details -= tag == "details"
        self.in_cell = self.in_cell and tag not in ("td", "th")

    def handle_data(self, data: str) -> None:
        if self.in_cell:
            self.rows[-1][1][-1] += data


def table_rows(page: str, *, collapsed: bool | None = None) -> list[list[str]]:
    """The text of each table row's cells on a page (its tables are HTML), those in a collapsible box
    alone (``collapsed``), those outside one, or all."""
    parser = _Rows()
    parser.feed(page)
    return [cells for inside, cells in parser.rows if collapsed is None or inside == collapsed]


@pytest.fixture(autouse=True)
def no_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reporter.site.build.render_svgs", lambda specs, workers=None: ['<svg class="marks"></svg>'] * len(specs))


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no imagebench.toml: default comparisons
    return tmp_path


def copy_runs(dest: Path, labels: dict[str, str] | None = None) -> Path:
    """The golden archive under ``dest``, labels renamed by ``labels`` (old -> new folder name)."""
    shutil.copytree(GOLDEN_RUNS, dest)
    for old, new in (labels or {}).items():
        (dest / old).rename(dest / new)
    return dest


# ---- escaping -------------------------------------------------------------------------------


def test_md_escape_leaves_no_markdown_or_html() -> None:
    out = str(md_escape(HOSTILE))
    bare = re.sub(r"&#?\w+;", "", out.replace("<br>", ""))  # the text outside character references
    for bad in ("<", ">", "|", "`", "[", "]", "{", "}", "*", "_", "\n", "#", "&"):
        assert bad not in bare, bad
    assert "&lt;script&gt;" in out and "<br>" in out


def test_html_pre_is_one_line_of_escaped_text() -> None:
    out = str(html_pre("a\n</code></pre><script>x</script>"))
    assert out.startswith('<pre class="ib-pre"><code>') and out.count("<") == 4 and "\n" not in out


def test_messages_escape_values_but_not_the_message() -> None:
    t = Messages("en")
    out = str(t("article.summary_lead", candidate=HOSTILE, baseline="b", device="d"))
    assert out.startswith("Candidate **") and "<script>" not in out and "{{ 7*7 }}" not in out


def test_templates_escape_by_default() -> None:
    env = make_environment("en")
    text = env.from_string("{{ v }}|{{ t('verdict.better') }}").render(v=HOSTILE)
    assert "<script>" not in text and "49" not in text and text.endswith("|better")


def test_hostile_label_and_strings_are_escaped_everywhere(in_tmp: Path) -> None:
    """A label folder named like Markdown, HTML and Jinja renders as text and gets a safe file name."""
    hostile = "evil|<b>{{7*7}}"
    runs = copy_runs(in_tmp / "runs", {"golden-2.10.0": hostile})
    site = in_tmp / "site"
    result = build_site(runs, site, None, workloads=WORKLOADS, chart_workers=1)
    texts = {p: p.read_text(encoding="utf-8") for p in site.rglob("*.md")}
    assert all(p.resolve().is_relative_to(site.resolve()) for p in texts)
    joined = "\n".join(texts.values())
    assert "<b>" not in joined and "<script>" not in joined and "{{7*7}}" not in joined and "49" not in joined.split("evil")[-1][:20]
    assert "evil&#124;&lt;b&gt;&#123;&#123;7&#42;7&#125;&#125;" in joined
    assert any("evil" in r for r in result.reports)
    assert all("|" not in r and "<" not in r for r in result.reports)


# ---- generated folders ------------------------------------------------------------------------


def test_rebuild_removes_stale_pages_and_keeps_hand_written_ones(in_tmp: Path) -> None:
    site = in_tmp / "site"
    site.mkdir()
    (site / "index.md").write_text("# Hand-written\n", encoding="utf-8")
    (site / "notes.md").write_text("# Mine\n", encoding="utf-8")
    build_site(GOLDEN_RUNS, site, None, workloads=WORKLOADS)
    assert (site / "reports" / MARKER_FILE).is_file() and (site / "runs" / MARKER_FILE).is_file()
    stale = site / "reports" / "old--vs--gone.md"
    stale.write_text("stale", encoding="utf-8")
    build_site(GOLDEN_RUNS, site, None, workloads=WORKLOADS)
    assert not stale.exists()
    assert (site / "index.md").read_text(encoding="utf-8") == "# Hand-written\n"
    assert (site / "notes.md").read_text(encoding="utf-8") == "# Mine\n"
    assert GENERATED_MARKER in (site / "methodology.md").read_text(encoding="utf-8")


def test_refuses_to_delete_a_folder_it_did_not_generate(in_tmp: Path) -> None:
    site = in_tmp / "site"
    (site / "reports").mkdir(parents=True)
    (site / "reports" / "mine.md").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ReporterError, match="did not generate"):
        build_site(GOLDEN_RUNS, site, None, workloads=WORKLOADS)
    assert (site / "reports" / "mine.md").exists()


def test_refuses_to_overwrite_a_hand_written_methodology(in_tmp: Path) -> None:
    site = in_tmp / "site"
    site.mkdir()
    (site / "methodology.md").write_text("# by hand\n", encoding="utf-8")
    with pytest.raises(ReporterError, match="not generated"):
        build_site(GOLDEN_RUNS, site, None, workloads=WORKLOADS)


# ---- which comparisons --------------------------------------------------------------------------


def test_label_versions_order_by_packaging_version() -> None:
    labels = ["torch-2.10.0-cu130", "torch-2.9.0-cu128", "torch-2.9.0rc1-cu128", "torch-2.9.0-cu126"]
    assert sorted(labels, key=label_version) == [
        "torch-2.9.0rc1-cu128", "torch-2.9.0-cu126", "torch-2.9.0-cu128", "torch-2.10.0-cu130"]
    assert label_version("nightly") is None


def test_default_comparisons_chain_versions_per_device() -> None:
    archive = load_archive(GOLDEN_RUNS)
    classes = compute_device_classes(archive)
    assert [c.labels for c in classes] == [("golden-2.8.0", "golden-2.9.0", "golden-2.10.0")]
    specs = default_comparisons(classes, archive)
    assert [(s.baseline, s.candidate) for s in specs] == [("golden-2.8.0", "golden-2.9.0"), ("golden-2.9.0", "golden-2.10.0")]


def test_default_comparisons_fall_back_to_dates(in_tmp: Path) -> None:
    runs = copy_runs(in_tmp / "runs", {"golden-2.8.0": "old-stack", "golden-2.9.0": "middle", "golden-2.10.0": "new-stack"})
    classes = compute_device_classes(load_archive(runs))
    assert classes[0].labels == ("old-stack", "middle", "new-stack") and not classes[0].by_version


def test_config_declares_comparisons_titles_languages(in_tmp: Path) -> None:
    config = in_tmp / "imagebench.toml"
    config.write_text(
        '[site]\nlang = "en"\n\n'
        '[[comparison]]\nbaseline = "golden-2.8.0"\ncandidate = "golden-2.10.0@20260310T120000Z"\n'
        'title = "Two releases apart"\nlang = "zh"\n',
        encoding="utf-8",
    )
    site = in_tmp / "site"
    result = build_site(GOLDEN_RUNS, site, None, config_path=config, workloads=WORKLOADS)
    # every article is published in every language, at the same path; a title in its own language only
    assert result.reports == ["reports/golden-2.8.0--vs--golden-2.10.0-at-20260310T120000Z.md"]
    article = (site / "zh" / result.reports[0]).read_text(encoding="utf-8")
    assert article.lstrip().startswith("# Two releases apart") and "测试环境与方法" in article
    english = (site / result.reports[0]).read_text(encoding="utf-8")
    assert "Two releases apart" not in english and "Test environment and method" in english
    index = (site / "reports" / "index.md").read_text(encoding="utf-8")
    assert "imagebench.toml" in index and "Reports" in index
    assert "报告" in (site / "zh" / "reports" / "index.md").read_text(encoding="utf-8")


def test_checks_of_the_tool_are_listed_apart_from_the_answers_and_both_homes_agree(in_tmp: Path) -> None:
    """An A/A pair (one label on both sides) and a comparison declared section = "validation" go
    under "Validating imagebench", after the answers; the English and the Chinese home pages list
    the same newest answers and no check among them."""
    config = in_tmp / "imagebench.toml"
    config.write_text(
        '[[comparison]]\nbaseline = "golden-2.8.0"\ncandidate = "golden-2.9.0"\ntitle = "An upgrade"\n\n'
        '[[comparison]]\nbaseline = "golden-2.9.0@20260210T120000Z"\ncandidate = "golden-2.9.0@20260211T120000Z"\n'
        'title = "Two runs of one stack"\n\n'
        '[[comparison]]\nbaseline = "golden-2.9.0"\ncandidate = "golden-2.10.0"\ntitle = "Two collectors"\n'
        'section = "validation"\n',
        encoding="utf-8",
    )
    site = in_tmp / "site"
    build_site(GOLDEN_RUNS, site, None, config_path=config, workloads=WORKLOADS)
    index = (site / "reports" / "index.md").read_text(encoding="utf-8")
    answers, _, checks = index.partition("## Validating imagebench")
    assert "An upgrade" in answers and "Two runs of one stack" not in answers and "Two collectors" not in answers
    assert "Two runs of one stack" in checks and "Two collectors" in checks
    assert "## 验证 imagebench" in (site / "zh" / "reports" / "index.md").read_text(encoding="utf-8")
    homes = {lang: (site / folder / "index.md").read_text(encoding="utf-8") for lang, folder in (("en", "."), ("zh", "zh"))}
    for lang, home in homes.items():
        listed = re.findall(r"^- \*\*\[[^]]*\]\((reports/(?!index\.md)[^)]+)\)", home, re.M)
        assert listed == ["reports/golden-2.8.0--vs--golden-2.9.0.md"], (lang, listed)
        assert "reports/index.md#" in home  # the two checks: a link to their section
    assert "Getting a comparison" in homes["en"] and "如何得到一篇对比" in homes["zh"]


def test_a_section_other_than_comparisons_or_validation_is_refused(in_tmp: Path) -> None:
    config = in_tmp / "imagebench.toml"
    config.write_text('[[comparison]]\nbaseline = "a"\ncandidate = "b"\nsection = "misc"\n', encoding="utf-8")
    with pytest.raises(ReporterError, match=r"imagebench.toml: comparison #1 section = 'misc'; choose one of: comparisons, validation"):
        build_site(GOLDEN_RUNS, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)


def test_config_errors_name_the_file_and_key(in_tmp: Path) -> None:
    bad = in_tmp / "bad.toml"
    bad.write_text('[[comparison]]\nbaseline = "a"\ncandidate = "b"\ncolour = "red"\n', encoding="utf-8")
    with pytest.raises(ReporterError, match=r"bad\.toml.*colour"):
        load_config(bad, explicit=True)
    with pytest.raises(ReporterError, match="file not found"):
        load_config(in_tmp / "missing.toml", explicit=True)
    assert load_config(in_tmp / "missing.toml", explicit=False).comparisons == []


def test_runs_set_aside_by_the_config_are_listed_with_their_reason_and_used_nowhere(in_tmp: Path) -> None:
    config = in_tmp / "c.toml"
    config.write_text(
        '[[comparison]]\nbaseline = "golden-2.8.0"\ncandidate = "golden-2.9.0"\n\n'
        '[[set_aside]]\nruns = ["golden-2.9.0@20260211T120000Z-ffee01", "other-label@20260101T000000Z-000000"]\n'
        'reason = "recorded while a test suite loaded the host"\n\n'
        '[[set_aside]]\nruns = ["golden-2.8.0@20260110T120000Z-nosuch"]\nreason = "a typo"\n',
        encoding="utf-8",
    )
    said: list[str] = []
    site = in_tmp / "site"
    result = build_site(GOLDEN_RUNS, site, None, config_path=config, workloads=WORKLOADS, log=said.append)
    assert any("1 run(s) set aside" in line for line in said)
    # A label the archive holds with a run it does not: a typo, warned of; another archive's label: ignored.
    assert [line for line in said if "warning" in line and "set_aside" in line] == [
        f"warning: {config}: [[set_aside]] names golden-2.8.0@20260110T120000Z-nosuch, a run this archive's label does not hold"]
    index = (site / "runs" / "index.md").read_text(encoding="utf-8")
    assert "Runs set aside" in index and "recorded while a test suite loaded the host" in index
    assert "20260211T120000Z-ffee01" in index and not list(site.glob("runs/golden-2.9.0/20260211T120000Z-ffee01*"))
    article = (site / result.reports[0]).read_text(encoding="utf-8")
    assert "20260211T120000Z-ffee01" not in article and "20260210T120000Z-d4e5f6" in article
    assert "搁置的运行" in (site / "zh" / "runs" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("entry, error", [
    ('runs = ["20260211T120000Z-ffee01"]\nreason = "x"', r"c\.toml: set_aside #1 needs runs = \[\"LABEL@RUN_ID\""),
    ('runs = ["golden-2.9.0@20260211T120000Z-ffee01"]', r"set_aside #1 needs reason"),
    ('runs = ["a@b"]\nreason = "x"\nwhen = 1', r"set_aside #1 has unknown key\(s\) when"),
])
def test_a_bad_set_aside_entry_is_refused_naming_the_file(in_tmp: Path, entry: str, error: str) -> None:
    config = in_tmp / "c.toml"
    config.write_text(f"[[set_aside]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ReporterError, match=error):
        load_config(config, explicit=True)


def test_unknown_label_in_config_is_listed_not_fatal(in_tmp: Path) -> None:
    config = in_tmp / "c.toml"
    config.write_text('[[comparison]]\nbaseline = "golden-2.8.0"\ncandidate = "no-such-label"\n', encoding="utf-8")
    result = build_site(GOLDEN_RUNS, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)
    assert result.reports == [] and "no-such-label" in result.skipped[0]
    assert "no-such-label" in (in_tmp / "site" / "reports" / "index.md").read_text(encoding="utf-8")


def test_single_label_builds_archive_and_trends_and_says_how_to_compare(in_tmp: Path) -> None:
    runs = in_tmp / "runs"
    runs.mkdir()
    shutil.copytree(GOLDEN_RUNS / "golden-2.8.0", runs / "golden-2.8.0")
    site, public = in_tmp / "site", in_tmp / "public"
    result = build_site(runs, site, public, workloads=WORKLOADS)
    assert result.reports == []
    index = (site / "reports" / "index.md").read_text(encoding="utf-8")
    assert "Only one label" in index and "collector run" in index
    assert (site / "runs" / "golden-2.8.0" / "index.md").is_file() and (site / "trends" / "basic.md").is_file()
    assert (public / "reports" / "index.html").is_file()


# ---- pages and MkDocs ------------------------------------------------------------------------------


def test_methodology_lists_every_registered_workload(in_tmp: Path) -> None:
    """Generated from the real registry: a new workload needs no edit of the page."""
    registry = load_workloads()
    build_site(GOLDEN_RUNS, in_tmp / "site", None)
    text = (in_tmp / "site" / "methodology.md").read_text(encoding="utf-8")
    for name in registry:
        assert f"({md_escape(name)})" in text, name


def test_article_numbers_come_from_compare(in_tmp: Path) -> None:
    from reporter.model.compare import compare_labels

    result = build_site(GOLDEN_RUNS, in_tmp / "site", None, workloads=WORKLOADS)
    article = (in_tmp / "site" / result.reports[0]).read_text(encoding="utf-8")
    c = compare_labels(load_archive(GOLDEN_RUNS), "golden-2.8.0", "golden-2.9.0")
    assert f"{c.geomean.ratio:.3f}× [{c.geomean.ci_low:.3f}, {c.geomean.ci_high:.3f}]" in article
    shown = c.rows[c.rows["metric"] != "wall_time"]  # the host-side mirror of device times stays in the raw files
    assert f"**{int((shown['verdict'] == 'worse').sum())}** worse" in article
    row = c.rows[(c.rows["workload"] == "matmul") & (c.rows["metric"] == "time")].iloc[0]
    assert any(f"{row.ratio:.3f}× [{row.ci_low:.3f}, {row.ci_high:.3f}]" in cells for cells in table_rows(article))
    for name in ("environment.parquet", "cases.parquet", "samples.parquet"):
        assert (in_tmp / "site" / "runs" / "golden-2.8.0" / "20260110T120000Z-a1b2c3" / name).is_file()


def test_mkdocs_build_strict_passes_in_both_languages(in_tmp: Path) -> None:
    """One build publishes every language: the root one at public/, the other under public/<lang>/."""
    for root, other in (("en", "zh"), ("zh", "en")):
        public = in_tmp / f"public-{root}"
        build_site(GOLDEN_RUNS, in_tmp / "site", public, lang=root, workloads=WORKLOADS)
        for lang, folder in ((root, public), (other, public / other)):
            html = (folder / "reports" / "golden-2.8.0--vs--golden-2.9.0" / "index.html").read_text(encoding="utf-8")
            assert f'<html lang="{lang}"' in html
            assert (folder / "search" / "search_index.json").is_file()
            assert (folder / "runs" / "golden-2.8.0" / "20260110T120000Z-a1b2c3" / "samples.parquet").is_file()
        # the language switcher leads to the same page in the other language
        html = (public / "reports" / "golden-2.8.0--vs--golden-2.9.0" / "index.html").read_text(encoding="utf-8")
        assert f'href="../../{other}/reports/golden-2.8.0--vs--golden-2.9.0/" hreflang="{other}"' in html
        html = (public / other / "reports" / "golden-2.8.0--vs--golden-2.9.0" / "index.html").read_text(encoding="utf-8")
        assert f'href="../../../reports/golden-2.8.0--vs--golden-2.9.0/" hreflang="{root}"' in html
        # the 404 pages (served at any missing path) link from the site's root, never to //zh/
        for page in (public / "404.html", public / other / "404.html"):
            html = page.read_text(encoding="utf-8")
            assert f'href="/{other}/" hreflang="{other}"' in html and f'href="/" hreflang="{root}"' in html
            assert 'href="//' not in html
    index = json.loads((in_tmp / "public-en" / "zh" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert any("\u200b" in doc["text"] for doc in index["docs"]), "Chinese text is segmented (jieba) for search"


def test_cli_build_runs_as_a_user_runs_it(in_tmp: Path) -> None:
    runs = in_tmp / "runs"  # one label: no article, no chart, so the subprocess stays quick
    shutil.copytree(GOLDEN_RUNS / "golden-2.8.0", runs / "golden-2.8.0")
    proc = subprocess.run(
        [sys.executable, "-m", "reporter", "build", "--runs", "runs", "--site", "site", "--no-mkdocs"],
        capture_output=True, text=True, cwd=in_tmp, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 reports" in proc.stdout and (in_tmp / "site" / "runs" / "golden-2.8.0" / "index.md").is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "reporter", "build", "--runs", str(in_tmp / "nope"), "--site", "site", "--no-mkdocs"],
        capture_output=True, text=True, cwd=in_tmp, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_comparison_spec_slug_is_a_safe_file_name() -> None:
    spec = ComparisonSpec("a/../b", "c@20260101T000000Z-abcdef")
    assert "/" not in spec.slug and ".." not in spec.slug.replace("--", "")


def test_hostile_device_name_never_closes_the_page_title(in_tmp: Path) -> None:
    """MkDocs puts the H1 into <title> through striptags, which unescapes: titles carry no angle brackets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = copy_runs(in_tmp / "runs")
    for env_file in runs.glob("*/*/environment.parquet"):  # every run: they stay one device class
        table = pq.read_table(env_file)
        values = [
            "</title><script>alert(1)</script>" if (s, k) == ("gpu0", "name") else v
            for s, k, v in zip(*(table.column(c).to_pylist() for c in ("section", "key", "value")))
        ]
        table = table.set_column(table.schema.get_field_index("value"), "value", pa.array(values, pa.string()))
        pq.write_table(table, env_file)
    public = in_tmp / "public"
    result = build_site(runs, in_tmp / "site", public, workloads=WORKLOADS)
    assert len(result.reports) == 2
    for html in public.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert "<script>alert" not in text, html
        assert text.count("</title>") <= 1, html


def test_every_english_string_has_a_chinese_one() -> None:
    from reporter.present.messages import load_messages as _load_messages

    def keys(table: dict, prefix: str = "") -> set[str]:
        out = set()
        for k, v in table.items():
            out |= keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
        return out

    missing = keys(_load_messages("en")) - keys(_load_messages("zh"))
    assert not missing, f"missing from reporter/present/i18n/zh.toml: {sorted(missing)}"


def test_hardware_names_are_not_versions_and_failed_comparisons_are_explained(in_tmp: Path) -> None:
    assert label_version("h200-micro-check") is None and label_version("a100-cu124") is None
    assert label_version("torch-2.11.0-cu130") > label_version("torch-2.9.0-cu130")
    runs = copy_runs(in_tmp / "runs", {"golden-2.8.0": "h200-check"})
    shutil.rmtree(runs / "golden-2.9.0")
    shutil.rmtree(runs / "golden-2.10.0")
    other = runs / "other-run"  # a second label that measured nothing in common
    shutil.copytree(GOLDEN_RUNS / "golden-2.10.0", other)
    import pyarrow.parquet as pq

    for f in other.glob("*/cases.parquet"):
        table = pq.read_table(f)
        pq.write_table(table.set_column(0, "case_id", table.column("case_id").cast("string")).slice(0, 0)
                       .replace_schema_metadata(table.schema.metadata), f)
    result = build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    index = (in_tmp / "site" / "reports" / "index.md").read_text(encoding="utf-8")
    assert result.reports == [] and "no comparison between them could be built" in index


# ---- building in proportion to what changed (reporter.data.cache) ---------------------------------


def _pages(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def _count_articles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import reporter.site.build as build

    computed: list[str] = []
    real = build.compute_article

    def counting(archive, spec, **kwargs):
        computed.append(f"{spec.baseline}->{spec.candidate}")
        return real(archive, spec, **kwargs)

    monkeypatch.setattr(build, "compute_article", counting)
    return computed


def test_an_unchanged_rebuild_computes_no_article_and_writes_the_same_pages(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    runs = copy_runs(in_tmp / "runs")
    first = build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    pages = _pages(in_tmp / "site")
    computed = _count_articles(monkeypatch)
    again = build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    assert computed == [] and again.pages == first.pages
    assert _pages(in_tmp / "site") == pages


def test_only_the_articles_whose_inputs_changed_are_computed_again(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    runs = copy_runs(in_tmp / "runs")
    config = in_tmp / "imagebench.toml"
    specs = [("golden-2.8.0", "golden-2.9.0", "Old"), ("golden-2.9.0", "golden-2.10.0", "New")]
    config.write_text("".join(f'[[comparison]]\nbaseline = "{b}"\ncandidate = "{c}"\ntitle = "{t}"\n\n' for b, c, t in specs),
                      encoding="utf-8")
    build_site(runs, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)
    computed = _count_articles(monkeypatch)
    # One article's specification changes: that article only.
    config.write_text(config.read_text(encoding="utf-8").replace('title = "New"', 'title = "Newer"'), encoding="utf-8")
    build_site(runs, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)
    assert computed == ["golden-2.9.0->golden-2.10.0"]  # once, then said in each language
    # A run changes, is added or goes: every article that reads it (here: all, through the
    # device's borrow pool), and the pages are those of a build without the cache.
    computed.clear()
    run = next((runs / "golden-2.10.0").iterdir())
    table = pq.read_table(run / "samples.parquet")
    pq.write_table(table.slice(0, table.num_rows // 2), run / "samples.parquet")
    build_site(runs, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)
    assert sorted(set(computed)) == ["golden-2.8.0->golden-2.9.0", "golden-2.9.0->golden-2.10.0"]
    computed.clear()
    shutil.rmtree(run)
    build_site(runs, in_tmp / "site", None, config_path=config, workloads=WORKLOADS)
    assert "golden-2.8.0->golden-2.9.0" in computed
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "fresh-cache"))
    build_site(runs, in_tmp / "site-fresh", None, config_path=config, workloads=WORKLOADS)
    assert _pages(in_tmp / "site") == _pages(in_tmp / "site-fresh")



def test_a_new_run_recomputes_the_articles_that_read_it_and_no_other(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch, no_svg: None) -> None:
    """An article reads its two sides; one that borrowed run-level variance (a side of one
    run) also reads every run on its device. A new run elsewhere leaves the others alone."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_scale", ROOT / "benchmarks" / "site_scale.py")
    site_scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_scale)
    site_scale.write_archive(in_tmp / "all", 5, 12)  # runs per label 3, 3, 2, 2, 2; one device
    label = [f"scale-2.{i}.0" for i in range(5)]
    held = {(i, sorted((in_tmp / "all" / label[i]).iterdir())[n]) for i, n in
            ((0, 2), (1, 2), (2, 1), (3, 1), (4, 0), (4, 1))}
    runs = in_tmp / "runs"
    shutil.copytree(in_tmp / "all", runs)
    for i, run in held:
        shutil.rmtree(runs / label[i] / run.name)
    shutil.rmtree(runs / label[4])
    config = in_tmp / "imagebench.toml"  # 2 runs a side; 1 run a side: borrows on the device
    config.write_text(f'[[comparison]]\nbaseline = "{label[0]}"\ncandidate = "{label[1]}"\n\n'
                      f'[[comparison]]\nbaseline = "{label[2]}"\ncandidate = "{label[3]}"\n', encoding="utf-8")
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    computed = _count_articles(monkeypatch)
    build_site(runs, in_tmp / "site", None, config_path=config, languages=["en"])
    assert sorted(computed) == [f"{label[0]}->{label[1]}", f"{label[2]}->{label[3]}"]

    def add(i: int, n: int) -> None:
        run = sorted((in_tmp / "all" / label[i]).iterdir())[n]
        shutil.copytree(run, runs / label[i] / run.name)

    computed.clear()
    add(4, 0)  # a run of a label no article compares, on the device
    build_site(runs, in_tmp / "site", None, config_path=config, languages=["en"])
    assert computed == [f"{label[2]}->{label[3]}"]  # the one that borrows
    computed.clear()
    add(1, 2)  # a third run of a side
    build_site(runs, in_tmp / "site", None, config_path=config, languages=["en"])
    assert sorted(computed) == [f"{label[0]}->{label[1]}", f"{label[2]}->{label[3]}"]
    computed.clear()
    build_site(runs, in_tmp / "site", None, config_path=config, languages=["en"])
    assert computed == []
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "fresh-cache"))
    build_site(runs, in_tmp / "site-fresh", None, config_path=config, languages=["en"])
    assert _pages(in_tmp / "site") == _pages(in_tmp / "site-fresh")


def test_pages_whose_inputs_are_unchanged_are_not_rendered_again(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    import reporter.site.build as build

    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    runs = copy_runs(in_tmp / "runs")
    first = build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    rendered: list[str] = []
    real = build.render_page

    def counting(template, view, lang, **kwargs):
        rendered.append(template)
        return real(template, view, lang, **kwargs)

    monkeypatch.setattr(build, "render_page", counting)
    build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    # Only the small pages that read the whole archive are rendered again: no article, run or trends page.
    assert rendered and not {"article.md.j2", "run.md.j2", "trends_index.md.j2", "trends_family.md.j2"} & set(rendered)
    assert len(rendered) < len(first.pages) / 2
    # A run changes: its page in each language, the articles and trends that read it; not the other runs' pages.
    rendered.clear()
    run = next((runs / "golden-2.10.0").iterdir())
    table = pq.read_table(run / "samples.parquet")
    pq.write_table(table.slice(0, table.num_rows // 2), run / "samples.parquet")
    build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    n_runs = sum(1 for label in runs.iterdir() for _ in label.iterdir())
    assert rendered.count("run.md.j2") == 2 < 2 * n_runs
    assert "article.md.j2" in rendered and "trends_index.md.j2" in rendered
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "fresh-cache"))
    build_site(runs, in_tmp / "site-fresh", None, workloads=WORKLOADS)
    assert _pages(in_tmp / "site") == _pages(in_tmp / "site-fresh")

def test_a_corrupt_article_entry_is_computed_again(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reporter.data import cache

    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    runs = copy_runs(in_tmp / "runs")
    build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    pages = _pages(in_tmp / "site")
    entries = sorted((in_tmp / "cache" / f"reporter-v{cache.FORMAT}" / "articles").glob("*.pickle"))
    assert entries
    entries[0].write_bytes(entries[0].read_bytes()[:50])
    computed = _count_articles(monkeypatch)
    build_site(runs, in_tmp / "site", None, workloads=WORKLOADS)
    assert len(computed) == 1  # the one article, computed once for both languages
    assert _pages(in_tmp / "site") == pages


def test_mkdocs_runs_only_when_the_site_sources_or_the_public_folder_changed(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "cache"))
    public, said = in_tmp / "public", []
    build_site(GOLDEN_RUNS, in_tmp / "site", public, workloads=WORKLOADS, languages=["en"], log=said.append)
    page = public / "reports" / "golden-2.8.0--vs--golden-2.9.0" / "index.html"
    first = page.read_bytes()
    build_site(GOLDEN_RUNS, in_tmp / "site", public, workloads=WORKLOADS, languages=["en"], log=said.append)
    assert any("mkdocs not run" in s for s in said) and page.read_bytes() == first
    said.clear()
    (in_tmp / "site" / "notes.md").write_text("# Mine\n", encoding="utf-8")  # a hand-written page: new input
    build_site(GOLDEN_RUNS, in_tmp / "site", public, workloads=WORKLOADS, languages=["en"], log=said.append)
    assert not any("mkdocs not run" in s for s in said) and (public / "notes" / "index.html").is_file()
    said.clear()
    page.unlink()  # the public folder changed since: built again
    build_site(GOLDEN_RUNS, in_tmp / "site", public, workloads=WORKLOADS, languages=["en"], log=said.append)
    assert not any("mkdocs not run" in s for s in said) and page.read_bytes() == first


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_articles_computed_in_other_processes_are_those_of_the_serial_build(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, start: str,
) -> None:
    """Forked children compute from the archive they inherit, spawned ones read it again: the same pages."""
    import multiprocessing

    import reporter.site.build as build

    if start not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {start} here")

    runs = copy_runs(in_tmp / "runs")
    config = in_tmp / "imagebench.toml"
    specs = [("golden-2.8.0", "golden-2.9.0", "Old"), ("golden-2.9.0", "golden-2.10.0", "New"),
             ("golden-2.8.0", "golden-2.10.0", "Both")]
    config.write_text("".join(f'[[comparison]]\nbaseline = "{b}"\ncandidate = "{c}"\ntitle = "{t}"\n\n' for b, c, t in specs),
                      encoding="utf-8")
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "serial-cache"))
    build_site(runs, in_tmp / "serial", None, config_path=config, workloads=WORKLOADS, chart_workers=1)
    monkeypatch.setattr(build, "PARALLEL_ARTICLES", 2)
    monkeypatch.setattr(build, "_article_context", lambda: multiprocessing.get_context(start))
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(in_tmp / "parallel-cache"))
    if start == "fork":  # a forked child reads nothing again
        parent, load = os.getpid(), build.load_archive

        def load_in_parent_only(*args: Any, **kwargs: Any) -> Any:
            assert os.getpid() == parent, "a forked child read the archive again"
            return load(*args, **kwargs)

        monkeypatch.setattr(build, "load_archive", load_in_parent_only)
    computed = _count_articles(monkeypatch)
    build_site(runs, in_tmp / "parallel", None, config_path=config, workloads=WORKLOADS, chart_workers=2)
    assert computed == []  # every article came from a child process
    assert _pages(in_tmp / "parallel") == _pages(in_tmp / "serial")


def test_a_label_is_summarised_from_the_runs_of_its_latest_timing_method(in_tmp: Path, no_svg: None) -> None:
    """A label whose runs were timed two ways pools one: its latest run's method; the trends say so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = copy_runs(in_tmp / "runs")
    path = runs / "golden-2.9.0" / "20260211T120000Z-ffee01" / "environment.parquet"
    table = pq.read_table(path)
    frame = table.to_pandas()
    row = {c: None for c in frame.columns} | {"section": "run", "key": "timing_method", "value": "4"}
    for c in frame.columns:  # the other columns keep the run's own values
        if row[c] is None:
            row[c] = frame[c].iloc[0]
    frame.loc[len(frame)] = row
    pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False), path)

    archive = load_archive(runs)
    (cls,) = compute_device_classes(archive)
    assert cls.set_aside == (("golden-2.9.0", 1),)
    assert "20260210T120000Z-d4e5f6" not in cls.run_ids and "20260211T120000Z-ffee01" in cls.run_ids
    assert all(s.run_ids == cls.run_ids for s in default_comparisons([cls], archive))
    site = in_tmp / "site"
    build_site(runs, site, None, workloads=WORKLOADS)
    trends = "\n".join(p.read_text(encoding="utf-8") for p in (site / "trends").glob("*.md"))
    assert "older timing method" in trends and "golden-2.9.0 (1)" in trends


def test_run_and_trend_pages_show_the_estimate_their_interval_is_about(in_tmp: Path) -> None:
    # As an older collector recorded a short matmul on an H100: one process took 200 blocks at
    # 11 µs, the other two 15 blocks at 6.4-6.5 µs. The pooled median (11 µs) lies at the edge of
    # the process-based CI; the estimate (the geometric mean of the process medians, 7.7 µs) is
    # what the interval and the comparisons are about, and what the pages must show.
    from test_reporter_support import run_id, write_run

    case = "matmul[dtype=bf16,n=1024]"
    jitter = [1 + 0.002 * ((k % 7) - 3) for k in range(200)]
    runs = in_tmp / "runs"
    for i, label in enumerate(("golden-2.8.0", "golden-2.9.0")):
        write_run(runs, label, {case: [[11e-6 * j for j in jitter], [6.4e-6 * j for j in jitter[:15]],
                                       [6.5e-6 * j for j in jitter[:15]]]}, run_id=run_id(i))
    site = in_tmp / "site"
    build_site(runs, site, None, workloads=WORKLOADS, languages=["en"])
    estimate = (11 * 6.4 * 6.5) ** (1 / 3)
    run_page = next((site / "runs" / "golden-2.8.0").glob("*/index.md")).read_text(encoding="utf-8")
    rows = table_rows(run_page)
    row = next(cells for cells in rows if cells[0].startswith("matmul "))
    assert any("Estimate" in cells and cells[cells.index("Estimate") + 1] == "95% CI" for cells in rows)
    assert f"{estimate:.2f} µs" in row and "11.0 µs" not in " ".join(row)
    trend = (site / "trends" / "basic.md").read_text(encoding="utf-8")
    table = [cells for cells in table_rows(trend, collapsed=False) if cells[0].startswith("matmul ")]
    # The chart's data table (in its collapsed box), not the neighbouring versions' table.
    chart_data = [cells for cells in table_rows(trend, collapsed=True) if cells[0].startswith("golden-2.")]
    assert len(table) == 1 and " | ".join(table[0]).count(f"{estimate:.2f} µs [") == 2
    assert len(chart_data) == 2 and all(f"{estimate:.2f} µs" in cells for cells in chart_data)
    assert "11.0 µs" not in trend


@pytest.mark.parametrize("second_method", ["4", None])
def test_trends_mark_no_change_between_labels_timed_by_different_methods(in_tmp: Path, second_method: str | None) -> None:
    # The second label is 30% faster, far beyond noise. Timed the same way the trend marks it
    # ▲; timed by another collector method it must not, and the page says why.
    from test_reporter_support import lognormal_processes, run_id, write_run

    import numpy as np

    rng = np.random.default_rng(5)
    runs = in_tmp / "runs"
    for i, (label, center, method) in enumerate((("golden-2.8.0", 10e-6, "4"), ("golden-2.9.0", 7e-6, second_method))):
        env = {("run", "timing_method"): method} if method else {}
        write_run(runs, label, {"matmul[dtype=bf16,n=1024]": lognormal_processes(rng, 4, 20, center, 0.01, 0.005)},
                  run_id=run_id(i), environment=env)
    site = in_tmp / "site"
    build_site(runs, site, None, workloads=WORKLOADS, languages=["en"])
    trend = (site / "trends" / "basic.md").read_text(encoding="utf-8")
    row = " | ".join(next(cells for cells in table_rows(trend) if cells[0].startswith("matmul ")))
    if second_method == "4":
        assert "▲" in row and "different collector methods" not in trend
    else:
        assert "▲" not in row and "▼" not in row
        assert "golden-2.8.0 → golden-2.9.0 (timing method 4 against legacy" in trend
