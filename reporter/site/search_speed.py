"""An MkDocs hook for the site's build: Material's search index, made faster, the same byte for byte.

Material's search plugin parses the HTML of every page into sections with its ``Parser``
(an ``html.parser.HTMLParser``). Its elements compare equal by tag, and on every text and
tag it asks whether an open element is being skipped (``skip.intersection(context)``) or
belongs to the heading (``section.el in context``): Python ``__eq__`` and ``__hash__`` calls
over every open element. The site's articles hold thousands of table cells, and these
checks were about a third of the index's time. ``TagCountingParser`` answers them from a
count of the open elements by tag, with the same meaning: a tag is skipped or in the heading
exactly when some open element has that tag.

In Chinese pages the plugin segments every run of Han characters with jieba; an article
repeats the same labels hundreds of times, and jieba's segmentation of a text depends on
the text alone once its dictionary is loaded, so each distinct run is segmented once.

The parser is replaced only when Material's ``Parser`` is the one it was written against
(its source's hash, ``KNOWN_PARSERS``); another version of Material keeps its own. Wired in by
``reporter.site.site_config`` (``hooks``); tests/test_search_speed.py checks the index is the
same.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from functools import lru_cache
from html import escape, unescape
from typing import Any

HEADINGS = frozenset(f"h{x}" for x in range(1, 7))
# The markup Python-Markdown and the site's templates write: start tags with quoted or bare
# attributes, end tags, comments. A document whose every "<" begins one of these, and holds
# no element whose content html.parser reads raw (script, style), is tokenised by one
# regular expression; any other goes through html.parser itself.
_TOKEN = re.compile(
    r"<(?:(?P<end>/)(?P<etag>[a-zA-Z][a-zA-Z0-9]*)\s*"
    r"|(?P<tag>[a-zA-Z][a-zA-Z0-9]*)(?P<attrs>(?:\s+[a-zA-Z_:][-a-zA-Z0-9_:.]*(?:=\"[^\"<]*\")?)*)\s*(?P<close>/?)"
    r"|!--(?P<comment>(?:(?!--)[^>])*?)--)>"
)
_ATTR = re.compile(r'([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:="([^"]*)")?')
# The tags of a table of plain cells, and a start tag's only attribute there (an alignment).
CELL_TAGS = frozenset({"thead", "tbody", "tr", "th", "td"})
TABLE_TAGS = CELL_TAGS | {"table"}
_STYLE = re.compile(r'\s+style="[^"<&]*"')
_RAW_TEXT = re.compile(r"<(?:script|style|textarea|title|xmp|iframe|noembed|noframes|noscript|plaintext)\b", re.IGNORECASE)
# sha256 of ``inspect.getsource`` of Material's ``Parser`` and ``Element``, for each version
# whose meaning ``TagCountingParser`` reproduces.
KNOWN_PARSERS = frozenset({
    "7af6bbf27521b014",  # mkdocs-material 9.8.2
})


def parser_fingerprint(module: Any) -> str:
    source = inspect.getsource(module.Parser) + inspect.getsource(module.Element)
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def tag_counting_parser(module: Any) -> type:
    """A subclass of ``module.Parser`` (Material's search plugin) with its three handlers rewritten."""
    base, element, section_type, void = module.Parser, module.Element, module.Section, module.void

    class TagCountingParser(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.open_tags: dict[str, int] = {}  # tag -> open elements of it in self.context
            # self.skip compares by tag (Element.__eq__, __hash__): its tags say all it holds.
            self.skip_tags = {x if isinstance(x, str) else x.tag for x in self.skip}

        def feed(self, data: str) -> None:
            """html.parser's ``feed`` of a whole page, by one regular expression where the page allows.

            The same calls, in the same order, with the same arguments as html.parser makes
            (text between tags as one unescaped run, tag and attribute names lowercased,
            values unescaped, ``<x/>`` as a start and an end tag). Anything but the markup
            ``_TOKEN`` knows, or a page fed in pieces, goes to html.parser.
            """
            tokens = None if self.rawdata or _RAW_TEXT.search(data) else list(_TOKEN.finditer(data))
            if tokens is None or len(tokens) != data.count("<"):
                super().feed(data)
                return
            at = 0
            i = 0
            while i < len(tokens):
                m = tokens[i]
                i += 1
                start = m.start()
                if start > at:
                    self.handle_data(unescape(data[at:start]))
                at = m.end()
                if m.group("tag") == "table" and not m.group("attrs") and not m.group("close"):
                    end = _table_end(tokens, i - 1)
                    if end is not None and self.plain_table_context():
                        # The whole table: its texts, as handle_data would take them here; its tags
                        # open and close elements no rule looks at (see plain_table_context).
                        for t in tokens[i:end + 1]:
                            if t.start() > at:
                                self.table_data(unescape(data[at:t.start()]))
                            at = t.end()
                        i = end + 1
                        continue
                if m.group("end"):
                    self.handle_endtag(m.group("etag").lower())
                elif m.group("tag"):
                    tag = m.group("tag").lower()
                    attrs = [(name.lower(), None if value is None else unescape(value))
                             for name, value in _attrs(m.group("attrs"))]
                    if m.group("close"):
                        self.handle_startendtag(tag, attrs)
                    else:
                        self.handle_starttag(tag, attrs)
                else:
                    self.handle_comment(m.group("comment"))
            if at < len(data):
                self.handle_data(unescape(data[at:]))

        def plain_table_context(self) -> bool:
            """Whether a table of ``TABLE_TAGS`` alone (``_table_end``) opened here changes the index only
            by its texts: no element is being skipped, none of its tags is kept or skipped, the text goes
            to the section's text (not its title, not in a ``pre``), and no end tag inside it can
            return to an earlier section (the section starts no deeper than the table)."""
            section = self.section
            return (section is not None and not self.skipping() and "pre" not in self.open_tags
                    and section.el.tag not in self.open_tags and section.depth <= len(self.context) + 1
                    and not (TABLE_TAGS & self.skip_tags) and not (TABLE_TAGS & set(self.keep)))

        def table_data(self, data: str) -> None:
            """``handle_data`` in a table opened where ``plain_table_context`` holds."""
            text = self.section.text
            if data.isspace():
                if not text or not text[-1].isspace():
                    text.append(" ")
            else:
                text.append(escape(data.replace("\n", " "), quote=False))

        def skipping(self) -> bool:
            open_tags = self.open_tags
            return any(tag in open_tags for tag in self.skip_tags)

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            attrs = dict(attrs)
            el = element(tag, attrs)
            if tag in void:
                return
            self.context.append(el)
            self.open_tags[tag] = self.open_tags.get(tag, 0) + 1
            if tag in HEADINGS:
                depth = len(self.context)
                if "id" in attrs:
                    if tag != "h1" and not self.data:
                        self.section = section_type(element("hx"), depth)
                        self.data.append(self.section)
                    self.section = section_type(el, depth)
                    if self.data:
                        self.section.id = attrs["id"]
                    self.data.append(self.section)
            if not self.section:
                self.section = section_type(element("hx"))
                self.data.append(self.section)
            for key, value in attrs.items():
                if key == "data-search-exclude" or (key == "class" and value == "linenodiv"):
                    self.skip_tags.add(tag)
                    return
            if tag in self.keep and not self.skipping():
                data = self.section.title if self.section.el.tag in self.open_tags else self.section.text
                data.append(f"<{tag}>")

        def handle_endtag(self, tag: str) -> None:
            if not self.context or self.context[-1].tag != tag:
                return
            if self.section.depth > len(self.context):
                for section in reversed(self.data):
                    if section.depth <= len(self.context):
                        self.section.depth = float("inf")
                        self.section = section
                        break
            el = self.context.pop()
            left = self.open_tags[el.tag] - 1
            if left:
                self.open_tags[el.tag] = left
            else:
                del self.open_tags[el.tag]
            if el.tag in self.skip_tags:
                if el.tag not in ("script", "style", "object"):
                    self.skip_tags.discard(el.tag)
                return
            if tag in self.keep and not self.skipping():
                data = self.section.title if self.section.el.tag in self.open_tags else self.section.text
                index = data.index(f"<{tag}>")
                for i in range(index + 1, len(data)):
                    if not data[i].isspace():
                        index = len(data)
                        break
                if len(data) > index:
                    while len(data) > index:
                        data.pop()
                else:
                    data.append(f"</{tag}>")

        def handle_data(self, data: str) -> None:
            if self.skipping():
                return
            in_pre = "pre" in self.open_tags
            if not in_pre:
                data = data.replace("\n", " ") if not data.isspace() else " "
            if not self.section:
                self.section = section_type(element("hx"))
                self.data.append(self.section)
            if self.section.el.tag in self.open_tags:
                permalink = any(el.tag == "a" and el.attrs.get("class") == "headerlink" for el in self.context)
                if not permalink:
                    self.section.title.append(escape(data, quote=False))
            elif data.isspace():
                if not self.section.text or not self.section.text[-1].isspace():
                    self.section.text.append(data)
                elif in_pre:
                    self.section.text.append(data)
            else:
                self.section.text.append(escape(data, quote=False))

    return TagCountingParser


def _table_end(tokens: list[re.Match[str]], at: int) -> int | None:
    """The index of the ``</table>`` token closing the ``<table>`` at ``at`` when everything between is
    well-nested start and end tags of ``TABLE_TAGS`` with no attribute but ``style`` (the tables
    Python-Markdown writes); else None."""
    open_tags: list[str] = []
    for i in range(at + 1, len(tokens)):
        m = tokens[i]
        if m.group("end"):
            tag = m.group("etag").lower()
            if not open_tags:
                return i if tag == "table" else None
            if open_tags.pop() != tag:
                return None
        elif m.group("tag"):
            tag = m.group("tag").lower()
            if tag not in CELL_TAGS or m.group("close") or (m.group("attrs") and _STYLE.fullmatch(m.group("attrs")) is None):
                return None
            open_tags.append(tag)
        else:
            return None
    return None


def _attrs(text: str) -> list[tuple[str, str | None]]:
    """``name="value"`` and bare ``name`` pairs of a start tag (``_TOKEN``'s attributes), in order."""
    return [(m.group(1), m.group(2)) for m in _ATTR.finditer(text)]


class MemoJieba:
    """jieba, whose ``cut`` of a text already cut returns the same words without cutting it again."""

    def __init__(self, jieba: Any) -> None:
        self._jieba = jieba
        self._cut = lru_cache(maxsize=65536)(lambda text, args, kwargs: tuple(jieba.cut(text, *args, **dict(kwargs))))

    def cut(self, text: Any, *args: Any, **kwargs: Any) -> Any:
        return iter(self._cut(text, args, tuple(sorted(kwargs.items()))))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jieba, name)


def install(module: Any) -> bool:
    """Put the faster parser and jieba into Material's search plugin module; True if the parser went in."""
    jieba = getattr(module, "jieba", None)
    if jieba is not None and not isinstance(jieba, MemoJieba):
        module.jieba = MemoJieba(jieba)
    if getattr(module.Parser, "tag_counting", False):
        return True
    if parser_fingerprint(module) not in KNOWN_PARSERS:
        return False
    parser = tag_counting_parser(module)
    parser.tag_counting = True
    module.Parser = parser
    return True


def on_config(config: Any) -> Any:
    """MkDocs' first event of a build, before any page is indexed."""
    try:
        from material.plugins.search import plugin
    except ImportError:  # no Material: nothing to speed up
        return config
    install(plugin)
    return config
