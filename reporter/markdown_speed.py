"""A Markdown extension for the site's MkDocs build: inline processing passes over text no inline pattern can change.

Python-Markdown tries each of its inline patterns (code, escapes, links and images,
autolinks, line breaks, HTML, entities, emphasis) on every text of a page, one pattern
after the other, table cells included. In the site's pages, tables of figures, most texts
are plain ("1.23 ms", "better", "0.98x"), and trying 14 patterns on each was 38% of MkDocs'
time. Every one of Python-Markdown's own patterns needs one of these to match: a backtick, a
backslash, ``[`` (links, references, images), ``<`` (autolinks, HTML), ``&`` (entities),
``*`` or ``_`` (emphasis), two spaces before a line break. A text with none of them, and
none of the placeholders Markdown puts in text (``\\x02``, ``\\x03``), comes out as it went
in, so it is passed over. When another extension has added or replaced an inline pattern,
nothing is passed over.

Enabled in mkdocs.yml (``markdown_extensions: - reporter.markdown_speed``); the built site
is the same, byte for byte (tests/test_markdown_speed.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Extension, Markdown, inlinepatterns
from markdown.treeprocessors import InlineProcessor

# The names of Python-Markdown's own inline patterns (3.x): code, escape, links, references
# and images, autolinks, line break, HTML and entities, emphasis. Their syntax starts with one
# of the characters of MAY_CHANGE, whichever version's regular expression matches it.
OWN_PATTERNS = frozenset({
    "backtick", "escape", "reference", "link", "image_link", "image_reference", "short_reference", "short_image_ref",
    "autolink", "automail", "linebreak", "html", "entity", "not_strong", "em_strong", "em_strong2", "strong_em",
    "strong", "emphasis", "emphasis2", "strong2",
})
MAY_CHANGE = re.compile(r"[`\\*_\[<&\x02\x03]|  \n")


class PlainTextInlineProcessor(InlineProcessor):
    """Python-Markdown's inline processor, which returns a text none of its own patterns can match at once."""

    _skip_plain = False

    def run(self, tree: etree.Element, ancestors: list[str] | None = None) -> etree.Element:
        registry = self.inlinePatterns
        names = [name for name in OWN_PATTERNS if name in registry]
        # Every pattern one of Python-Markdown's own, by name and by the module of its class.
        self._skip_plain = len(names) == len(registry) and all(
            type(registry[name]).__module__ == inlinepatterns.__name__ for name in names)
        return super().run(tree, ancestors)

    def _InlineProcessor__handleInline(self, data: str, patternIndex: int = 0) -> str:  # noqa: N802 (the private name it replaces)
        if patternIndex == 0 and self._skip_plain and MAY_CHANGE.search(data) is None:
            return data
        return InlineProcessor._InlineProcessor__handleInline(self, data, patternIndex)


class PlainTextExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        md.treeprocessors.register(PlainTextInlineProcessor(md), "inline", 20)


def makeExtension(**kwargs: Any) -> PlainTextExtension:  # noqa: N802 (Python-Markdown's name)
    return PlainTextExtension(**kwargs)
