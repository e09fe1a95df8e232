"""The text of a comparison row's notes, in each language of the site.

A ``runformat.vocabulary.Note`` is a code and parameters; its message is the entry of
the code in the ``[notes]`` table of ``reporter/present/i18n/<lang>.toml``, with ``{param}``
placeholders. Fractions (``noise``, ``band``) are shown as percentages, other numbers
in their shortest form.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from runformat.vocabulary import Note
from reporter.present.messages import Catalogue

# Parameters that hold a fraction and read as a percentage.
FRACTION_PARAMS = frozenset({"noise", "band", "level"})
# Parameters that hold a word of the catalogue: the parameter and the table its words are in.
WORD_PARAMS = {"side": "side", "setting": "setting_name", "verdict": "verdict"}


@lru_cache(maxsize=None)
def _messages(lang: str) -> Catalogue:
    return Catalogue(lang)


def format_param(name: str, value: Any) -> str:
    """One parameter as it appears in a message: ``0.01`` -> ``1%`` for fractions, ``3.0`` -> ``3``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        if name in FRACTION_PARAMS:
            return f"{value * 100:g}%"
        return f"{value:.6g}"
    return str(value)


def note_text(note: Note, lang: str) -> str:
    """The message of ``note`` in ``lang`` (``en`` or ``zh``), parameters filled in, as plain text.

    A code without a message in ``lang`` falls back to English, then to the code itself
    (``Catalogue``); ``tests/test_stats.py`` checks that every code has both. Words that
    a parameter holds (a side, a precision setting, on/off) are said in ``lang`` too.
    """
    t = _messages(lang)
    params = {k: _word(t, k, v) for k, v in note.params}
    return t.plain(f"notes.{note.code.value}", **params)


def _word(t: Catalogue, name: str, value: Any) -> str:
    if isinstance(value, bool):
        return t.plain(f"setting_value.{'on' if value else 'off'}")
    if name in WORD_PARAMS and isinstance(value, str) and t.has(f"{WORD_PARAMS[name]}.{value}"):
        return t.plain(f"{WORD_PARAMS[name]}.{value}")
    return format_param(name, value)
