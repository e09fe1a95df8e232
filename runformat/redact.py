"""Redaction of credentials: the one function every recorded or rendered value passes through.

``redact(text)`` replaces what it recognises as a credential with ``[redacted]`` and keeps
the rest, so a record still says what it was (``http://alice:[redacted]@proxy:3128``):

* URL userinfo: the password of ``scheme://user:password@host`` (a password may hold ``/``
  or ``@``: everything up to the last ``@`` of the word is userinfo), or the whole user
  when there is no password (``https://<token>@host``);
* secret-named URL query parameters (``?access_token=...``, ``&sig=...``);
* ``name=value`` and ``"name": "value"`` pairs whose name says secret (``password=``,
  ``api_key=``, ``--token=``), and ``Authorization:`` / ``Bearer`` / ``Basic`` credentials;
* token shapes: GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``),
  GitLab (``glpat-``), Hugging Face (``hf_``), Slack (``xox[abprs]-``), OpenAI-style
  ``sk-``, Google ``AIza``, JSON web tokens, AWS access key ids (``AKIA``/``ASIA``) and
  PEM private key blocks;
* with ``entropy=True`` (environment variables, command lines, image names): any word
  that looks random enough to be a secret (long, mixed classes, high entropy), except
  GPU and MIG device ids, which are part of the record.

It is idempotent (``redact(redact(x)) == redact(x)``), so the reporter re-applies it to
runs recorded by older collectors. ``redact_entry`` picks the mode for one fingerprint
row; ``redact_argv`` and ``redact_command_line`` handle secret-named flags whose value is
the next word; ``redact_image`` handles ``user:password@registry/image`` without a scheme.
Standard library only: the collector runs inside the stack under test.
"""

from __future__ import annotations

import functools
import math
import re
import shlex
from collections import Counter
from typing import Iterable

REDACTED = "[redacted]"
REDACTED_KEY = "[redacted private key]"
# Flags whose value is an image name (``user:password@registry/...`` has no scheme to spot).
IMAGE_FLAGS = ("--image",)

# Names that suggest a secret (environment variables, flags, key=value names).
SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
_SECRET_WORD = (
    r"(?:token|secret|passw(?:or)?d|passphrase|pwd|api[_-]?key|access[_-]?key|private[_-]?key|auth(?!or)"
    r"|credentials?|cookie|sig(?:nature)?(?![a-z]))"
)
# In a URL query any "key" counts (``?key=...`` is how several APIs take theirs).
_QUERY_WORD = r"(?:" + _SECRET_WORD[3:-1] + r"|key)"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
# scheme://userinfo@ : userinfo runs to the last "@" before the word ends.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^\s\"'<>]*)@(?=[^\s\"'<>@]*(?:[\s\"'<>]|\Z))")
_URL_QUERY = re.compile(r"(?P<name>[?&;][^=&;#\s]*" + _QUERY_WORD + r"[^=&;#\s]*=)(?P<value>[^&;#\s]*)", re.I)
_AUTH_HEADER = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization\s*[:=]\s*)(?:(?P<scheme>bearer|basic|token|digest|negotiate)\s+)?(?P<value>[^\s\"',;]+)", re.I
)
# "Bearer <token>" anywhere; "Basic <base64>" only when the word is base64 with a digit or padding.
_AUTH_SCHEME = re.compile(r"(?P<name>\b(?i:bearer)\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})|(?P<basic>\bBasic\s+)(?P<b64>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
_PAIR = re.compile(
    r"(?P<name>(?<![\w.-])-{0,2}[\w.-]*" + _SECRET_WORD + r"[\w.-]*\s*=\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;&\"']+)", re.I
)
_JSON_PAIR = re.compile(r"(?P<name>\"[\w.-]*" + _SECRET_WORD + r"[\w.-]*\"\s*:\s*)(?P<value>\"(?:[^\"\\]|\\.)*\")", re.I)
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[A-Z0-9]{16}"
    r")(?![A-Za-z0-9])"
)
# Device ids are long and random-looking but not secrets: GPU-<uuid>, MIG-<uuid> (or MIG-GPU-<uuid>/1/0).
DEVICE_UUID = re.compile(r"(?:MIG-)?(?:GPU-)?[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:/\d+/\d+)?")
_WORD_SPLIT = re.compile(r"([,;:\s\"'=@])")
_DIGEST_ALGO = re.compile(r"sha(?:1|224|256|384|512)|blake2b|blake3", re.I)
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_DIGEST = re.compile(r"@(?P<digest>[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,})$")
# Cheap test: text with none of these cannot hold anything the patterns look for.
_MAYBE = re.compile(r"://|[=@:]|PRIVATE KEY|bearer|basic|gh[pousr]_|github_pat_|glpat-|hf_|xox|sk-|AIza|eyJ|A[KSGIRNP][A-Z]A", re.I)


def looks_like_credential(word: str) -> bool:
    """True for a word that looks like a secret: long, random (high entropy), no spaces or paths."""
    if len(word) < 24 or word.startswith(("/", ".", "~")) or REDACTED in word:
        return False  # short, a path, or already redacted
    if word.startswith(("GPU-", "MIG-")) and DEVICE_UUID.fullmatch(word):
        return False  # which GPU a run used is part of its record
    if not re.fullmatch(r"[A-Za-z0-9+/=_\-.]+", word):
        return False
    counts = Counter(word)
    entropy = -sum(c / len(word) * math.log2(c / len(word)) for c in counts.values())
    classes = sum(bool(re.search(p, word)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    if classes == 3:
        return entropy >= 3.5
    return classes == 2 and "/" not in word and len(word) >= 32 and entropy >= 3.5


def _userinfo(m: re.Match[str]) -> str:
    info = m["userinfo"]
    if ":" in info:
        user = info.split(":", 1)[0]
        return f"{m['scheme']}{user}:{REDACTED}@"
    if "/" in info:
        return m.group(0)  # host/path@ref (a pip or git reference), not userinfo
    return f"{m['scheme']}{REDACTED}@"


def _keep_name(m: re.Match[str]) -> str:
    value = m["value"]
    if value.strip("\"'") == REDACTED:
        return m.group(0)
    quote = value[0] if value[:1] in "\"'" and len(value) > 1 and value[-1] == value[0] else ""
    return f"{m['name']}{quote}{REDACTED}{quote}"


def _auth_scheme(m: re.Match[str]) -> str:
    if m["name"]:
        return f"{m['name']}{REDACTED}"
    if re.search(r"[0-9=]", m["b64"]):
        return f"{m['basic']}{REDACTED}"
    return m.group(0)


def _auth_header(m: re.Match[str]) -> str:
    scheme = f"{m['scheme']} " if m["scheme"] else ""
    return f"{m['name']}{scheme}{REDACTED}"


def redact(text: str, *, entropy: bool = True) -> str:
    """``text`` with every recognised credential replaced by ``[redacted]`` (see the module docstring).

    ``entropy=False`` skips the random-looking-word test: for fingerprint values such as
    torch's build configuration, where long hex commit ids are facts, not secrets.
    """
    if not text:
        return text
    if _MAYBE.search(text):
        text = _PRIVATE_KEY.sub(REDACTED_KEY, text)
        text = _URL_USERINFO.sub(_userinfo, text)
        text = _URL_QUERY.sub(_keep_name, text)
        text = _AUTH_HEADER.sub(_auth_header, text)
        text = _AUTH_SCHEME.sub(_auth_scheme, text)
        text = _JSON_PAIR.sub(lambda m: m.group(0) if m["value"] == f'"{REDACTED}"' else f'{m["name"]}"{REDACTED}"', text)
        text = _PAIR.sub(_keep_name, text)
        text = _TOKENS.sub(REDACTED, text)
    if entropy:
        parts = _WORD_SPLIT.split(text)
        for i, part in enumerate(parts):
            # A content digest (sha256:<hex>) names exactly what ran: a fact, not a secret.
            digest = i >= 2 and parts[i - 1] == ":" and _DIGEST_ALGO.fullmatch(parts[i - 2]) and _HEX.fullmatch(part)
            if not digest and looks_like_credential(part):
                parts[i] = REDACTED
        text = "".join(parts)
    return text


def redact_image(name: str) -> str:
    """An image name with any credentials removed: ``user:password@registry/img`` as well as URLs.

    A digest (``img@sha256:<hex>``) is kept: it says exactly which image was measured.
    """
    digest = ""
    m = _DIGEST.search(name)
    if m:
        name, digest = name[: m.start()], name[m.start():]
    if "://" not in name and "@" in name:
        info, _, rest = name.rpartition("@")
        if ":" in info:
            name = f"{info.split(':', 1)[0]}:{REDACTED}@{rest}"
        else:
            name = f"{REDACTED}@{rest}"
    return redact(name) + digest


def redact_argv(argv: Iterable[str]) -> str:
    """The command line as one shell-quoted string, with secrets hidden.

    The value of a secret-named flag is hidden whether it is joined (``--token=xyz``) or the
    next word (``--api-key xyz``); an ``--image`` value goes through ``redact_image``, every
    other word through ``redact``.
    """
    out: list[str] = []
    hide_next = image_next = False
    for word in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if image_next:
            out.append(redact_image(word))
            image_next = False
            continue
        flag = word.split("=", 1)[0]
        if flag in IMAGE_FLAGS:
            if "=" in word:
                out.append(f"{flag}={redact_image(word.split('=', 1)[1])}")
            else:
                out.append(word)
                image_next = True
            continue
        if word.startswith("-") and SECRET_NAME.search(flag):
            if "=" in word:
                out.append(f"{flag}={REDACTED}")
            else:
                out.append(word)
                hide_next = True
            continue
        out.append(redact(word))
    return shlex.join(out)


def redact_command_line(line: str) -> str:
    """``redact_argv`` of a command line recorded as one string (older runs re-read by the reporter)."""
    try:
        words = shlex.split(line)
    except ValueError:  # unbalanced quotes: redact it as plain text
        return redact(line)
    return redact_argv(words)


@functools.lru_cache(maxsize=65536)
def redact_entry(section: str, key: str, value: str) -> str:
    """One fingerprint row's value, redacted as its kind needs.

    Environment variables with a secret-looking name are hidden whole; the command line,
    the image name and other environment variables get the full treatment; everything
    else (build configuration, versions, device facts) only the pattern matches.
    """
    if section == "env":
        return REDACTED if SECRET_NAME.search(key) and value else redact(value)
    if (section, key) == ("command", "argv"):
        return redact_command_line(value)
    if (section, key) == ("container", "image"):
        return redact_image(value)
    return redact(value, entropy=False)
