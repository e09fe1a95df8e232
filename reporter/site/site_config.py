"""The MkDocs configuration of a build, one per language, and the run of ``mkdocs build --strict``.

The site is published in every language of ``reporter.present.render.LANGUAGES``, each complete:
the root language (``[site] lang``, default en) is built from ``site/`` into ``public/``,
every other language from ``site/<lang>/`` into ``public/<lang>/``, with the same page
paths in each. Every build gets a small config that inherits the repository's mkdocs.yml
and sets, for its language:

- ``theme.language``: Material's own words (navigation, table of contents, search box)
  and ``<html lang>``;
- the navigation, with section titles from the message catalogue of that language;
- its own search index. Material's search plugin segments Chinese text at build time
  with jieba when jieba is installed, and the Chinese theme language splits the index
  and the query on the zero-width spaces it leaves, so Chinese words are found offline;
- a language switcher (``extra.alternate``) whose links lead to the same page in the
  other languages (theme override ``reporter/present/theme/partials/alternate.html``);
- ``exclude_docs`` for the root build, so the other languages' folders are not part of it.

The root build cleans ``public/`` as MkDocs does; the other languages are built at the
same time into folders beside it and moved into place once the root build is done.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from reporter.errors import ReporterError

REPO_ROOT = Path(__file__).resolve().parents[2]
THEME_OVERRIDES = Path(__file__).resolve().parents[1] / "present" / "theme"
# Material's search index built faster, the same byte for byte (reporter/site/search_speed.py).
SEARCH_SPEED_HOOK = Path(__file__).resolve().parent / "search_speed.py"
# How each language names itself in the switcher.
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}


def language_prefix(lang: str, root_lang: str) -> str:
    """The folder of ``lang``'s pages, relative to the site root: '' for the root language, else 'zh/'."""
    return "" if lang == root_lang else f"{lang}/"


def site_nav(
    titles: Mapping[str, str],
    report_pages: Sequence[str],
    label_pages: Sequence[str],
    family_pages: Sequence[str],
    validation_pages: Sequence[str] = (),
    guide_pages: Sequence[str] = (),
) -> list[Any]:
    """Home, then Reports, Runs (labels) and Trends (families) with their pages, then Methodology.

    ``titles`` holds the section names in the build's language (keys ``reports``, ``runs``,
    ``trends``, ``methodology``, and ``validation`` for the checks of imagebench itself, which
    follow the upgrade answers of Reports in a section of their own, and ``guide`` for the user
    guide's pages, its index first, when there are any); pages take their titles
    from their first heading.
    """
    checks = [{titles["validation"]: list(validation_pages)}] if validation_pages else []
    return [
        "index.md",
        {titles["reports"]: ["reports/index.md", *report_pages, *checks]},
        {titles["runs"]: ["runs/index.md", *label_pages]},
        {titles["trends"]: ["trends/index.md", *family_pages]},
        {titles["methodology"]: "methodology.md"},
        *([{titles["guide"]: list(guide_pages)}] if guide_pages else []),
    ]


@dataclass(frozen=True)
class LanguageBuild:
    """One language's MkDocs build: the language and its navigation (None: mkdocs.yml's)."""

    lang: str
    nav: list[Any] | None = None


def mkdocs_overrides(
    lang: str,
    *,
    docs_dir: Path,
    site_dir: Path,
    base: Path,
    languages: Sequence[str],
    root_lang: str,
    nav: list[Any] | None = None,
) -> dict[str, Any]:
    """The config of one language's build: it inherits ``base`` and sets what differs by language."""
    here = language_prefix(lang, root_lang)
    # A link of the switcher is this page's URL under the other language's root, written
    # relative to this build's root (the override of partials/alternate.html appends the page);
    # ``root`` is that language's folder under the site's root, for the 404 page, whose links
    # MkDocs writes from the site's root ("/"), as it is served at any missing path.
    up = "../" * here.count("/")
    alternate = [
        {"name": LANGUAGE_NAMES.get(other, other), "lang": other,
         "link": "" if other == lang else up + language_prefix(other, root_lang),
         "root": language_prefix(other, root_lang)}
        for other in languages
    ]
    overrides: dict[str, Any] = {
        "INHERIT": str(base.resolve()),
        "docs_dir": str(docs_dir.resolve()),
        "site_dir": str(site_dir.resolve()),
        "theme": {"language": lang, "custom_dir": str(THEME_OVERRIDES)},
        # The pages' tables are raw HTML, whose links MkDocs leaves as they are: they are written
        # as these URLs (reporter.present.render.served_href).
        "use_directory_urls": True,
        # The search index, built faster and the same (an absolute path: this file lives elsewhere).
        "hooks": [str(SEARCH_SPEED_HOOK)],
        "extra": {"alternate": alternate} if len(languages) > 1 else {},
    }
    others = [f"/{language_prefix(other, root_lang)}" for other in languages if other != lang]
    if lang == root_lang and others:
        overrides["exclude_docs"] = "\n".join(others) + "\n"
    if nav is not None:
        overrides["nav"] = nav
    return overrides


def build_public(
    site: Path,
    public: Path,
    builds: Sequence[LanguageBuild],
    *,
    root_lang: str,
    base_config: Path | str | None = None,
) -> None:
    """``mkdocs build --strict`` of every language: ``site`` into ``public``, ``site/<lang>`` into ``public/<lang>``.

    The builds run side by side; a failure of any raises ``ReporterError`` with the tail
    of MkDocs' output.
    """
    base = Path(base_config) if base_config else find_mkdocs_config()
    if not base.is_file():
        raise ReporterError(f"mkdocs config {str(base)!r} not found")
    languages = [b.lang for b in builds]
    if root_lang not in languages:
        raise ReporterError(f"the root language {root_lang!r} is not among the languages built ({', '.join(languages)})")
    public = Path(public)
    public.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="imagebench-mkdocs-") as tmp, \
            tempfile.TemporaryDirectory(prefix=f".{public.name}-", dir=public.parent) as staging:
        jobs: list[tuple[str, subprocess.Popen[str], Path | None]] = []
        try:
            for b in builds:
                root = b.lang == root_lang
                # Not into public/<lang> directly: the root build empties public/ first.
                out = public if root else Path(staging) / b.lang
                prefix = language_prefix(b.lang, root_lang)
                config = mkdocs_overrides(b.lang, docs_dir=site / prefix if prefix else site, site_dir=out, base=base,
                                          languages=languages, root_lang=root_lang, nav=b.nav)
                path = Path(tmp) / f"mkdocs-{b.lang}.yml"
                path.write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
                jobs.append((b.lang, _start_mkdocs(path, Path(tmp) / f"mkdocs-{b.lang}.log"), None if root else out))
            failures = []
            for lang, proc, _ in jobs:
                if proc.wait() != 0:
                    failures.append((lang, proc.returncode, Path(tmp) / f"mkdocs-{lang}.log"))
        finally:
            for _, proc, _ in jobs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if failures:
            lang, code, log = failures[0]
            tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-20:])
            raise ReporterError(f"mkdocs build --strict failed for the {lang} pages (exit {code}):\n{tail}")
        for lang, _, out in jobs:
            if out is not None:
                target = public / language_prefix(lang, root_lang)
                if target.exists():
                    shutil.rmtree(target)
                shutil.move(str(out), str(target))


def _start_mkdocs(config: Path, log: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    # Not --quiet: MkDocs 1.6 counts the warnings that --strict aborts on only when they
    # are logged, and --quiet silences them (a broken link then passes). The output goes
    # to a log file, shown when the build fails.
    with open(log, "w", encoding="utf-8") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
            stdout=out, stderr=subprocess.STDOUT, text=True, env=env,
        )


def find_mkdocs_config() -> Path:
    """./mkdocs.yml when there is one (a checkout of the site), else the repository's."""
    here = Path.cwd() / "mkdocs.yml"
    return here if here.is_file() else REPO_ROOT / "mkdocs.yml"
