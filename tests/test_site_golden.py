"""Golden test: the checked-in fixture runs render to the checked-in Markdown, page for page.

tests/data/golden_runs/ is written by tests/data/make_golden_runs.py (synthetic,
deterministic test fixtures); tests/data/golden_site/<lang>/ holds the expected pages with
the volatile parts masked (chart SVGs, the path of the archive in the reproduce command,
and the suite's timing policy, which comes from collector/suites.py rather than the runs). After an intended change of the pages:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_site_golden.py
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
GOLDEN_RUNS = DATA / "golden_runs"
GOLDEN_SITE = DATA / "golden_site"

sys.path.insert(0, str(DATA))
from make_golden_runs import GOLDEN_WORKLOADS  # noqa: E402

from reporter.site.build import build_site  # noqa: E402
from reporter.present.views import WorkloadInfo  # noqa: E402

WORKLOADS = {name: WorkloadInfo(name=name, **info) for name, info in GOLDEN_WORKLOADS.items()}
_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_RUNS_ARG = re.compile(r"(reporter build --runs )\S+?(</code>|\s)")
# The timing policy rows come from collector/suites.py as it is today, not from the runs.
_POLICY_ROW = re.compile(r"^<tr>\n<td>(smoke|cpu|quick|standard|full)</td>\n<td>≥ .*?</tr>$", re.M | re.S)


def mask(text: str) -> str:
    """The page with its volatile parts replaced by placeholders."""
    text = _SVG.sub("<svg>[chart masked]</svg>", text)
    text = _POLICY_ROW.sub(r"<tr>\n<td>\1</td>\n<td>[policy of collector/suites.py]</td>\n</tr>", text)
    return _RUNS_ARG.sub(r"\1[RUNS]\2", text)


def render(tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    # The SVGs are masked anyway; rendering them is the browser test's business.
    monkeypatch.setattr("reporter.site.build.render_svgs", lambda specs, workers=None: ["<svg></svg>"] * len(specs))
    site = tmp_path / f"site-{lang}"
    build_site(GOLDEN_RUNS, site, None, lang=lang, languages=[lang], workloads=WORKLOADS, chart_workers=1)
    return {
        str(p.relative_to(site)): mask(p.read_text(encoding="utf-8"))
        for p in sorted(site.rglob("*.md"))
        if p.relative_to(site).parts[0] != "guide"  # copied from reporter/present/guide, not generated
    }


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_golden_site(tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no imagebench.toml here: the default comparisons
    pages = render(tmp_path, lang, monkeypatch)
    expected_dir = GOLDEN_SITE / lang
    if os.environ.get("UPDATE_GOLDEN"):
        if expected_dir.exists():
            shutil.rmtree(expected_dir)
        for name, text in pages.items():
            target = expected_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    expected = {
        str(p.relative_to(expected_dir)): p.read_text(encoding="utf-8") for p in sorted(expected_dir.rglob("*.md"))
    }
    assert sorted(pages) == sorted(expected), "the set of generated pages changed (UPDATE_GOLDEN=1 to accept)"
    for name in expected:
        assert pages[name] == expected[name], f"{lang}/{name} differs from the golden page (UPDATE_GOLDEN=1 to accept)"


def test_golden_runs_are_what_the_script_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checked-in fixture archive is the script's output: same runs, same cases."""
    import make_golden_runs

    monkeypatch.setattr(make_golden_runs, "OUT", tmp_path / "runs")
    make_golden_runs.main()
    made = sorted(str(p.relative_to(tmp_path / "runs")) for p in (tmp_path / "runs").rglob("*.parquet"))
    checked_in = sorted(str(p.relative_to(GOLDEN_RUNS)) for p in GOLDEN_RUNS.rglob("*.parquet")
                        if not p.relative_to(GOLDEN_RUNS).parts[0].startswith("."))  # no leftover of an old reporter's cache
    assert made == checked_in
    import pyarrow.parquet as pq

    from runformat.schema import upgrade_table

    # The checked-in files were written as schema 1 and stay so: reading them exercises
    # the upgrade of old runs (schema 2's added columns, null).
    for name in made:
        old = upgrade_table(Path(name).name, pq.read_table(GOLDEN_RUNS / name))
        assert pq.read_table(tmp_path / "runs" / name).equals(old), name
