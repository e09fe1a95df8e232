"""The en/zh message catalogues (``reporter/present/i18n/<lang>.toml``) as plain text.

``Catalogue`` looks messages up and fills in their ``{name}`` fields without escaping;
the computing side uses it for human case labels and headings, and
``reporter.present.render.Messages`` builds on it to put escaped values into Markdown.
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from reporter.options import LANGUAGES

I18N_DIR = Path(__file__).resolve().parent / "i18n"


class Catalogue:
    """The strings of one language. A key missing from it falls back to English, then to the key.

    The fallback keeps a build going when a message is missing; the test
    ``test_every_english_string_has_a_chinese_one`` keeps the Chinese catalogue complete.
    """

    def __init__(self, lang: str, words: str | None = None) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}; choose one of: {', '.join(LANGUAGES)}")
        self.lang = lang
        # ``words``: a device's own words ("cpu": processes, not GPUs; 内存, not 显存), kept in the
        # catalogue's ``[on_cpu]`` table and looked up before the plain key.
        self.words = words
        self._own = load_messages(lang)
        self._fallback = load_messages("en") if lang != "en" else self._own
        self._found: dict[str, Any] = {}  # key -> its value, looked up once (a site asks for some 100,000)

    def raw(self, key: str) -> Any:
        """The stored value (a string, a list or a table) at ``key``."""
        try:
            return self._found[key]
        except KeyError:
            found = self._found[key] = self._lookup(key)
            return found

    def _lookup(self, key: str) -> Any:
        keys = ([f"on_{self.words}.{key}"] if self.words else []) + [key]
        for table, k in ((t, k) for t in (self._own, self._fallback) for k in keys):
            node: Any = table
            for part in k.split("."):
                if not isinstance(node, dict) or part not in node:
                    node = None
                    break
                node = node[part]
            if node is not None:
                return node
        return None

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def plain(self, key: str, **values: Any) -> str:
        """The message as plain text, values inserted unescaped (labels, chart text)."""
        message = self.raw(key)
        if not isinstance(message, str):
            return key
        if not values and "{" not in message and "}" not in message:
            return message  # nothing to fill in or unescape
        return SafeFormatter().vformat(message, (), {k: str(v) for k, v in values.items()})


class SafeFormatter(string.Formatter):
    """``str.format`` that only substitutes plain names (no attribute or index access)."""

    def get_field(self, field_name: str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        if not field_name.isidentifier():
            raise ValueError(f"message field {field_name!r} must be a plain name")
        return kwargs.get(field_name, "{" + field_name + "}"), field_name


@lru_cache(maxsize=None)
def load_messages(lang: str) -> dict[str, Any]:
    with open(I18N_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


_CATALOGUES: dict[tuple[str, str | None], Catalogue] = {}


def catalogue(lang: str, words: str | None = None) -> Catalogue:
    """The (cached) catalogue of ``lang``, with a device's own ``words`` (see ``Catalogue``)."""
    if (lang, words) not in _CATALOGUES:
        _CATALOGUES[(lang, words)] = Catalogue(lang, words)
    return _CATALOGUES[(lang, words)]
