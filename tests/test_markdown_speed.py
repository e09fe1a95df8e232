"""reporter.site.markdown_speed: the same HTML as Python-Markdown's own inline processing, on every input."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown.inlinepatterns import SimpleTagInlineProcessor

from reporter.site.markdown_speed import MAY_CHANGE, PlainTextInlineProcessor

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden_site"


def _site_extensions() -> list[str | dict]:
    """The Markdown extensions of the repository's mkdocs.yml, without this one."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    names = [next(iter(e)) if isinstance(e, dict) else e for e in config["markdown_extensions"]]
    assert "reporter.site.markdown_speed" in names  # the site is built with it
    return [n for n in names if n != "reporter.site.markdown_speed"]


def _html(text: str, fast: bool, extra: list | None = None) -> str:
    extensions = _site_extensions() + (extra or []) + (["reporter.site.markdown_speed"] if fast else [])
    return markdown.Markdown(extensions=extensions).convert(text)


def test_the_site_pages_convert_to_the_same_html() -> None:
    pages = sorted(GOLDEN.rglob("*.md"))
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert _html(text, fast=True) == _html(text, fast=False), page


SNIPPETS = [
    "a *b* **c** _d_ __e__ ***f*** `g` ``h ` i`` \\*j\\*",
    "[link](x.md) ![image](y.svg) [ref][r] [r] ![ir][r]\n\n[r]: http://example.invalid/",
    "<http://example.invalid/> <me@example.invalid> <span class=\"x\">html</span> <!-- comment -->",
    "&amp; &#169; &#xA9; & plain",
    "line one  \nline two",
    "| case | time |\n| --- | ---: |\n| matmul n=4096 | 1.23 ms [1.20, 1.26] |\n| conv · fp32 | *better* |",
    "!!! note \"Title\"\n    body with `code` and 1.5x",
    "??? details \"Open\"\n    | a |\n    |---|\n    | 1 |",
    '<div class="ib-table" markdown>\n\n| a | b |\n|---|---|\n| x_y | 2 |\n\n</div>',
    "# Heading with *emphasis*\n\n## Plain heading\n\ntext",
    "矩阵乘法 n=4096, 中位时间 1.2 ms（95% 置信区间）",
    "1.02× [0.99, 1.05], [not a link] (x), [undefined][nowhere], ![no image][nowhere]",
    "[a] [b][a] ![c][a] 1.02× [0.99, 1.05]\n\n[a]: http://example.invalid/",
]


def test_every_kind_of_inline_markup_comes_out_the_same() -> None:
    for text in SNIPPETS:
        assert _html(text, fast=True) == _html(text, fast=False), text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab 1.[]()!<>&*_`\\#|-:\n\x02\x03") + ["  \n", "http://x", "a@b", "&amp;", "<b>"]),
                max_size=40).map("".join))
def test_random_markup_comes_out_the_same(text: str) -> None:
    assert _html(text, fast=True) == _html(text, fast=False)


class _Strike(markdown.Extension):
    """A third-party inline pattern whose syntax (~~) has none of the characters the speed-up looks for."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802
        md.inlinePatterns.register(SimpleTagInlineProcessor(r"()~~(.+?)~~", "del"), "strike", 40)


def test_another_extensions_pattern_turns_the_speed_up_off() -> None:
    text = "plain ~~struck~~ text"
    assert MAY_CHANGE.search(text) is None
    fast = markdown.Markdown(extensions=[*_site_extensions(), _Strike(), "reporter.site.markdown_speed"])
    assert fast.convert(text) == _html(text, fast=False, extra=[_Strike()]) == "<p>plain <del>struck</del> text</p>"
    inline = fast.treeprocessors["inline"]
    assert isinstance(inline, PlainTextInlineProcessor) and not inline._skip_plain
    plain = markdown.Markdown(extensions=[*_site_extensions(), "reporter.site.markdown_speed"])
    plain.convert(text)
    assert plain.treeprocessors["inline"]._skip_plain  # the site's own extensions keep it on


def test_plain_text_skips_the_patterns() -> None:
    """What it is for: a text without markup is never handed to a pattern."""
    md = markdown.Markdown(extensions=[*_site_extensions(), "reporter.site.markdown_speed"])
    tried: list[str] = []
    for pattern in md.inlinePatterns:
        original = pattern.getCompiledRegExp()
        pattern.compiled_re = _Spy(original, tried)
    md.convert("| a | b |\n|---|---|\n| 1.23 ms | 0.98x |")
    assert tried == []
    md.convert("| ratio [95% CI] | b |\n|---|---|\n| 0.98x [0.95, 1.01] | [1.2 ms, 1.3 ms] |")
    assert tried == []  # a bracket is not a link, nor a reference on a page that defines none
    md.convert("0.98x [0.95, 1.01]\n\n[0.95, 1.01]: http://example.invalid/")
    assert tried  # ... but may be a reference where one is defined
    tried.clear()
    md.convert("| a | b |\n|---|---|\n| *x* | 2 |")
    assert any(re.search(r"\*", t) for t in tried)


class _Spy:
    def __init__(self, compiled: re.Pattern[str], tried: list[str]) -> None:
        self.compiled, self.tried = compiled, tried
        self.pattern = compiled.pattern

    def search(self, text: str, *args: object) -> re.Match[str] | None:
        self.tried.append(text)
        return self.compiled.search(text, *args)

    def match(self, text: str, *args: object) -> re.Match[str] | None:
        self.tried.append(text)
        return self.compiled.match(text, *args)

    def finditer(self, text: str, *args: object) -> object:
        self.tried.append(text)
        return self.compiled.finditer(text, *args)


# ---- table boxes (TableBoxPreprocessor) -------------------------------------------------------

BOX = '<div class="ib-table ib-wide" markdown>\n\n{table}\n\n</div>'
TABLE = "| Case | Time | Ratio |\n| --- | ---: | :---: |\n| conv channels&#95;last | 1.23 ms | 0.98× [0.95, 1.01] |\n| b | 2 | 3 |"
BOX_CASES = [
    BOX.format(table=TABLE),
    "# Title\n\ntext\n\n" + BOX.format(table=TABLE) + "\n\n## Next\n\n" + BOX.format(table=TABLE),
    '??? note "All figures"\n\n    ' + BOX.format(table=TABLE).replace("\n", "\n    ").replace("\n    \n", "\n\n") + "\n\nafter",
    '!!! note "In an admonition"\n\n    ' + BOX.format(table=TABLE).replace("\n", "\n    ").replace("\n    \n", "\n\n"),
    '- a list item\n\n    ' + BOX.format(table=TABLE).replace("\n", "\n    ").replace("\n    \n", "\n\n"),
    "    " + BOX.format(table=TABLE).replace("\n", "\n    ").replace("\n    \n", "\n\n"),  # indented code at the top
    "text right before\n" + BOX.format(table=TABLE),
    BOX.format(table=TABLE) + "\ntext right after",
    BOX.format(table="| a | b |\n| --- | --- |\n| [link](x.md) | 2 |"),
    BOX.format(table="| a | b |\n| --- | --- |\n| x < y > z | AT&T &amp; &#95; &nbsp; &bogus; & |"),
    BOX.format(table="| a | b |\n| --- | --- |\n| *em* | `code` |"),
    BOX.format(table="| a | b |\n| --- | --- |\n| x_y | a\\|b |"),
    BOX.format(table="| a | b |\n| --- | --- |\n| one |\n| 1 | 2 | 3 |\n|  |  |"),
    BOX.format(table="a | b\n--- | ---\n1 | 2"),
    BOX.format(table="| a |\n| --- |\n| 1 |"),
    BOX.format(table="| a | b |\n| --- | --- |"),
    BOX.format(table="| a | b |\n| -x- | --- |\n| 1 | 2 |"),
    BOX.format(table="| a | b |\n| --- | --- |\n| [0.9, 1.1] | [ref] |") + "\n\n[ref]: http://example.invalid/",
    BOX.format(table="| a | b |\n| --- | --- |\n| [0.9, 1.1] | [ref] |") + '\n\n??? note "x"\n\n    [ref]: http://example.invalid/',
    '<div class="x">raw</div>\n\n' + BOX.format(table=TABLE),
    "<details markdown>\n\n" + BOX.format(table=TABLE) + "\n\n</details>",
    "<!-- generated -->\n\n" + BOX.format(table=TABLE) + '\n\n<pre class="ib-pre"><code>run &quot;x&quot;</code></pre>',
    BOX.format(table="| 矩阵乘法 | 中位时间 |\n| --- | ---: |\n| n=4096 | 1.2 ms（95% 置信区间） |"),
]


def test_table_boxes_come_out_the_same() -> None:
    for text in BOX_CASES:
        assert _html(text, fast=True) == _html(text, fast=False), text


def test_the_site_pages_take_the_fast_path_for_their_plain_boxes(monkeypatch) -> None:
    """What it is for: a generated page's boxes of plain cells, top level and in collapsible
    blocks, are written at once; a box with a link in a cell is not."""
    from reporter.site import markdown_speed

    made: list[bool] = []
    original = markdown_speed._table_html

    def spy(*args: object, **kwargs: object) -> str | None:
        out = original(*args, **kwargs)
        made.append(out is not None)
        return out

    monkeypatch.setattr(markdown_speed, "_table_html", spy)
    pages = [p for p in sorted(GOLDEN.rglob("*.md")) if "ib-table" in p.read_text(encoding="utf-8")]
    for page in pages:
        _html(page.read_text(encoding="utf-8"), fast=True)
    assert len(made) > 50 and sum(made) > 0.7 * len(made)
    made.clear()
    _html('??? note "x"\n\n    ' + BOX.format(table=TABLE).replace("\n", "\n    ").replace("\n    \n", "\n\n"), fast=True)
    _html(BOX.format(table="| a | b |\n| --- | --- |\n| [link](x.md) | 2 |"), fast=True)
    assert made == [True, False]


_CELL = st.lists(st.sampled_from(list("ab 1.[]()!<>&;#xX*_`\\|-:") + ["&#95;", "&amp;", "&#", "&nbsp", "&copy;", "](x)", "µs",
                                                                         "矩阵", "  "]),
                 max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_CELL, min_size=1, max_size=4), min_size=1, max_size=4),
       st.sampled_from(["| --- | ---: |", "| :---: | :--- |", "--- | ---", "| --- |"]), st.booleans())
def test_random_table_boxes_come_out_the_same(rows: list[list[str]], separator: str, nested: bool) -> None:
    table = "| h1 | h2 |\n" + separator + "\n" + "\n".join("| " + " | ".join(r) + " |" for r in rows)
    text = BOX.format(table=table)
    if nested:
        text = '??? note "x"\n\n    ' + text.replace("\n", "\n    ").replace("\n    \n", "\n\n")
    assert _html(text, fast=True) == _html(text, fast=False)
