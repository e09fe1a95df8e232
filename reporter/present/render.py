"""The Jinja2 environment the site is rendered with: Markdown escaping, number formats, strings.

Every value a template prints with ``{{ ... }}`` passes through ``finalize``, which
escapes it for Markdown *and* HTML unless it is ``Markup`` (text this package produced
itself: formatted numbers, links to generated pages, the SVG of a chart). A string from
a run — a label, an image name, a fingerprint value, an error text, case parameters —
is therefore escaped wherever it is rendered, and a string that looks like Jinja
(``{{ 7*7 }}``) is only ever data: templates are loaded from files, never from strings
that came from a run.

User-facing text lives in ``reporter/present/i18n/<lang>.toml``, one file per language, looked
up with ``t("dotted.key", name=value)``; the values substituted into a message are
escaped the same way.
"""

from __future__ import annotations

import html
import math
import posixpath
import re
import urllib.parse
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import jinja2
import markdown
from markupsafe import Markup
from mkdocs.structure.files import File

from reporter.present.messages import LANGUAGES, Catalogue, SafeFormatter
from reporter.present.tables import Table, render_html

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
__all__ = ["LANGUAGES", "Messages", "make_environment", "render_page", "md_escape"]

# Characters with a meaning in Markdown, the Markdown extensions the site enables, or
# HTML. Replaced by numeric character references, which Markdown passes through as
# literal text and the browser shows as the character itself. With brackets escaped no
# link or image can form, and since a value never starts a line (line breaks become
# <br>), list, heading and table syntax cannot start inside one either.
_MD_SPECIAL = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    "|": "&#124;",
    "`": "&#96;",
    "[": "&#91;",
    "]": "&#93;",
    "{": "&#123;",
    "}": "&#125;",
    "*": "&#42;",
    "_": "&#95;",
    "\\": "&#92;",
    "#": "&#35;",
}
_MD_SPECIAL_RE = re.compile("[" + re.escape("".join(_MD_SPECIAL)) + "]")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Text with no Markdown or HTML syntax character, no control character and no line break.
_PLAIN_RE = re.compile("[^" + re.escape("".join(_MD_SPECIAL)) + r"\x00-\x1f\x7f]*")


def md_escape(value: Any) -> Markup:
    """``value`` as inline Markdown text that renders literally, on one logical line.

    Markdown and HTML syntax characters become character references, control characters
    are dropped, and line breaks become ``<br>`` so a value can sit in a table cell.
    ``Markup`` passes through unchanged.
    """
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    if _PLAIN_RE.fullmatch(text):  # most values: nothing to escape, drop or break
        return Markup(text)
    text = _CONTROL_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _MD_SPECIAL_RE.sub(lambda m: _MD_SPECIAL[m.group(0)], text)
    # A leading space or a run of spaces is harmless; keep lines apart as <br>.
    return Markup(text.replace("\n", "<br>"))


def md_escape_one_line(value: Any) -> Markup:
    """Like ``md_escape`` but joins lines with spaces (for headings and link text)."""
    if isinstance(value, Markup):
        return value
    return md_escape(" ".join(str("" if value is None else value).split()))


def no_angle(value: Any) -> str:
    """``value`` with ``<`` and ``>`` as ‹ and › (for page titles, before escaping).

    MkDocs takes a page's title from its H1 and Material writes it into ``<title>``
    through ``striptags``, which turns character references back into characters
    unescaped: a title holding ``&lt;/title&gt;`` would close the element. Titles that
    show strings from runs therefore hold no angle brackets at all.
    """
    return str("" if value is None else value).replace("<", "‹").replace(">", "›")


def html_pre(value: Any) -> Markup:
    """A ``<pre><code>`` block of literal text (commands, long values), safe in Markdown.

    Written as one line of raw HTML (newlines as ``&#10;``) so Markdown treats it as one
    HTML block and never parses its content.
    """
    text = _CONTROL_RE.sub("", "" if value is None else str(value))
    escaped = html.escape(text, quote=True).replace("\n", "&#10;")
    # Braces too, so no template syntax survives even in a raw HTML block.
    escaped = escaped.replace("{", "&#123;").replace("}", "&#125;")
    return Markup(f'<pre class="ib-pre"><code>{escaped}</code></pre>')


def url_path(path: str) -> Markup:
    """A relative link target, percent-encoded (only paths this package built)."""
    return Markup(urllib.parse.quote(path, safe="/#.-_~"))


def _finalize(value: Any) -> Any:
    if value is None:
        return Markup("")
    return md_escape(value)


# ---- numbers ---------------------------------------------------------------------------------

DASH = Markup("—")


def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def format_sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, no exponent for everyday sizes."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    if abs(value) >= 1e7 or abs(value) < 1e-4:
        return f"{value:.{digits - 1}e}"
    return f"{value:,.{decimals}f}"


def fmt_seconds(value: Any) -> Markup:
    """A time in s as ns, µs, ms or s with three significant digits."""
    if not _finite(value):
        return DASH
    v = float(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(v) >= scale or unit == "ns":
            return Markup(f"{format_sig(v / scale)} {unit}")
    return DASH  # pragma: no cover


def fmt_bytes(value: Any) -> Markup:
    """A size in bytes as KiB, MiB or GiB."""
    if not _finite(value):
        return DASH
    v = float(value)
    for scale, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(v) >= scale:
            return Markup(f"{format_sig(v / scale)} {unit}")
    return Markup(f"{v:,.0f} B")


def fmt_number(value: Any, digits: int = 3) -> Markup:
    """A plain number with ``digits`` significant digits."""
    if not _finite(value):
        return DASH
    return Markup(format_sig(float(value), digits))


def fmt_exact(value: Any) -> Markup:
    """A value exactly as recorded (up to 10 significant digits), for numerical drift."""
    if not _finite(value):
        return DASH
    return Markup(f"{float(value):.10g}")


def fmt_int(value: Any) -> Markup:
    """A count."""
    if not _finite(value):
        return DASH
    return Markup(f"{float(value):,.0f}")


def fmt_value(value: Any, unit: str) -> Markup:
    """A metric value in its schema unit (s, bytes, items/s, count, %, 1)."""
    if unit == "s":
        return fmt_seconds(value)
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "count":
        return fmt_int(value)
    if unit == "%":
        return Markup(f"{fmt_number(value)} %") if _finite(value) else DASH
    if unit == "1":
        return fmt_exact(value)
    if not _finite(value):
        return DASH
    return Markup(f"{format_sig(float(value))} {md_escape(unit)}")


def fmt_ratio(value: Any) -> Markup:
    """A ratio as ``1.083×``."""
    if not _finite(value):
        return DASH
    return Markup(f"{float(value):.3f}×")


def fmt_ci(low: Any, high: Any, fmt: str = "ratio") -> Markup:
    """A CI as ``[1.071, 1.095]`` in the given format."""
    if not (_finite(low) and _finite(high)):
        return DASH
    if fmt == "ratio":
        return Markup(f"[{float(low):.3f}, {float(high):.3f}]")
    f = FORMATTERS[fmt]
    return Markup(f"[{f(low)}, {f(high)}]")


def fmt_percent(value: Any, signed: bool = False, digits: int = 1) -> Markup:
    """A fraction as a percentage (``0.083`` -> ``8.3%``)."""
    if not _finite(value):
        return DASH
    sign = "+" if signed and float(value) > 0 else ""
    return Markup(f"{sign}{float(value) * 100:.{digits}f}%")


def fmt_pvalue(value: Any) -> Markup:
    """A p-value: ``<0.001`` below a thousandth."""
    if not _finite(value):
        return DASH
    v = float(value)
    return Markup("&lt;0.001" if v < 0.001 else f"{v:.3f}")


FORMATTERS = {
    "seconds": fmt_seconds,
    "bytes": fmt_bytes,
    "number": fmt_number,
    "int": fmt_int,
    "ratio": fmt_ratio,
}


# ---- strings -------------------------------------------------------------------------------


class Messages(Catalogue):
    """The catalogue of one language for pages: ``t("a.b", n=3)`` is the message with escaped values.

    A message is trusted Markdown from this repository; the values put into it are
    escaped unless they are ``Markup``.
    """

    def paragraphs(self, key: str) -> list[Markup]:
        """A list of trusted Markdown paragraphs stored at ``key``."""
        value = self.raw(key)
        if isinstance(value, str):
            value = [value]
        return [Markup(p) for p in value or [] if isinstance(p, str)]

    def __call__(self, key: str, **values: Any) -> Markup:
        message = self.raw(key)
        if not isinstance(message, str):
            return md_escape(key)
        escaped = {k: md_escape(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else Markup(str(v))
                   for k, v in values.items()}
        return Markup(SafeFormatter().vformat(message, (), escaped))


# ---- the format hooks of the table model ----------------------------------------------------------


def fmt_ratio_ci(value: Any) -> Markup:
    """A ratio with its CI: ``1.838× [1.730, 1.954]``; large ratios with three significant digits."""
    if value is None or not _finite(value.value):
        return DASH
    r = float(value.value)
    text = f"{r:.3f}×" if r < 10 else f"{format_sig(r)}×"
    if value.has_ci:
        lo, hi = float(value.low), float(value.high)
        text += f" [{lo:.3f}, {hi:.3f}]" if hi < 10 else f" [{format_sig(lo)}, {format_sig(hi)}]"
    return Markup(text)


def fmt_fraction_ci(value: Any) -> Markup:
    if value is None or not _finite(value.value):
        return DASH
    text = f"{value.value * 100:.1f}%"
    if value.has_ci:
        text += f" [{value.low * 100:.1f}%, {value.high * 100:.1f}%]"
    return Markup(text)


def fmt_value_ci(value: Any) -> Markup:
    """``(Interval, unit)`` as ``12.3 ms [12.1 ms, 12.6 ms]``."""
    if value is None or value[0] is None or not _finite(value[0].value):
        return DASH
    iv, unit = value
    text = str(fmt_value(iv.value, unit))
    if iv.has_ci:
        text += f" [{fmt_value(iv.low, unit)}, {fmt_value(iv.high, unit)}]"
    return Markup(text)


def fmt_derived(value: Any) -> Markup:
    """A derived figure ``(Interval, unit)``: a factor, a fraction, or a value in its unit, with its CI."""
    if value is None or value[0] is None:
        return DASH
    iv, unit = value
    if unit == "x":
        return fmt_ratio_ci(iv)
    if unit == "fraction":
        return fmt_fraction_ci(iv)
    return fmt_value_ci(value)


def fmt_peak(value: Any) -> Markup:
    """``(Rate, Rate)`` as the share of each side's peak: ``61% → 64%``."""
    if not value:
        return DASH
    parts = [f"{r.peak_fraction * 100:.0f}%" if r is not None and r.peak_fraction is not None else "—" for r in value]
    return DASH if all(p == "—" for p in parts) else Markup(" → ".join(parts))


def fmt_rate(value: Any) -> Markup:
    if value is None:
        return DASH
    return Markup(f"{format_sig(value.value)} {md_escape(value.unit)}")


def fmt_reldiff(value: Any) -> Markup:
    """A numerical difference: ``identical``, or the relative difference in scientific notation."""
    if value is None:
        return DASH
    identical, rel, word = value
    if identical:
        return Markup(word)
    if not _finite(rel):
        return DASH
    return Markup(f"{float(rel):+.2e}")


# What inline Markdown needs to change a text: code, an escape, emphasis, a link. ``md_escape``
# leaves none of them in a text, so only a trusted message (``Messages``) can hold them.
_INLINE_SYNTAX = re.compile(r"[`\\*_]|\]\(")
_MARKDOWN = markdown.Markdown()


def inline_html(text: Markup) -> Markup:
    """A trusted message in inline Markdown (a table cell of the methodology, say) as HTML, by Python-Markdown."""
    if _INLINE_SYNTAX.search(text) is None:
        return text
    out = _MARKDOWN.reset().convert(text)
    if not (out.startswith("<p>") and out.endswith("</p>")) or "<p>" in out[3:]:
        raise ValueError(f"not one line of inline Markdown: {text!r}")
    return Markup(out[3:-4])


def _hook_text(value: Any) -> Markup:
    if value is None or value == "":
        return DASH
    return inline_html(value) if isinstance(value, Markup) else md_escape(value)


@lru_cache(maxsize=65536)
def served_href(page: str, href: str) -> str:
    """The link ``href`` of the page ``page`` (a file's path relative to the page's, as a Markdown link
    says it) as MkDocs serves it: the target's URL relative to the page's (directory URLs).

    MkDocs rewrites the links of Markdown, not those of raw HTML, such as the tables'."""
    path, _, anchor = href.partition("#")
    if not path:
        return href
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), urllib.parse.unquote(path)))
    url = _served(target).url_relative_to(_served(page))
    return f"{url}#{anchor}" if anchor else url


def _served(path: str) -> File:
    return File(path, None, "", use_directory_urls=True)


def _hook_link(value: Any, page: str) -> Markup:
    if not value:
        return DASH
    return Markup(f'<a href="{html.escape(served_href(page, value.href))}">{md_escape_one_line(value.text)}</a>')


def _hook_link_or_code(value: Any, page: str) -> Markup:
    """A link, or a command to run where there is nothing to link (trends' comparisons)."""
    if isinstance(value, str):
        return Markup(f"<code>{md_escape(value)}</code>")
    return _hook_link(value, page)


def _hook_value(value: Any) -> Markup:
    if value is None or value[0] is None:
        return DASH
    return fmt_value(value[0], value[1])


def _hook_median_ci(value: Any) -> Markup:
    """A trend cell: median [CI] with ▲/▼ where the neighbour comparison called a change."""
    if value is None:
        return DASH
    unit = value["unit"]
    flag = {"better": " ▲", "worse": " ▼"}.get(value.get("flag") or "", "")
    return Markup(f"{fmt_value(value['median'], unit)} [{fmt_value(value['low'], unit)}, {fmt_value(value['high'], unit)}]{flag}")


def _hook_interval(value: Any) -> Markup:
    """``(low, high, unit)`` as ``[12.1 ms, 12.6 ms]``."""
    if value is None or value[0] is None:
        return DASH
    return Markup(f"[{fmt_value(value[0], value[2])}, {fmt_value(value[1], value[2])}]")


HOOKS: dict[str, Callable[[Any], Markup]] = {
    "median_ci": _hook_median_ci,
    "interval": _hook_interval,
    "text": _hook_text,
    "markup": lambda v: DASH if v is None else inline_html(Markup(v)),
    "value": _hook_value,
    "value_ci": fmt_value_ci,
    "ratio": fmt_ratio,
    "ratio_ci": fmt_ratio_ci,
    "ci": lambda v: DASH if v is None else fmt_ci(v[0], v[1]),
    "derived": fmt_derived,
    "peak": fmt_peak,
    "rate": fmt_rate,
    "percent": fmt_percent,
    "signed_percent": lambda v: fmt_percent(v, True, 3),
    "pvalue": fmt_pvalue,
    "int": fmt_int,
    "code": lambda v: Markup(f"<code>{md_escape(v)}</code>"),
    "exact": fmt_exact,
    "reldiff": fmt_reldiff,
}


def render_table(table: Table, summary: Markup | None = None, *, page: str) -> Markup:
    """A table of the model on the page ``page`` as HTML in its CSS box, every cell through its kind's
    hook; with a ``summary``, in a collapsible box of that title (as pymdownx.details writes ``??? note``).

    A page's Markdown keeps it as one raw HTML block (blank lines around it, never indented)."""
    hooks = {**HOOKS, "link": lambda v: _hook_link(v, page), "link_or_code": lambda v: _hook_link_or_code(v, page)}
    table_html = render_html(table, hooks, title=lambda title: str(md_escape(title)))
    if summary is None:
        return Markup(table_html)
    return Markup(f'<details class="note">\n<summary>{inline_html(md_escape(summary))}</summary>\n{table_html}\n</details>')


@jinja2.pass_context
def _table_filter(context: jinja2.runtime.Context, table: Table, summary: Markup | None = None) -> Markup:
    return render_table(table, summary, page=context["page"])


# ---- the environment -----------------------------------------------------------------------


def make_environment(lang: str, words: str | None = None) -> jinja2.Environment:
    """A Jinja2 environment for ``lang`` (and a device's ``words``, see ``Catalogue``): file
    templates, Markdown escaping, strict undefined."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        # ``finalize`` escapes for Markdown and HTML and returns Markup, which autoescape
        # then leaves alone; autoescape makes macro output Markup so it is not escaped twice.
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=md_escape,
        one_line=md_escape_one_line,
        no_angle=no_angle,
        pre=html_pre,
        url=url_path,
        seconds=fmt_seconds,
        bytes=fmt_bytes,
        number=fmt_number,
        int=fmt_int,
        exact=fmt_exact,
        value=fmt_value,
        ratio=fmt_ratio,
        percent=fmt_percent,
        pvalue=fmt_pvalue,
        ci=fmt_ci,
        ratio_ci=fmt_ratio_ci,
        fraction_ci=fmt_fraction_ci,
        table=_table_filter,
    )
    messages = Messages(lang, words)
    env.filters["stack_name"] = lambda name: messages.plain(f"stack.{name}")
    env.globals["t"] = messages
    env.globals["lang"] = lang
    env.globals["DASH"] = DASH
    return env


_ENVIRONMENTS: dict[tuple[str, str | None], jinja2.Environment] = {}


def render_page(template: str, view: Any, lang: str, *, marker: str = "", data: Any = None, page: str = "index.md") -> str:
    """The Markdown of one page: ``template`` (a file under reporter/present/templates) filled with ``view``.

    The view is available to templates as ``v``, the computed data (an article's
    ``ArticleData``) as ``a``; ``marker`` is the text of the generated-page comment; ``page`` is
    where the page lives under the site folder (its tables' links are written from there).
    """
    words = getattr(data, "words", None)  # an article of CPU runs speaks of processes, not GPUs
    env = _ENVIRONMENTS.get((lang, words))
    if env is None:
        env = _ENVIRONMENTS[(lang, words)] = make_environment(lang, words)
    return env.get_template(template).render(a=data if data is not None else view, v=view, page=page,
                                                    generated_marker=Markup(marker))
