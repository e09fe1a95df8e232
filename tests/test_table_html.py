"""The site's tables as HTML: the markup Python-Markdown made of them as Markdown, links as MkDocs writes them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import markdown
from markupsafe import Markup

from reporter.present.render import HOOKS, md_escape, render_table, served_href
from reporter.present.tables import Column, Table, render_markdown
from reporter.present.views import Link

HOSTILE = "x|<b>{{ 7*7 }}[a](b)`c`*d*_e_&amp"


def _markdown_table(table: Table, hooks: dict) -> str:
    """The table as the site wrote it before: Markdown in an ``md_in_html`` box, through Python-Markdown."""
    box = f'<div class="ib-table {table.css}" markdown>\n\n{render_markdown(table, hooks, title=lambda t: str(md_escape(t)))}\n\n</div>'
    return markdown.Markdown(extensions=["tables", "md_in_html"]).convert(box)


def test_a_table_is_the_html_the_tables_extension_made_of_its_markdown() -> None:
    table = Table([Column("Case"), Column(HOSTILE), Column("Ratio", "ratio_ci", True), Column("", "markup", True),
                   Column("p", "pvalue", True), Column("Command", "code")], css="ib-main")
    interval = type("Interval", (), {"value": 1.0834, "low": 1.0712, "high": 1.0951, "has_ci": True})
    table.rows = [
        ["matmul 1024³ bf16", HOSTILE, interval, Markup("`time.perf_counter_ns` around *k* calls"), 0.0004, "reporter build"],
        [" line one\nline two ", None, None, None, float("nan"), HOSTILE],
    ]
    html = str(render_table(table, page="reports/a.md"))
    assert html == _markdown_table(table, HOOKS)
    assert "<code>time.perf_counter_ns</code> around <em>k</em> calls" in html and "<b>" not in html


def test_a_collapsed_table_is_what_pymdownx_details_made_of_it() -> None:
    table = Table([Column("x"), Column("median", "int", True)], [["a_b", 3.0], ["c", 1234.0]], css="ib-details")
    summary = Markup("Data behind the chart: matmul &#42; 2")
    html = str(render_table(table, summary, page="trends/basic.md"))
    body = render_markdown(table, HOOKS, title=lambda t: str(md_escape(t))).replace("\n", "\n    ")
    old = f'??? note "{summary}"\n\n    <div class="ib-table ib-details" markdown>\n\n    {body}\n\n    </div>\n'
    made = markdown.Markdown(extensions=["tables", "pymdownx.details", "md_in_html"]).convert(old)
    # There the box kept its ``markdown`` attribute, which no browser reads.
    assert html == made.replace(" markdown>", ">")


PAGES = ["index.md", "methodology.md", "reports/index.md", "reports/a--vs--b.md", "runs/index.md",
         "runs/torch-2.11.0/index.md", "runs/torch-2.11.0/20260110T120000Z-a1b2c3/index.md", "trends/basic.md"]
FILES = ["runs/torch-2.11.0/20260110T120000Z-a1b2c3/samples.parquet", "reports/charts/a--vs--b-c001.svg"]


def test_links_are_the_urls_mkdocs_writes_for_markdown_links(tmp_path: Path) -> None:
    import posixpath

    docs = tmp_path / "docs"
    links = {page: [posixpath.relpath(target, posixpath.dirname(page) or ".") for target in PAGES + FILES if target != page]
             for page in PAGES}
    for path in PAGES + FILES:
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"[{i}]({href})\n\n" for i, href in enumerate(links.get(path, [])))
        (docs / path).write_text(f"# {path}\n\n{body}" if path.endswith(".md") else "x", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nuse_directory_urls: true\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"], cwd=tmp_path, check=True)
    for page, hrefs in links.items():
        out = tmp_path / "site" / (page.removesuffix(".md").removesuffix("index") + "/index.html").lstrip("/")
        built = re.findall(r'<a href="([^"]*)">(\d+)</a>', out.read_text(encoding="utf-8"))
        assert [served_href(page, hrefs[int(i)]) for _, i in built] == [url for url, _ in built]
        assert len(built) == len(hrefs)


def test_a_link_cell_is_an_anchor_to_the_served_url() -> None:
    table = Table([Column("Run", "link")], [[Link("run <1>", "../runs/a b/index.md#x")]])
    html = str(render_table(table, page="reports/a.md"))
    assert '<td><a href="../../runs/a%20b/#x">run &lt;1&gt;</a></td>' in html
