"""Recorded values made inert before they are printed to a terminal (standard library only).

Strings a run records come from whatever ran (labels, image names, environment values,
error texts); printed raw, an ANSI or OSC escape in one can recolour the terminal,
retitle the window, forge a hyperlink or hide text. ``inert`` writes every control
character (``\\x1b``) and every bidirectional override (``\\u202e``) out as its escape, as
``repr`` does, so the reader sees that the value holds one. Both CLIs print through it
(the reporter adds rich-markup escaping in ``reporter.terminal``).
"""

from __future__ import annotations

import re
from typing import Any

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


def inert_json(text: str) -> str:
    """JSON text with every unsafe character written as a JSON ``\\uXXXX`` escape: the same data
    to a JSON reader, plain text to a terminal (they only occur inside strings)."""
    return _UNSAFE_KEEP_LINES.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
