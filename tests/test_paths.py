"""Labels and run ids never make a path outside runs/ (collector) or site/ (reporter).

The collector files a run under ``sanitize_label(label)`` and a run id it makes itself;
``--resume`` takes the label and run id from the run's own files. The reporter takes
labels from folder names (runs merge by copying folders, so any name a file system
allows can arrive) and names pages with ``reporter.present.views.slug``. Both are checked with
the classic escapes (``..``, absolute paths, NUL, separators, very long names) and with
Hypothesis over arbitrary text.
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runformat import schema as s
from runformat.archive import ArchiveError, RunWriter, read_table
from reporter.article.paths import run_slug, slug

HOSTILE_NAMES = [
    "..", ".", "...", "../../etc/passwd", "/etc/passwd", "a/../../b", "..\\..\\windows", "C:\\Windows\\System32",
    "a\x00b", "\x00", "~root", "-rf", " spaced out ", "x" * 10_000, "é" * 300, "名字 2.9", "\u202eevil", "a\nb",
    "%2e%2e%2f", "$(rm -rf /)", "`id`", "CON", "label.", ".hidden", "-", "_", "a" + "/" * 50 + "b",
]
SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _safe_label(name: str) -> bool:
    """A label folder: one path component, printable Unicode allowed (see ``sanitize_label``)."""
    import unicodedata

    return (not name.startswith((".", "-", "_")) and "/" not in name and "\\" not in name
            and len(name.encode("utf-8")) <= s.MAX_LABEL_BYTES
            and not any(unicodedata.category(c)[0] in "CZ" and c != "\u200d" for c in name))


def _inside(child: Path, parent: Path) -> bool:
    return child.resolve().is_relative_to(parent.resolve()) and child.resolve() != parent.resolve()


# -- collector ----------------------------------------------------------------------------------


@pytest.mark.parametrize("label", HOSTILE_NAMES, ids=lambda x: repr(x)[:40])
def test_a_label_names_one_folder_inside_out_or_is_refused(tmp_path: Path, label: str) -> None:
    out = tmp_path / "runs"
    try:
        folder_name = s.sanitize_label(label)
    except s.SchemaError as e:
        assert "has no letters or digits" in str(e)
        with pytest.raises(s.SchemaError):
            RunWriter.create(out, label)
        return
    assert _safe_label(folder_name) and len(folder_name) <= s.MAX_LABEL_LENGTH
    assert not folder_name.endswith(".")
    w = RunWriter.create(out, label)
    assert w.folder.parent == out / folder_name and _inside(w.folder, out)
    assert w.label == folder_name and s.is_valid_run_id(w.run_id)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=300))
def test_sanitize_label_never_escapes(label: str) -> None:
    try:
        name = s.sanitize_label(label)
    except s.SchemaError:
        return
    assert _safe_label(name) and len(name) <= s.MAX_LABEL_LENGTH
    assert name not in (".", "..") and "/" not in name and "\x00" not in name
    base = Path("/srv/runs")
    assert (base / name).parent == base


def test_a_staged_run_appears_only_whole(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    w = RunWriter.create(out, "stack", staged=True)
    assert w.folder.name.startswith(".") and not (out / "stack" / w.run_id).exists()  # readers skip hidden folders
    w.write_environment([s.EnvironmentEntry("run", "status", "running")])
    w.write_cases([], [])
    w.publish()
    assert w.folder == out / "stack" / w.run_id
    assert sorted(p.name for p in w.folder.iterdir()) == sorted(s.RUN_FILES)
    assert [p.name for p in (out / "stack").iterdir()] == [w.run_id]


def _forged_run(tmp_path: Path, *, run_id: str, label: str) -> Path:
    """A run folder whose files claim ``run_id`` and ``label`` in their metadata."""
    folder = tmp_path / "runs" / "stack" / "20261202T140512Z-3fa9c1"
    folder.mkdir(parents=True)
    table = s.records_to_table(s.ENVIRONMENT_FILE, [s.EnvironmentEntry("run", "status", "running")], run_id=run_id, label=label)
    import pyarrow.parquet as pq

    pq.write_table(table, folder / s.ENVIRONMENT_FILE)
    return folder


@pytest.mark.parametrize("run_id", ["../../../tmp/x", "/etc", "20261202T140512Z-3fa9c1/..", "", "20261202T140512Z-3fa9c1\x00"])
def test_resume_refuses_a_run_id_that_is_not_its_folder(tmp_path: Path, run_id: str) -> None:
    folder = _forged_run(tmp_path, run_id=run_id, label="stack")
    with pytest.raises(ArchiveError, match="does not match the folder name|no run_id"):
        RunWriter.reopen(folder)


@pytest.mark.parametrize("label", ["../../../etc", "/abs/path", "a/b"])
def test_resume_sanitises_the_label_from_the_files(tmp_path: Path, label: str) -> None:
    folder = _forged_run(tmp_path, run_id="20261202T140512Z-3fa9c1", label=label)
    w = RunWriter.reopen(folder)
    assert SAFE.fullmatch(w.label)
    w.write_cases([], [])  # writes go to the folder it was given, nowhere else
    assert read_table(folder / s.CASES_FILE, s.CASES_FILE)[1]["label"] == w.label
    assert sorted(p.name for p in folder.iterdir()) == [s.CASES_FILE, s.ENVIRONMENT_FILE, s.SAMPLES_FILE]


@pytest.mark.parametrize("label", ["..", "../x", "/"])
def test_resume_refuses_a_label_with_nothing_to_name_a_folder(tmp_path: Path, label: str) -> None:
    folder = _forged_run(tmp_path, run_id="20261202T140512Z-3fa9c1", label=label)
    if label == "../x":
        assert RunWriter.reopen(folder).label == "x"
        return
    with pytest.raises(ArchiveError, match="has no letters or digits"):
        RunWriter.reopen(folder)


# -- reporter -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=400))
def test_page_slugs_are_one_safe_path_component(text: str) -> None:
    name = slug(text)
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name)
    assert name not in (".", "..") and not name.startswith(".")
    assert len(name.encode()) <= 120  # far below the 255-byte limit of a file name
    base = Path("/srv/site/runs")
    assert (base / name).parent == base
    assert run_slug(text) == (text if s.is_valid_run_id(text) else name)


@pytest.mark.parametrize("text", HOSTILE_NAMES, ids=lambda x: repr(x)[:40])
def test_page_slug_of_hostile_names(text: str) -> None:
    name = slug(text)
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) and len(name) <= 120
    assert slug(text) == name  # stable: the same label gets the same page on every build


def test_a_build_writes_only_inside_site_whatever_the_label_folders_are_called(tmp_path: Path) -> None:
    """Label folder names a file system allows but a URL or a path join might not survive."""
    import numpy as np

    from reporter.site.build import build_site
    from test_reporter_support import lognormal_processes, run_id, write_run

    names = ["...", "a\nb", "x" * 250, "-rf", " spaced ", "%2e%2e%2f", "\u202eevil", "名字", "label.", "a..b", "$(id)"]
    runs = tmp_path / "runs"
    rng = np.random.default_rng(4)
    for i, name in enumerate(names):
        write_run(runs, name, {"mm[n=64]": lognormal_processes(rng, 3, 5, 1e-3, 0.02, 0.005)}, run_id=run_id(i, f"{i:06x}"))
    before = {p for p in tmp_path.rglob("*")}
    site = tmp_path / "out" / "site"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = build_site(runs, site, None, workloads={})
    finally:
        os.chdir(cwd)
    created = {p for p in tmp_path.rglob("*")} - before
    outside = sorted(str(p) for p in created if not (p == site.parent or p.is_relative_to(site)))
    assert outside == []
    assert all(_inside(site / page, site) for page in result.pages)
    run_pages = [p for p in result.pages if p.startswith("runs/") and p.count("/") == 3]
    # every label got its own pages, no two names collided ("..." starts with a dot: hidden, never read)
    assert len(run_pages) == len(names) - 1
    for page in result.pages:
        assert all(SAFE.fullmatch(part) or part in ("index.md",) for part in Path(page).parts[:-1]), page
    assert not any(set(p.name) - set(string.ascii_letters + string.digits + "._-") for p in created)
