"""Values made inert before they reach a terminal.

Recorded strings (labels, image names, environment values, error texts, folder names)
come from whatever ran or whoever copied a folder into the archive; printed raw, an ANSI
or OSC escape in one can recolour the terminal, retitle the window, forge a hyperlink or
hide text. ``inert`` shows every control character as its escape (``\\x1b``), as does
``repr``, so the reader sees that the value holds one, and the bidirectional overrides
that reorder what is displayed (``\\u202e``); ``inert_markup`` also escapes rich markup
for text printed with markup on. The site is HTML-escaped by its templates instead.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape

# C0 and C1 controls and DEL, and the bidirectional embedding, override and isolate marks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(value: Any, *, keep_newlines: bool = False) -> str:
    """``str(value)`` with every control character (tab and newline too, unless ``keep_newlines``)
    and every bidirectional override written out as an escape, so the terminal prints it as text."""
    text = str(value)
    return (_UNSAFE_KEEP_LINES if keep_newlines else _UNSAFE).sub(_shown, text)


def inert_markup(value: Any, *, keep_newlines: bool = False) -> str:
    """``inert`` for text printed with rich markup on: ``[bold]`` in a value stays literal."""
    return escape(inert(value, keep_newlines=keep_newlines))


def inert_json(text: str) -> str:
    """JSON text with every unsafe character written as a JSON ``\\uXXXX`` escape: the same data
    to a JSON reader, plain text to a terminal (they only occur inside strings)."""
    return _UNSAFE_KEEP_LINES.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
