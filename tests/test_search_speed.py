"""reporter.site.search_speed: Material's search index, the same from the faster parser and the memoised jieba."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import markdown
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

plugin = pytest.importorskip("material.plugins.search.plugin")

from reporter.site.search_speed import KNOWN_PARSERS, MemoJieba, install, parser_fingerprint, tag_counting_parser  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden_site"
FAST = tag_counting_parser(plugin)


def _sections(parser_type: type, html: str) -> list[tuple]:
    parser = parser_type()
    parser.feed(html)
    parser.close()
    return [(s.el.tag, s.id, s.depth, tuple(s.title), tuple(s.text), s.is_excluded()) for s in parser.data]


def _outcome(parser_type: type, html: str) -> object:
    """The sections, or the error the parser stops with (Material's own stops on some malformed
    markup, e.g. an excluded paragraph holding another: then the faster one must stop alike)."""
    try:
        return _sections(parser_type, html)
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001
        return ("stops", type(e).__name__, str(e))


def _same(html: str) -> None:
    assert _outcome(FAST, html) == _outcome(plugin.Parser, html), html


class RegexOnly(FAST):  # type: ignore[misc, valid-type]
    """FAST that fails where it would hand the page to html.parser."""

    def goahead(self, end: bool) -> None:
        if self.rawdata:
            raise AssertionError("fell back to html.parser")
        super().goahead(end)


def _same_without_html_parser(html: str) -> None:
    assert _outcome(RegexOnly, html) == _outcome(plugin.Parser, html), html


def test_the_installed_material_is_one_the_parser_was_written_for() -> None:
    # A new Material changes this hash: check its Parser against TagCountingParser, then add it.
    assert parser_fingerprint(plugin) in KNOWN_PARSERS


def test_the_site_pages_parse_into_the_same_sections() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    extensions = [next(iter(e)) if isinstance(e, dict) else e for e in config["markdown_extensions"]]
    pages = sorted(GOLDEN.rglob("*.md"))
    assert len(pages) > 20
    for page in pages:
        # Every page the site writes is tokenised without html.parser, to the same sections.
        _same_without_html_parser(markdown.Markdown(extensions=extensions).convert(page.read_text(encoding="utf-8")))


EDGE_CASES = [
    # an excluded block: Material skips every element of its tag while it is open
    '<div data-search-exclude><p>x</p><div><p>y</p></div></div><p>z</p><div><p>after</p></div>',
    '<h2 id="a">T <code>c</code><a class="headerlink" href="#a">¶</a></h2><pre><code>a\n  b\n\n c</code></pre><p> </p><p>q</p>',
    '<script>var a = "<p>";</script><h1 id="t">A <code>b</code></h1><div class="linenodiv"><p>1</p></div><ul><li></li><li>w</li></ul>',
    '<p>a</p></div><p>b<br>c</p><h3>no id</h3><div><h2 id="n">nested</h2>text</div>after<h2 id="m">m</h2>',
    '<table><tr><td>矩阵乘法 1024</td><td> </td><td>\n</td></tr></table><p><sub>2</sub> &amp; &lt;x&gt;</p>',
    'preface <em>text</em><h1 id="x">x</h1><h1 id="y">y<h2 id="z">z</h2></h1>',
]


def test_edge_cases_parse_into_the_same_sections() -> None:
    for html in EDGE_CASES:
        _same(html)


# Markup the regular expression reads itself, and markup it leaves to html.parser.
REGEX_CASES = [
    '<P CLASS="x" ID="a&amp;b">A &lt;b&gt; &#39;q&#39; &copy;</P><BR/><br /><img alt="1 &gt; 0" src="a.svg">',
    '<!-- a comment --><h2 id="x" title="">x<a class="headerlink" href="#x">&para;</a></h2><p>\n</p>tail &amp;',
    '<td align="right">1.02×</td><input disabled><span data-search-exclude>hidden</span>',
]
HTML_PARSER_CASES = [
    "<p>a < b</p>", "<p title='single'>x</p>", "<p title=bare>x</p>", "<x-y>z</x-y>", "<!-- a > b --><p>c</p>",
    "<style>p { }</style><p>a</p>", "<p>unclosed <b", "<!DOCTYPE html><p>d</p>", '<p title = "spaced">e</p>',
]


def test_the_regex_reads_what_the_site_writes_and_leaves_the_rest_to_html_parser() -> None:
    for html in REGEX_CASES:
        _same_without_html_parser(html)
    for html in HTML_PARSER_CASES:
        _same(html)
        with pytest.raises(AssertionError, match="fell back"):
            _sections(RegexOnly, html)


TAGS = ["p", "div", "h1", "h2", "h3", "a", "code", "pre", "li", "ul", "td", "tr", "table", "script", "br", "img", "sub"]
ATTRS = ["", ' id="s"', ' id="t"', " data-search-exclude", ' class="headerlink"', ' class="linenodiv"']
TOKENS = st.one_of(
    st.builds(lambda t, a: f"<{t}{a}>", st.sampled_from(TAGS), st.sampled_from(ATTRS)),
    st.builds(lambda t: f"</{t}>", st.sampled_from(TAGS)),
    st.sampled_from(["text", " ", "\n", "  \n ", "矩阵 乘法", "&amp;", "a<b", "x\ny"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=40))
def test_any_tag_soup_parses_into_the_same_sections(tokens: list[str]) -> None:
    _same("".join(tokens))


WELL_FORMED = st.one_of(
    st.builds(lambda t, a, c: f"<{t}{a}{c}>", st.sampled_from([t for t in TAGS if t != "script"] + ["P", "H2", "Td"]),
              st.sampled_from(ATTRS + [' title="a &amp; b"', ' ID="U"', ' alt=""']), st.sampled_from(["", "/", " /"])),
    st.builds(lambda t: f"</{t}>", st.sampled_from(TAGS + ["P", "H2"])),
    st.sampled_from(["text", " ", "\n", "  \n ", "矩阵 乘法", "&amp;", "&lt;x&gt;", "&#215;", "x\ny", "<!-- c -->", "&"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(WELL_FORMED, max_size=40))
def test_any_well_formed_tag_soup_is_read_by_the_regex_into_the_same_sections(tokens: list[str]) -> None:
    _same_without_html_parser("".join(tokens))


# Tables as Python-Markdown writes them, among the elements that change how their text is indexed.
CELL = st.sampled_from(["1.23 ms", "", " ", "\n", "矩阵 乘法", "a &amp; b", "&lt;x&gt;", "x\ny", "<code>c</code>",
                        '<a href="x">l</a>', "<br>", "channels&#95;last"])
ROW = st.builds(lambda tag, style, cells: "<tr>\n" + "".join(f"<{tag}{style}>{c}</{tag}>\n" for c in cells) + "</tr>\n",
                st.sampled_from(["td", "th", "TD"]), st.sampled_from(["", ' style="text-align: right;"', ' class="x"']),
                st.lists(CELL, min_size=1, max_size=3))
TABLE = st.builds(lambda head, body, attrs: f"<table{attrs}>\n<thead>\n{head}</thead>\n<tbody>\n{''.join(body)}</tbody>\n</table>",
                  ROW, st.lists(ROW, max_size=3), st.sampled_from(["", "", ' data-search-exclude']))
AROUND = st.sampled_from(["<p>text</p>", '<h2 id="s">S</h2>', '<div><h3 id="d">deep</h3>', "</div>", "<div>",
                          "<pre>", "</pre>", "<div data-search-exclude>", '<h2 id="t">', "</h2>", "\n", "<details>",
                          "</details>", "<li>", "</li>"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(TABLE, AROUND), max_size=12))
def test_tables_among_other_markup_parse_into_the_same_sections(parts: list[str]) -> None:
    _same("".join(parts))


def test_the_site_pages_tables_are_taken_whole(monkeypatch) -> None:
    """What it is for: the tables of the site's pages are indexed by their texts alone."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    extensions = [next(iter(e)) if isinstance(e, dict) else e for e in config["markdown_extensions"]]
    taken: list[str] = []
    table_data = FAST.table_data
    monkeypatch.setattr(FAST, "table_data", lambda self, data: (taken.append(data), table_data(self, data)))
    pages = [p for p in sorted(GOLDEN.rglob("*.md")) if "reports" in p.parts]
    assert pages
    for page in pages:
        html = markdown.Markdown(extensions=extensions).convert(page.read_text(encoding="utf-8"))
        parser = FAST()
        parser.feed(html)
    assert len(taken) > 1000


def test_memoised_jieba_cuts_as_jieba_and_each_text_once() -> None:
    jieba = pytest.importorskip("jieba")
    calls = []

    class Counting:
        def cut(self, text, *args, **kwargs):
            calls.append(text)
            return jieba.cut(text, *args, **kwargs)

        dictionary = "kept"

    memo = MemoJieba(Counting())
    text = "矩阵乘法的中位时间".encode("utf-8")
    assert list(memo.cut(text)) == list(jieba.cut(text)) == list(memo.cut(text))
    assert calls == [text]
    assert memo.dictionary == "kept"  # everything else is jieba's own


def test_an_unknown_parser_is_left_as_it_is() -> None:
    class Module:
        class Parser(plugin.Parser):
            def handle_data(self, data):  # another version's parser
                super().handle_data(data)

        Element, Section, void = plugin.Element, plugin.Section, plugin.void

    original = Module.Parser
    assert install(Module) is False and Module.Parser is original


def test_a_built_site_has_the_same_search_index_with_the_hook(tmp_path) -> None:
    """MkDocs end to end, English and Chinese pages with tables, code and an excluded block."""
    pytest.importorskip("jieba")
    docs = tmp_path / "docs"
    docs.mkdir()
    rows = "\n".join(f"| 矩阵乘法 {n} | 卷积 | {n / 7:.3f} ms |" for n in range(40))
    (docs / "index.md").write_text("# 报告\n\n一段中文，矩阵乘法与卷积。\n\n## 表格\n\n| 用例 | 类别 | 时间 |\n|---|---|---|\n"
                                   f"{rows}\n\n## Code\n\n```\nx = 1\n  y\n```\n", encoding="utf-8")
    (docs / "other.md").write_text('# Other\n\nText *with* `code`.\n\n<div data-search-exclude markdown>\n\nhidden\n\n</div>\n\n'
                                   "## Second\n\n- a\n- b\n", encoding="utf-8")
    index = {}
    for name, hooks in (("plain", []), ("hooked", [str(ROOT / "reporter" / "site" / "search_speed.py")])):
        config = {"site_name": "t", "docs_dir": str(docs), "site_dir": str(tmp_path / name), "theme": {"name": "material", "language": "zh"},
                  "plugins": ["search"], "markdown_extensions": ["tables", "md_in_html", {"toc": {"permalink": True}}], "hooks": hooks}
        path = tmp_path / f"{name}.yml"
        path.write_text(json.dumps(config), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(path)], check=True, capture_output=True)
        index[name] = (tmp_path / name / "search" / "search_index.json").read_text(encoding="utf-8")
    texts = " ".join(d["text"] for d in json.loads(index["plain"])["docs"])
    assert "矩阵\u200b乘法" in texts and "hidden" not in texts  # segmented by jieba; the excluded block left out
    assert index["hooked"] == index["plain"]
