"""The MkDocs configuration of each language's build (reporter.site.site_config), without running MkDocs,
and how declared comparisons become one article per comparison with a title per language."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.site.build import _articles, _languages
from reporter.article.config import ComparisonSpec
from reporter.errors import ReporterError
from reporter.site.site_config import LanguageBuild, build_public, language_prefix, mkdocs_overrides, site_nav

BASE = Path(__file__).resolve().parent.parent / "mkdocs.yml"


def test_each_language_gets_its_theme_language_folders_and_a_switcher(tmp_path: Path) -> None:
    en = mkdocs_overrides("en", docs_dir=tmp_path / "site", site_dir=tmp_path / "public", base=BASE,
                          languages=["en", "zh"], root_lang="en", nav=["index.md"])
    zh = mkdocs_overrides("zh", docs_dir=tmp_path / "site" / "zh", site_dir=tmp_path / "public-zh", base=BASE,
                          languages=["en", "zh"], root_lang="en")
    assert en["theme"]["language"] == "en" and zh["theme"]["language"] == "zh"
    assert en["theme"]["custom_dir"] == zh["theme"]["custom_dir"] and Path(en["theme"]["custom_dir"], "partials",
                                                                           "alternate.html").is_file()
    assert en["exclude_docs"] == "/zh/\n" and "exclude_docs" not in zh  # the root build leaves zh/ to its own
    assert en["nav"] == ["index.md"] and "nav" not in zh
    # switcher links: the other language's root, relative to this build's root
    assert {a["lang"]: a["link"] for a in en["extra"]["alternate"]} == {"en": "", "zh": "zh/"}
    assert {a["lang"]: a["link"] for a in zh["extra"]["alternate"]} == {"en": "../", "zh": ""}
    assert [a["name"] for a in zh["extra"]["alternate"]] == ["English", "中文"]
    assert Path(en["INHERIT"]) == BASE.resolve()


def test_a_chinese_root_puts_english_under_en() -> None:
    assert language_prefix("zh", "zh") == "" and language_prefix("en", "zh") == "en/"
    assert _languages("zh", None) == ("zh", "en")
    assert _languages("en", ["en"]) == ("en",)
    with pytest.raises(ReporterError, match="'fr'"):
        _languages("en", ["en", "fr"])


def test_one_language_needs_no_switcher(tmp_path: Path) -> None:
    only = mkdocs_overrides("en", docs_dir=tmp_path, site_dir=tmp_path / "p", base=BASE, languages=["en"], root_lang="en")
    assert only["extra"] == {} and "exclude_docs" not in only


def test_navigation_sections_are_titled_in_the_build_language() -> None:
    nav = site_nav({"reports": "报告", "runs": "运行记录", "trends": "趋势", "methodology": "方法"},
                   ["reports/a.md"], ["runs/x/index.md"], ["trends/basic.md"])
    assert nav == ["index.md", {"报告": ["reports/index.md", "reports/a.md"]},
                   {"运行记录": ["runs/index.md", "runs/x/index.md"]}, {"趋势": ["trends/index.md", "trends/basic.md"]},
                   {"方法": "methodology.md"}]


def test_a_comparison_declared_per_language_is_one_article_with_two_titles() -> None:
    specs = [ComparisonSpec("a", "b", title="B against A"), ComparisonSpec("a", "b", title="B 对比 A", lang="zh"),
             ComparisonSpec("a", "c", title="只有中文标题", lang="zh"), ComparisonSpec("b", "c")]
    articles = _articles(specs, "en")
    assert [(s.baseline, s.candidate, s.lang, s.title) for s, _ in articles] == [
        ("a", "b", None, None), ("a", "c", None, None), ("b", "c", None, None)]
    assert [titles for _, titles in articles] == [{"en": "B against A", "zh": "B 对比 A"}, {"zh": "只有中文标题"}, {}]
    assert articles[0][0].slug == "a--vs--b"  # the same page name in every language


def test_a_failed_build_names_the_language(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "zh").mkdir(parents=True)
    (site / "index.md").write_text("# home\n", encoding="utf-8")  # no zh/index.md is fine; a broken link is not
    (site / "zh" / "index.md").write_text("# 首页\n\n[坏链接](missing.md)\n", encoding="utf-8")
    with pytest.raises(ReporterError, match="the zh pages"):
        build_public(site, tmp_path / "public", [LanguageBuild("en", ["index.md"]), LanguageBuild("zh", ["index.md"])],
                     root_lang="en", base_config=BASE)
    assert not (tmp_path / "public" / "zh").exists()


def test_the_checks_of_the_tool_are_a_section_of_reports_after_the_answers() -> None:
    titles = {"reports": "Reports", "validation": "Validating imagebench", "runs": "Runs", "trends": "Trends",
              "methodology": "Methodology"}
    nav = site_nav(titles, ["reports/a.md"], ["runs/x.md"], ["trends/t.md"], validation_pages=["reports/aa.md"])
    assert nav[1] == {"Reports": ["reports/index.md", "reports/a.md", {"Validating imagebench": ["reports/aa.md"]}]}
    assert site_nav(titles, ["reports/a.md"], [], [])[1] == {"Reports": ["reports/index.md", "reports/a.md"]}
