"""The site as a reader sees it: built for real, served on 127.0.0.1, opened in headless Chromium.

Skipped (with the reason) only when Chromium is not installed at /usr/bin/chromium
(``scripts/setup.sh --test`` installs it). One site, English and Chinese, is built for the
module; each article is opened at 1400 px (every table fits the content column) and at
400 px (the page never scrolls sideways), and a full-page screenshot of each, in each
language, is saved under artifacts/ (git-ignored) for review.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import socketserver
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_RUNS = ROOT / "tests" / "data" / "golden_runs"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ARTICLE = "reports/golden-2.8.0--vs--golden-2.9.0/"
FAILED_RUN = "runs/golden-2.9.0/20260210T120000Z-d4e5f6/"
WIDE, PHONE = 1400, 400

pytestmark = [pytest.mark.slow, pytest.mark.browser]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass


@dataclass(frozen=True)
class Site:
    url: str
    public: Path
    articles: tuple[str, ...]  # reports/<slug>/ of every article (each exists in every language)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    from make_golden_runs import GOLDEN_WORKLOADS

    from reporter.site.build import build_site
    from reporter.present.views import WorkloadInfo

    tmp = tmp_path_factory.mktemp("browser-site")
    workloads = {name: WorkloadInfo(name=name, **info) for name, info in GOLDEN_WORKLOADS.items()}
    cwd = os.getcwd()
    os.chdir(tmp)  # no imagebench.toml here: the default comparisons of the fixture runs
    try:
        result = build_site(GOLDEN_RUNS, tmp / "site", tmp / "public", workloads=workloads)
    finally:
        os.chdir(cwd)
    articles = tuple(page.removesuffix(".md") + "/" for page in result.reports)
    handler = functools.partial(_QuietHandler, directory=str(tmp / "public"))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}/", tmp / "public", articles)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site_url(site: Site) -> str:
    return site.url


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(browser: object, url: str, width: int = WIDE) -> tuple[object, list[str]]:
    """A page at ``url`` with every console error, page error, failed request and dialog collected."""
    page = browser.new_page(viewport={"width": width, "height": 1000})  # type: ignore[attr-defined]
    problems: list[str] = []
    # A bare SVG document has no <link rel=icon>, so the browser asks for /favicon.ico: not the site's fault.
    icon = "/favicon.ico"
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" and icon not in (m.location or {}).get("url", "") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}") if not r.url.endswith(icon) else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}")
            if r.status >= 400 and not r.url.endswith(icon) else None)
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page, problems


def test_article_renders_tables_and_charts(browser: object, site_url: str) -> None:
    page, problems = open_page(browser, site_url + ARTICLE)
    assert "golden-2.9.0 against golden-2.8.0" in page.title()
    assert page.locator("article table").count() >= 10
    assert page.locator("article table").first.locator("tbody tr").count() >= 5
    charts = page.locator("article img[src$='.svg']")
    assert charts.count() >= 4
    for i in range(charts.count()):
        assert charts.nth(i).evaluate("img => img.complete && img.naturalWidth > 0"), f"chart {i} did not load"
    assert charts.first.bounding_box()["width"] > 200
    # Each chart is an SVG document drawn by Vega: open one and count its marks.
    svg_url = charts.first.evaluate("img => img.src")
    chart_page, chart_problems = open_page(browser, svg_url)
    assert chart_page.locator("svg").count() >= 1
    assert chart_page.locator("svg .role-mark path, svg .role-mark line").count() >= 5, "the chart has no marks"
    assert chart_problems == []
    for heading in ("1. Test environment and method", "2. Basic operations", "Conclusion and advice", "How to reproduce"):
        assert page.get_by_role("heading", name=heading).count() >= 1, heading
    assert problems == []


# The content column, and every table in it that is shown (a collapsed details box shows none).
_TABLE_WIDTHS = """() => {
  const column = document.querySelector('article.md-content__inner').getBoundingClientRect().width;
  const tables = [...document.querySelectorAll('article table')]
    .map(t => ({width: t.getBoundingClientRect().width, head: t.rows[0] ? t.rows[0].innerText.slice(0, 80) : ''}))
    .filter(t => t.width > 0);
  return {column, tables};
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_article_fits_the_column_and_is_kept_as_a_screenshot(browser: object, site: Site, lang: str) -> None:
    """At 1400 px no table is wider than the content column; one full-page screenshot per article."""
    ARTIFACTS.mkdir(exist_ok=True)
    prefix = "" if lang == "en" else f"{lang}/"
    for article in site.articles:
        page, problems = open_page(browser, site.url + prefix + article)
        assert page.evaluate("document.documentElement.lang").startswith(lang)
        widths = page.evaluate(_TABLE_WIDTHS)
        assert widths["tables"], article
        too_wide = [t for t in widths["tables"] if t["width"] > widths["column"] + 1]
        assert not too_wide, f"{lang}/{article}: tables wider than the {widths['column']:.0f} px column: {too_wide}"
        name = article.strip("/").split("/")[-1]
        page.screenshot(path=str(ARTIFACTS / f"site-{lang}-{name}.png"), full_page=True)
        assert problems == []
        page.close()


@pytest.mark.parametrize("path", [ARTICLE, "zh/" + ARTICLE, "", "zh/", FAILED_RUN, "zh/methodology/"])
def test_a_phone_never_scrolls_sideways(browser: object, site: Site, path: str) -> None:
    """At 400 px the page is as wide as the screen: wide tables scroll inside their own box."""
    page, problems = open_page(browser, site.url + path, width=PHONE)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{path or 'home'} scrolls {overflow} px sideways at {PHONE} px"
    assert problems == []
    page.close()


def test_chart_text_is_never_cut_or_numbered(browser: object, site: Site) -> None:
    """Every chart of the site (both languages): legends and labels whole, no "…", "..." or "#1"."""
    svgs = sorted(site.public.rglob("charts/*.svg"))
    assert len(svgs) >= 8 and any("/zh/" in str(p) for p in svgs)
    for svg in svgs:
        texts = [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg.read_text("utf-8"), re.S)]
        assert texts, svg
        bad = [t for t in texts if "…" in t or "..." in t or re.search(r"#\d", t)]
        assert not bad, f"{svg.name}: {bad}"
    # and as the browser shows one: the legend names both stacks in full
    page, problems = open_page(browser, site.url + ARTICLE)
    srcs = page.locator("article img[src$='.svg']").evaluate_all("imgs => imgs.map(i => i.src)")
    chart_text = ""
    for url in srcs:
        chart, chart_problems = open_page(browser, url)
        chart_text += chart.locator("svg").first.evaluate("svg => svg.textContent")
        assert chart_problems == []
        chart.close()
    assert "golden-2.8.0" in chart_text and "golden-2.9.0" in chart_text
    assert problems == []


_TEXT_OUTSIDE = """() => {
  const box = document.querySelector('svg').getBoundingClientRect();
  return [...document.querySelectorAll('svg text')].map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5
                                       || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5))
    .map(([text, r]) => `${text} (${r.left.toFixed(1)}..${r.right.toFixed(1)} of ${box.left}..${box.right})`);
}"""


def test_every_chart_text_lies_inside_its_chart_as_the_browser_draws_it(browser: object, site: Site) -> None:
    """vl-convert lays the labels out; Chromium draws them. Every label of every chart, in both
    languages, lies inside the chart's SVG (an SVG shown as an image cuts what lies outside)."""
    svgs = sorted(site.public.rglob("charts/*.svg"))
    assert any("/zh/" in str(p) for p in svgs)
    outside = []
    for svg in svgs:
        page, problems = open_page(browser, site.url + str(svg.relative_to(site.public)))
        outside += [f"{svg.relative_to(site.public)}: {t}" for t in page.evaluate(_TEXT_OUTSIDE)]
        assert problems == []
        page.close()
    assert not outside, "\n".join(outside)


@pytest.mark.parametrize("cases", [
    ["ResNet-50 训练 ResNet-50, 224², 批次 256, NCHW", "BERT 训练 BERT-base, 批次 8 × 序列 512", "卷积 16×64×224², bf16, NCHW, 前向"],
    ["ResNet-50 training ResNet-50, 224², batch 256, NCHW", "matmul 4096×4096, fp32-strict", "DataLoader 4 workers, pinned"],
])
def test_the_longest_labels_fit_their_chart(browser: object, site: Site, cases: list[str]) -> None:
    """A ratio chart whose longest labels mix Chinese and Latin text (drawn in two font runs,
    a little wider than vl-convert measures them): still inside the chart."""
    from reporter.present.charts import chart_ratios, render_svg

    rows = [{"case": c, "ratio": 1.0 + i / 10, "ci_low": 0.9, "ci_high": 1.3, "verdict": "better"} for i, c in enumerate(cases)]
    svg = render_svg(chart_ratios(rows, x_title="ratio", verdict_names={"better": "better"}))
    page = browser.new_page(viewport={"width": 900, "height": 600})  # type: ignore[attr-defined]
    page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
    outside = page.evaluate(_TEXT_OUTSIDE)
    page.close()
    assert not outside, outside


def test_chinese_pages_are_chinese_and_search_finds_chinese_words(browser: object, site: Site) -> None:
    page, problems = open_page(browser, site.url + "zh/" + ARTICLE)
    assert page.evaluate("document.documentElement.lang").startswith("zh")
    assert page.locator("input.md-search__input").get_attribute("placeholder") == "搜索"
    assert "目录" in page.locator(".md-sidebar--secondary").inner_text()  # the table of contents
    assert "报告" in page.locator(".md-tabs").inner_text()  # the navigation
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    # Chinese characters are typed as text input without key events, and Material searches
    # on key events: a key press after them starts the search.
    box.press_sequentially("矩阵", delay=30)
    box.press("End")
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15000)
    assert results.count() >= 1
    assert "矩阵" in page.locator(".md-search-result").inner_text()
    assert problems == []


def test_the_language_switcher_leads_to_the_same_page(browser: object, site: Site) -> None:
    page, problems = open_page(browser, site.url + ARTICLE)
    page.goto(page.locator("a.md-select__link[hreflang='zh']").evaluate("a => a.href"))
    assert page.url == site.url + "zh/" + ARTICLE
    assert page.evaluate("document.documentElement.lang").startswith("zh")
    assert page.locator("a.md-select__link[hreflang='en']").evaluate("a => a.href") == site.url + ARTICLE
    assert problems == []


def test_search_answers_a_query(browser: object, site_url: str) -> None:
    page, problems = open_page(browser, site_url)
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    box.press_sequentially("reproduce", delay=30)  # Material searches on key events, not on fill()
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15000)
    assert results.count() >= 1
    assert "reproduce" in page.locator(".md-search-result").inner_text().lower()
    assert problems == []


def test_hostile_run_strings_stay_text(browser: object, site_url: str) -> None:
    """The fixture's error text holds <script>, a Markdown link and {{ 7*7 }}: all shown as text."""
    page, problems = open_page(browser, site_url + FAILED_RUN)
    text = page.locator("article").inner_text()
    assert "<script>alert(1)</script>" in text and "{{ 7*7 }}" in text and "[x](javascript:alert(1))" in text
    assert page.locator("article script").count() == 0
    assert page.locator("article a[href^='javascript']").count() == 0
    host = page.locator("article").inner_text()
    assert "49" not in host.split("boom")[1][:40]
    assert problems == []


@pytest.mark.parametrize("path", ["", "reports/", "runs/", "runs/golden-2.9.0/", "trends/", "trends/basic/", "methodology/",
                                  "guide/", "guide/recording/", "zh/guide/reading/"])
def test_every_index_page_loads_cleanly(browser: object, site_url: str, path: str) -> None:
    page, problems = open_page(browser, site_url + path)
    assert page.locator("article h1").count() == 1
    assert problems == []
    if os.environ.get("IMAGEBENCH_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "artifacts" / f"site-{path.strip('/').replace('/', '-') or 'home'}.png"))
