"""Where every generated page lives under the site folder, and safe file names for run strings."""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any

from runformat.schema import is_valid_run_id

_SAFE_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def slug(text: str) -> str:
    """A file name for ``text``: itself when already safe, else a sanitised form plus a short hash."""
    if _SAFE_SLUG.fullmatch(text) and not text.endswith("."):
        return text
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", text)).strip("._-")[:60] or "x"
    return f"{cleaned}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def run_slug(run_id: str) -> str:
    return run_id if is_valid_run_id(run_id) else slug(run_id)


def label_page(label: str) -> str:
    return f"runs/{slug(label)}/index.md"


def run_page(label: str, run_id: str) -> str:
    return f"runs/{slug(label)}/{run_slug(run_id)}/index.md"


def article_page(spec_slug: str) -> str:
    return f"reports/{spec_slug}.md"


def relpath(from_page: str, to: str) -> str:
    """The link from the page at ``from_page`` to ``to`` (both relative to the site root)."""
    return posixpath.relpath(to, posixpath.dirname(from_page) or ".")


def distinct(values: Any) -> list[str]:
    """Distinct non-empty values as strings, in first-seen order."""
    out: list[str] = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        s = str(v)
        if s and s not in out:
            out.append(s)
    return out
