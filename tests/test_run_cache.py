"""The archive's cache of what the reporter read of each run (``reporter.data.run_cache``): used when
a run's files are unchanged, read again when they change, rebuilt when corrupt, optional, and
the load it gives is the load without it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from runformat.schema import SAMPLES_FILE
from reporter.data import run_cache
from reporter.data.load import load_archive

GOLDEN = Path(__file__).parent / "data" / "golden_runs"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    shutil.copytree(GOLDEN, root, ignore=shutil.ignore_patterns(".cache"))
    return root


def _same(a, b) -> None:
    for name in ("runs", "environment", "cases", "samples", "gpu_state"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_categorical=False)
    assert a.problems == b.problems


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import reporter.data.load as load

    seen: list[str] = []
    real = load._read_fresh

    def counting(folders, todo, cache):
        seen.extend(folders[i][1].name for i in todo)
        return real(folders, todo, cache)

    monkeypatch.setattr(load, "_read_fresh", counting)
    return seen


def test_an_unchanged_archive_is_read_from_the_cache(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_archive(archive, cache=False)
    assert not run_cache.cache_folder(archive).exists()  # cache=False writes nothing
    first = load_archive(archive)
    assert (run_cache.cache_folder(archive) / "index.json").is_file()
    reads = _count_reads(monkeypatch)
    warm = load_archive(archive)
    assert reads == []
    _same(cold, first)
    _same(cold, warm)


def test_a_changed_or_new_run_is_read_again(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_archive(archive)
    run = sorted(p for p in archive.glob("[!.]*/*") if p.is_dir())[0]
    table = pq.read_table(run / SAMPLES_FILE)
    pq.write_table(table.slice(0, table.num_rows // 2), run / SAMPLES_FILE)  # same run, fewer samples
    copy = archive / "copied-label"
    shutil.copytree(run.parent, copy)  # the same run ids again: both copies are skipped, and named
    reads = _count_reads(monkeypatch)
    warm = load_archive(archive)
    assert run.name in reads and len(reads) == 1 + len(list(copy.iterdir()))
    _same(load_archive(archive, cache=False), warm)


@pytest.mark.parametrize("damage", ["index", "table", "version"])
def test_a_corrupt_or_stale_cache_is_rebuilt(archive: Path, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_archive(archive, cache=False)
    load_archive(archive)
    folder = run_cache.cache_folder(archive)
    if damage == "index":
        (folder / "index.json").write_text("{not json")
    elif damage == "table":
        (folder / SAMPLES_FILE).write_bytes(b"PAR1 garbage")
    else:
        index = json.loads((folder / "index.json").read_text())
        index["reporter"] = "0.0.0-another"
        (folder / "index.json").write_text(json.dumps(index))
    reads = _count_reads(monkeypatch)
    _same(cold, load_archive(archive))
    assert set(cold.runs["run_id"].astype(str)) <= set(reads)  # every run read again
    reads.clear()
    _same(cold, load_archive(archive))  # and the rebuilt cache is used
    assert reads == []


def test_a_read_only_archive_loads_without_a_cache(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_cache.tempfile, "mkdtemp", lambda **kw: (_ for _ in ()).throw(PermissionError(13, "read-only")))
    _same(load_archive(archive, cache=False), load_archive(archive))
    assert not run_cache.cache_folder(archive).exists()


def test_the_cache_folder_is_made_when_it_does_not_exist_yet(archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "not" / "there" / "yet"))
    load_archive(archive)
    assert (run_cache.cache_folder(archive) / "index.json").is_file()
