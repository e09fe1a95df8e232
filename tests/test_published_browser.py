"""Every published article (the shipped archive) as a reader sees it: en and zh, at 1400 and 400 px.

The site is built from ``runs/`` with ``imagebench.toml``, served on 127.0.0.1 and opened in
headless Chromium. On every article, in both languages:

- at 400 px nothing is cut off or wider than the screen: no table, chart, code block or
  scrolling box reaches past the viewport or scrolls inside itself, with every details box
  opened (a table that cannot fit is stacked, a chart is scaled to the column);
- the page at 400 px is at most three times as tall as at 1400 px (as first shown, details
  boxes closed);
- the verdict box opens the article and names every significant regression.

A full-page screenshot of each article at both widths and in both languages is kept under
artifacts/ (git-ignored) for review. Skipped (with the reason) only when Chromium is not
installed at /usr/bin/chromium (``scripts/setup.sh --test`` installs it).
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import socketserver
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from reporter.article.compute import compute_article
from reporter.present.wording import in_language
from reporter.article.config import load_config
from reporter.data.load import load_archive
from runformat.vocabulary import Verdict

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "published"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
WIDE, PHONE = 1400, 400
MAX_HEIGHT_RATIO = 3.0
VERDICT_TITLE = {"en": "Verdict", "zh": "结论"}

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# What reaches past the viewport, or is cut by a box that scrolls, among what a reader sees.
_OVERFLOW = """() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > vw) out.push(`page scrolls ${document.documentElement.scrollWidth - vw} px sideways`);
  for (const e of document.querySelectorAll('article table, article img, article pre, article p, article .md-typeset__scrollwrap, article .md-typeset__table')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const what = e.tagName === 'IMG' ? e.getAttribute('src') : (e.innerText || '').slice(0, 60).replace(/\\s+/g, ' ');
    if (r.right > vw + 1 || r.left < -1) out.push(`${e.tagName} ${what}: ${r.left.toFixed(0)}..${r.right.toFixed(0)} of ${vw} px`);
    // A box that clips or scrolls (a table's wrapper, a code block) must hold all of its content.
    else if (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1) out.push(`${e.tagName} ${what}: scrolls ${e.scrollWidth - e.clientWidth} px inside`);
  }
  return out;
}"""

_OPEN_DETAILS = "() => document.querySelectorAll('article details').forEach(d => { d.open = true; })"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass


@dataclass(frozen=True)
class Published:
    url: str
    articles: dict[str, dict[str, list[str]]]  # reports/<slug>/ -> language -> regressions' case labels


def _regressions() -> dict[str, dict[str, list[str]]]:
    """Each published article's significant regressions, as the article names their cases."""
    archive = load_archive(ROOT / "runs")
    found: dict[str, dict[str, list[str]]] = {}
    for spec in load_config(ROOT / "imagebench.toml", explicit=True).comparisons:
        if spec.lang is not None:
            continue  # a second title of the same comparison
        if spec.candidate.partition("@")[0] not in archive.labels():
            continue  # this machine's label: recorded by `make report`, not shipped
        by_lang = {}
        for lang in ("en", "zh"):
            data = in_language(compute_article(archive, spec), lang)
            by_lang[lang] = [html.unescape(r.full_label) for s in data.sections for b in s.blocks for r in b.rows
                             if r.main and r.verdict is Verdict.WORSE]
        found[f"reports/{spec.slug}/"] = by_lang
    return found


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from reporter.site.build import build_site

    tmp = tmp_path_factory.mktemp("published-site")
    cwd = os.getcwd()
    os.chdir(tmp)  # the build writes nothing into the checkout
    try:
        result = build_site(ROOT / "runs", tmp / "site", tmp / "public", config_path=ROOT / "imagebench.toml")
    finally:
        os.chdir(cwd)
    articles = _regressions()
    built = {page.removesuffix(".md") + "/" for page in result.reports}
    assert set(articles) <= built, sorted(set(articles) - built)
    handler = functools.partial(_QuietHandler, directory=str(tmp / "public"))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Published(f"http://127.0.0.1:{server.server_address[1]}/", articles)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(published: Published) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser: object, url: str, width: int) -> tuple[object, list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 900})  # type: ignore[attr-defined]
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page, problems


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_published_article_reads_on_a_phone_and_a_desktop(browser: object, published: Published, lang: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    prefix = "" if lang == "en" else f"{lang}/"
    failures: list[str] = []
    for article, regressions in sorted(published.articles.items()):
        name = article.strip("/").split("/")[-1]
        heights = {}
        for width in (WIDE, PHONE):
            page, problems = _open(browser, published.url + prefix + article, width)
            heights[width] = page.evaluate("document.documentElement.scrollHeight")
            page.screenshot(path=str(ARTIFACTS / f"{lang}-{width}-{name}.png"), full_page=True)
            box = page.locator("article .admonition").first
            assert box.locator(".admonition-title").inner_text().strip() == VERDICT_TITLE[lang], f"{lang}/{article}"
            assert box.is_visible()
            text = box.inner_text()
            failures += [f"{lang}/{article}: the verdict box does not name {case!r}" for case in regressions[lang]
                         if case not in text]
            page.evaluate(_OPEN_DETAILS)
            page.wait_for_timeout(100)  # the stacking of tables that a details box shows runs on its toggle event
            if width == PHONE:
                failures += [f"{lang}/{article} at {width} px: {o}" for o in page.evaluate(_OVERFLOW)]
            failures += [f"{lang}/{article}: {p}" for p in problems]
            page.close()
        ratio = heights[PHONE] / heights[WIDE]
        if ratio > MAX_HEIGHT_RATIO:
            failures.append(f"{lang}/{article}: {heights[PHONE]} px tall at {PHONE} px, {ratio:.2f}× its height at {WIDE} px")
    assert not failures, "\n".join(failures)
    assert any(published.articles[a][lang] for a in published.articles)  # some article has regressions to name


def _search(browser: object, url: str, query: str) -> list[str]:
    """The addresses of the results Material's search lists for ``query`` on the page at ``url``."""
    page, problems = _open(browser, url, WIDE)
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    # Chinese is typed as text input without key events, and Material searches on key events:
    # a key press after it starts the search.
    box.press_sequentially(query, delay=30)
    box.press("End")
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=15000)
    found = results.evaluate_all("links => links.map(a => a.href)")
    assert problems == []
    page.close()
    return found


@pytest.mark.parametrize("lang, query", [("zh", "升级"), ("zh", "回退"), ("zh", "显存"), ("en", "upgrading"), ("en", "regressions")])
def test_common_queries_find_the_comparisons(browser: object, published: Published, lang: str, query: str) -> None:
    """What a reader deciding on an upgrade types: each finds comparison articles, not only the home page."""
    prefix = "" if lang == "en" else f"{lang}/"
    found = _search(browser, published.url + prefix, query)
    assert any(f"/{prefix}reports/" in href and "--vs--" in href for href in found), (query, found)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_trend_and_guide_pages_read_on_a_phone(browser: object, published: Published, lang: str) -> None:
    """The release series' trend pages (every family) and the guide, at 400 px: nothing wider
    than the screen, every chart whole (each label inside its SVG is the SVG test's business)."""
    prefix = "" if lang == "en" else f"{lang}/"
    index, problems = _open(browser, published.url + prefix + "trends/", PHONE)
    families = index.locator("article a[href]").evaluate_all(
        "links => [...new Set(links.map(a => a.href).filter(h => /\\/trends\\/[a-z]+\\/$/.test(h)))]")
    index.close()
    assert families, "the trends index links no family page"
    guide = [published.url + prefix + f"guide/{name}/" for name in ("recording", "comparing", "reading", "archive")]
    failures = []
    for url in [published.url + prefix + "trends/", *families, *guide]:
        page, problems = _open(browser, url, PHONE)
        page.evaluate(_OPEN_DETAILS)
        page.wait_for_timeout(100)
        failures += [f"{url}: {o}" for o in page.evaluate(_OVERFLOW)] + [f"{url}: {p}" for p in problems]
        page.close()
    assert not failures, "\n".join(failures)
