"""The site as a reader sees it: built for real, served on 127.0.0.1, opened in headless Chromium.

Skipped (with the reason) only when Chromium is not installed at /usr/bin/chromium.
A screenshot of the article is saved under artifacts/ (git-ignored).
"""

from __future__ import annotations

import functools
import http.server
import os
import socketserver
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_RUNS = ROOT / "tests" / "data" / "golden_runs"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ARTICLE = "reports/golden-2.8.0--vs--golden-2.9.0/"
FAILED_RUN = "runs/golden-2.9.0/20260210T120000Z-d4e5f6/"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    from make_golden_runs import GOLDEN_WORKLOADS

    from reporter.build import build_site
    from reporter.views import WorkloadInfo

    tmp = tmp_path_factory.mktemp("browser-site")
    workloads = {name: WorkloadInfo(name=name, **info) for name, info in GOLDEN_WORKLOADS.items()}
    cwd = os.getcwd()
    os.chdir(tmp)  # no imagebench.toml here: the default comparisons of the fixture runs
    try:
        build_site(GOLDEN_RUNS, tmp / "site", tmp / "public", workloads=workloads)
    finally:
        os.chdir(cwd)
    handler = functools.partial(_QuietHandler, directory=str(tmp / "public"))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(site_url: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(browser: object, url: str) -> tuple[object, list[str]]:
    """A page at ``url`` with every console error, page error, failed request and dialog collected."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
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
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    page.screenshot(path=str(out / "site-article.png"), full_page=False)
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


@pytest.mark.parametrize("path", ["", "reports/", "runs/", "runs/golden-2.9.0/", "trends/", "trends/basic/", "methodology/"])
def test_every_index_page_loads_cleanly(browser: object, site_url: str, path: str) -> None:
    page, problems = open_page(browser, site_url + path)
    assert page.locator("article h1").count() == 1
    assert problems == []
    if os.environ.get("IMAGEBENCH_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "artifacts" / f"site-{path.strip('/').replace('/', '-') or 'home'}.png"))
