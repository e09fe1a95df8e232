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

from typing import Any

from rich.markup import escape

from runformat.terminal import inert, inert_json

__all__ = ["inert", "inert_json", "inert_markup"]


def inert_markup(value: Any, *, keep_newlines: bool = False) -> str:
    """``inert`` for text printed with rich markup on: ``[bold]`` in a value stays literal."""
    return escape(inert(value, keep_newlines=keep_newlines))
