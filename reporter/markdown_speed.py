"""A Markdown extension for the site's MkDocs build: inline processing passes over text no inline pattern can change.

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
MAY_CHANGE = re.compile(r"[`\\*_<&\x02\x03]|  \n|\]\(")
# With a reference defined on the page, any ``[`` may start one.
MAY_CHANGE_WITH_REFERENCES = re.compile(r"[`\\*_\[<&\x02\x03]|  \n")


class PlainTextInlineProcessor(InlineProcessor):
    """Python-Markdown's inline processor, which returns a text none of its own patterns can match at once."""

    _skip_plain = False
    _may_change = MAY_CHANGE

    def run(self, tree: etree.Element, ancestors: list[str] | None = None) -> etree.Element:
        registry = self.inlinePatterns
        names = [name for name in OWN_PATTERNS if name in registry]
        # Every pattern one of Python-Markdown's own, by name and by the module of its class.
        self._skip_plain = len(names) == len(registry) and all(
            type(registry[name]).__module__ == inlinepatterns.__name__ for name in names)
        self._may_change = MAY_CHANGE_WITH_REFERENCES if self.md.references else MAY_CHANGE
        return super().run(tree, ancestors)

    def _InlineProcessor__handleInline(self, data: str, patternIndex: int = 0) -> str:  # noqa: N802 (the private name it replaces)
        if patternIndex == 0 and self._skip_plain and self._may_change.search(data) is None:
            return data
        return InlineProcessor._InlineProcessor__handleInline(self, data, patternIndex)


class PlainTextExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        md.treeprocessors.register(PlainTextInlineProcessor(md), "inline", 20)


def makeExtension(**kwargs: Any) -> PlainTextExtension:  # noqa: N802 (Python-Markdown's name)
    return PlainTextExtension(**kwargs)
