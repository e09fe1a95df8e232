"""A Markdown extension for the site's MkDocs build: the same HTML, with less work.

Two parts. Table boxes of plain cells are written as HTML at once (``TableBoxPreprocessor``),
and inline processing passes over text no inline pattern can change (below).

Python-Markdown tries each of its inline patterns (code, escapes, links and images,
autolinks, line breaks, HTML, entities, emphasis) on every text of a page, one pattern
after the other, table cells included. In the site's pages, tables of figures, most texts
are plain ("1.23 ms", "better", "0.98x"), and trying 14 patterns on each was 38% of MkDocs'
time. Every one of Python-Markdown's own patterns needs one of these to match: a backtick, a
backslash, ``<`` (autolinks, HTML), ``&`` (entities), ``*`` or ``_`` (emphasis), two
spaces before a line break, or ``[``: a link or image needs ``](``, and a reference (``[id]``,
``[text][id]``) changes nothing on a page that defines none, so a ``[`` counts only with a
``](`` beside it or a reference defined (the site's confidence intervals, ``1.02x [0.99,
1.05]``, were four fifths of the texts processed in full). A text with none of them, and none
of the placeholders Markdown puts in text (``\\x02``, ``\\x03``), comes out as it went in, so
it is passed over. When another extension has added or replaced an inline pattern, nothing
is passed over.

Enabled in mkdocs.yml (``markdown_extensions: - reporter.site.markdown_speed``); the built site
is the same, byte for byte (tests/test_markdown_speed.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Extension, Markdown, inlinepatterns
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import InlineProcessor

# The names of Python-Markdown's own inline patterns (3.x): code, escape, links, references
# and images, autolinks, line break, HTML and entities, emphasis. Their syntax starts with one
# of the characters of MAY_CHANGE, whichever version's regular expression matches it.
OWN_PATTERNS = frozenset({
    "backtick", "escape", "reference", "link", "image_link", "image_reference", "short_reference", "short_image_ref",
    "autolink", "automail", "linebreak", "html", "entity", "not_strong", "em_strong", "em_strong2", "strong_em",
    "strong", "emphasis", "emphasis2", "strong2",
})
MAY_CHANGE = re.compile(r"[`\\*_<&\x02\x03]|  \n|\]\(")
# With a reference defined on the page, any ``[`` may start one.
MAY_CHANGE_WITH_REFERENCES = re.compile(r"[`\\*_\[<&\x02\x03]|  \n")


class PlainTextInlineProcessor(InlineProcessor):
    """Python-Markdown's inline processor, which returns a text none of its own patterns can match at once."""

    _skip_plain = False
    _may_change = MAY_CHANGE

    def run(self, tree: etree.Element, ancestors: list[str] | None = None) -> etree.Element:
        self._skip_plain = own_inline_patterns_only(self.md)
        self._may_change = MAY_CHANGE_WITH_REFERENCES if self.md.references else MAY_CHANGE
        return super().run(tree, ancestors)

    def _InlineProcessor__handleInline(self, data: str, patternIndex: int = 0) -> str:  # noqa: N802 (the private name it replaces)
        if patternIndex == 0 and self._skip_plain and self._may_change.search(data) is None:
            return data
        return InlineProcessor._InlineProcessor__handleInline(self, data, patternIndex)


def own_inline_patterns_only(md: Markdown) -> bool:
    """Whether every inline pattern of ``md`` is one of Python-Markdown's own (by name and by its class's module)."""
    registry = md.inlinePatterns
    names = [name for name in OWN_PATTERNS if name in registry]
    return len(names) == len(registry) and all(type(registry[name]).__module__ == inlinepatterns.__name__ for name in names)


# A table box as reporter.present.tables writes it, at the start of a line: the div, a blank line, the
# table's lines, a blank line, the end of the div.
_BOX_OPEN = re.compile(r'<div class="([-a-z0-9 ]+)" markdown>')
# In a table cell, the same but for ``&``: an entity is kept as it is (the entity pattern) and any
# other ``&`` escaped (the serializer), which ``_table_html`` does itself.
CELL_MAY_CHANGE = re.compile(r"[`\\*_<\x02\x03]|  \n|\]\(")
CELL_MAY_CHANGE_WITH_REFERENCES = re.compile(r"[`\\*_\[<\x02\x03]|  \n")
# Raw HTML that ends on its line, so that it holds no box: a comment (the mark of a generated
# page) and a preformatted block (an article's commands).
_ONE_LINE = re.compile(r"<!--(?:(?!-->).)*-->|<pre\b[^>]*>(?:(?!</?pre\b).)*</pre>")
# A ``&`` that starts a character or entity reference without ending it: md_in_html's parser completes those.
_LOOSE_REFERENCE = re.compile(r"&(?=[#A-Za-z0-9])(?!#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z0-9]+;)")
# A reference definition anywhere, at any indentation (one in a collapsible block counts): then any
# ``[`` may start a link.
_REFERENCE = re.compile(r"\s*\[[^\]]+\]:")
# What Python-Markdown's serializer escapes in text: ``&`` not starting an entity, ``<``, ``>``.
_BARE_AMP = re.compile(r"&(?!(?:#[0-9]+|#x[0-9a-f]+|[0-9a-z]+);)", re.IGNORECASE)


class TableBoxPreprocessor(Preprocessor):
    """Each table box of plain cells, turned into the HTML Python-Markdown makes of it, at once.

    The site's pages are mostly tables of figures in ``<div class="ib-table ..." markdown>``
    boxes (``reporter.present.tables``). For each one, the ``md_in_html`` extension parses the box,
    the tables extension splits every row, the inline processor visits every cell, and the
    tree is prettified and serialised, element by element: two thirds of a page's Markdown
    time. A box whose cells are all plain text (nothing ``CELL_MAY_CHANGE`` matches)
    comes out as fixed markup around its cells: it is written here and stashed as raw HTML,
    the way Markdown keeps any block of HTML. Any other box, any page with raw HTML of its
    own at the start of a line, or a Markdown whose tables, HTML blocks or inline patterns
    are not Python-Markdown's own, goes the usual way.
    """

    def run(self, lines: list[str]) -> list[str]:
        if not self._applies():
            return lines
        tags = [line.lstrip(" ") for line in lines if line.lstrip(" ").startswith("<")]
        if not tags or any(not (_BOX_OPEN.fullmatch(t) or t == "</div>" or _ONE_LINE.fullmatch(t)) for t in tags):
            return lines  # raw HTML of the page's own: left to the usual parser, where it may hold a box
        may_change = CELL_MAY_CHANGE_WITH_REFERENCES if any(_REFERENCE.match(line) for line in lines) else CELL_MAY_CHANGE
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            # At the top level, or one level into a collapsible block (``??? note``, pymdownx.details).
            indent = "    " if line.startswith("    <") else ""
            box = _BOX_OPEN.fullmatch(line[len(indent):])
            end = None
            if box and (i == 0 or lines[i - 1] == "") and (not indent or _in_details(lines, i)):
                end = self._box_end(lines, i, indent)
            html = None
            if end is not None:
                # Nested in a collapsible block, md_in_html leaves the div its ``markdown`` attribute.
                html = _table_html(box.group(1), [r[len(indent):] for r in lines[i + 2:end - 1]], may_change,
                                   markdown=bool(indent))
            if html is None:
                out.append(line)
                i += 1
                continue
            out.append(indent + self.md.htmlStash.store(html))
            i = end + 1
        return out

    @staticmethod
    def _box_end(lines: list[str], start: int, indent: str = "") -> int | None:
        """The index of the ``</div>`` line closing the box opened at ``start`` (a blank line
        after it, or the end), or None when the box is not laid out as reporter.present.tables writes it:
        every line of its table starting with ``indent`` and a ``|``."""
        if start + 1 >= len(lines) or lines[start + 1] != "":
            return None
        end = start + 2
        while end < len(lines) and lines[end] != "":
            if not lines[end].startswith(indent + "|"):
                return None
            end += 1
        if end + 1 >= len(lines) or lines[end + 1] != indent + "</div>" or end - start < 5:
            return None
        if end + 2 < len(lines) and lines[end + 2] != "":
            return None
        return end + 1

    def _applies(self) -> bool:
        from markdown.extensions.md_in_html import HtmlBlockPreprocessor
        from markdown.extensions.tables import TableProcessor

        table = self.md.parser.blockprocessors["table"] if "table" in self.md.parser.blockprocessors else None
        html = self.md.preprocessors["html_block"] if "html_block" in self.md.preprocessors else None
        return (type(table) is TableProcessor and not table.config.get("use_align_attribute")
                and type(html) is HtmlBlockPreprocessor and own_inline_patterns_only(self.md))


# The first line of a pymdownx.details block: its content is indented by four spaces.
_DETAILS = re.compile(r"\?\?\?\+? ")


def _in_details(lines: list[str], at: int) -> bool:
    """Whether the line ``at`` (indented by four spaces) is in the content of a collapsible
    block: every line up to the block's first is blank or indented, and none deeper than a
    level shows a nested block."""
    for line in reversed(lines[:at]):
        if line == "" or (line.startswith("    ") and not line.startswith("     ")):
            continue
        return _DETAILS.match(line) is not None
    return False


def _cells(row: str, border: bool) -> list[str]:
    """A row split as the tables extension splits one without backslashes or backticks."""
    row = row.strip(" ")
    if border:
        row = row[1:] if row.startswith("|") else row
        row = row[:-1] if row.endswith("|") else row
    return row.split("|")


def _table_html(css: str, rows: list[str], may_change: re.Pattern[str], *, markdown: bool = False) -> str | None:
    """The HTML of a box of class ``css`` holding the table ``rows`` (its lines), as md_in_html, the
    tables extension, the inline processor, prettify and the serialiser make it; None unless every
    cell is plain and the rows are a table."""
    # What md_in_html's HTML parser reads in the box's text, cells beyond the header's included: markup
    # and references it would complete. And what the tables extension splits rows by otherwise.
    if len(rows) < 3 or any("\\" in r or "`" in r or "\t" in r or "<" in r or _LOOSE_REFERENCE.search(r) for r in rows):
        return None
    header = rows[0].strip(" ")
    border = header.startswith("|") or header.endswith("|")
    head = _cells(header, border)
    separator = _cells(rows[1], border)
    if len(head) < 2 or len(separator) != len(head) or not set("".join(separator)) <= set("|:- "):
        return None
    align = []
    for c in separator:
        c = c.strip(" ")
        align.append(' style="text-align: center;"' if c.startswith(":") and c.endswith(":") else
                     ' style="text-align: left;"' if c.startswith(":") else
                     ' style="text-align: right;"' if c.endswith(":") else "")
    parts = [f'<div class="{css}"{" markdown" if markdown else ""}>\n<table>\n<thead>\n']
    for n, row in enumerate([header] + rows[2:]):
        cells = _cells(row, border)
        tag = "th" if n == 0 else "td"
        parts.append("<tr>\n")
        for k, style in enumerate(align):
            text = cells[k].strip(" ") if k < len(cells) else ""
            if may_change.search(text) is not None:
                return None
            if "&" in text:
                text = _BARE_AMP.sub("&amp;", text)
            parts.append(f"<{tag}{style}>{text.replace('>', '&gt;')}</{tag}>\n")
        parts.append("</tr>\n</thead>\n<tbody>\n" if n == 0 else "</tr>\n")
    parts.append("</tbody>\n</table>\n</div>")
    return "".join(parts)


class PlainTextExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        md.treeprocessors.register(PlainTextInlineProcessor(md), "inline", 20)
        # After whitespace is normalised (30), before HTML blocks are taken out (20).
        md.preprocessors.register(TableBoxPreprocessor(md), "ib_table_box", 25)


def makeExtension(**kwargs: Any) -> PlainTextExtension:  # noqa: N802 (Python-Markdown's name)
    return PlainTextExtension(**kwargs)
