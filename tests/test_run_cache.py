"""The reporter's one cache (``reporter.data.cache``): what it read of each run is used when the
run's files are unchanged, read again when they change, rebuilt when corrupt, optional, and the
load it gives is the load without it; every name lives under one folder, keyed one way; writers
at once leave one whole set, never a mix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from runformat.schema import SAMPLES_FILE
from reporter.data import cache
from reporter.data.load import load_archive

GOLDEN = Path(__file__).parent / "data" / "golden_runs"


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "cache"))
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
    assert not cache.archive_folder(cache.RUNS, archive).exists()  # cache=False writes nothing
    first = load_archive(archive)
    assert (cache.archive_folder(cache.RUNS, archive) / "index.json").is_file()
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
    folder = cache.archive_folder(cache.RUNS, archive)
    if damage == "index":
        (folder / "index.json").write_text("{not json")
    elif damage == "table":
        (folder / SAMPLES_FILE).write_bytes(b"PAR1 garbage")
    else:
        index = json.loads((folder / "index.json").read_text())
        index["version"] = "another reporter's"
        (folder / "index.json").write_text(json.dumps(index))
    reads = _count_reads(monkeypatch)
    _same(cold, load_archive(archive))
    assert set(cold.runs["run_id"].astype(str)) <= set(reads)  # every run read again
    reads.clear()
    _same(cold, load_archive(archive))  # and the rebuilt cache is used
    assert reads == []


def test_a_table_of_the_set_that_is_gone_is_named_once_and_the_runs_read(archive: Path) -> None:
    from runformat.schema import CASES_FILE

    cold = load_archive(archive, cache=False)
    load_archive(archive)
    folder = cache.archive_folder(cache.RUNS, archive)
    (folder / CASES_FILE).unlink()
    warm = load_archive(archive)
    assert [p.path for p in warm.cache_problems] == [str(folder)]
    _same(cold, warm)
    assert not load_archive(archive).cache_problems  # written anew


def test_a_read_only_archive_loads_without_a_cache(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache.tempfile, "mkdtemp", lambda **kw: (_ for _ in ()).throw(PermissionError(13, "read-only")))
    _same(load_archive(archive, cache=False), load_archive(archive))
    assert not cache.archive_folder(cache.RUNS, archive).exists()


def test_the_cache_folder_is_made_when_it_does_not_exist_yet(archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "not" / "there" / "yet"))
    load_archive(archive)
    assert (cache.archive_folder(cache.RUNS, archive) / "index.json").is_file()


# ---- one place, one key scheme, for every name ---------------------------------------------------


def test_every_name_lives_under_one_folder_of_one_location_rule(archive: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from reporter.data.remote import default_cache
    from reporter.model.compare import compute_summaries

    monkeypatch.delenv("IMAGEBENCH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_base() == tmp_path / "xdg" / "imagebench"
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "mine"))
    assert cache.cache_base() == tmp_path / "mine"
    assert default_cache("s3://bucket/runs").parent == tmp_path / "mine" / "archives"  # the mirrors too
    compute_summaries(load_archive(archive))
    cache.store_entry("articles", "a" * 40, {"article": 1})
    cache.store_svgs([("c" * 40, "<svg></svg>")])
    names = {p.relative_to(cache.cache_root()).parts[0] for p in cache.cache_root().rglob("*") if p.is_file()}
    assert names == {cache.RUNS, cache.UNITS, cache.LABELS, "articles", cache.CHARTS}
    assert {p.name for p in (tmp_path / "mine").iterdir()} == {f"reporter-v{cache.FORMAT}"}
    with pytest.raises(ValueError, match="no cache entries named"):
        cache.store_entry("articels", "a" * 40, 1)


def test_another_reporter_finds_nothing_of_this_ones(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key holds the format, the reporter's version and its source's hash: a table set, a row of one, an entry."""
    from reporter.model.compare import compute_summaries

    compute_summaries(load_archive(archive))
    run = sorted(p for p in archive.glob("[!.]*/*") if p.is_dir())[0]
    fp = cache.fingerprint(run)
    keys = (cache.key("article", 1), cache.run_key(run.parent.name, run.name, fp), cache.label_key(["k"], 0.95))
    cache.store_entry("articles", keys[0], "mine")
    assert cache.load_entry("articles", keys[0]) == "mine"
    for part, other in (("code_digest", lambda: "edited"), ("reporter_version", lambda: "9.9.9"), ("FORMAT", 99)):
        with monkeypatch.context() as m:
            m.setattr(cache, part, other)
            assert cache.key("article", 1) != keys[0]
            assert cache.run_key(run.parent.name, run.name, fp) != keys[1]
            assert cache.label_key(["k"], 0.95) != keys[2]
            assert cache.read_cache(archive, (SAMPLES_FILE,)) == {}
            assert cache.SummaryCache(archive).get(cache.UNITS, [keys[1]]) == {}
    assert cache.key("article", 1) == keys[0] and cache.key("article", 2) != keys[0]
    assert cache.read_cache(archive, (SAMPLES_FILE,))  # this reporter's, still there


def test_a_pickle_under_another_key_or_a_torn_chart_is_not_used() -> None:
    cache.store_entry("pages", "p" * 40, ["page"])
    (cache.cache_root() / "pages" / f"{'p' * 40}.pickle").rename(cache.cache_root() / "pages" / f"{'q' * 40}.pickle")
    assert cache.load_entry("pages", "q" * 40) is None and cache.load_entry("pages", "p" * 40) is None
    cache.store_svgs([("s" * 40, "<svg><g></g></svg>")])
    assert cache.load_svg("s" * 40) == "<svg><g></g></svg>"
    path = cache.cache_root() / cache.CHARTS / f"{'s' * 40}.svg"
    path.write_bytes(path.read_bytes()[:8])
    assert cache.load_svg("s" * 40) is None


# ---- writers and readers at once -------------------------------------------------------------------


def _load_together(root: str, barrier) -> None:
    barrier.wait(timeout=120)
    load_archive(root)


def test_writers_at_once_leave_one_whole_set(archive: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # no fork of a process whose Arrow threads have started
    barrier = ctx.Barrier(3)
    children = [ctx.Process(target=_load_together, args=(str(archive), barrier)) for _ in range(3)]
    for c in children:
        c.start()
    for c in children:
        c.join(timeout=300)
    assert [c.exitcode for c in children] == [0, 0, 0]
    folder = cache.archive_folder(cache.RUNS, archive)
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no writer's folder left behind
    cold = load_archive(archive, cache=False)
    warm = load_archive(archive)
    assert not warm.cache_problems
    _same(cold, warm)
    assert set(cache.read_cache(archive, (SAMPLES_FILE,))) == set(zip(cold.runs["label"].astype(str),
                                                                   cold.runs["run_id"].astype(str)))


def test_a_writer_that_swaps_its_set_in_during_another_write_leaves_one_set(archive: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from runformat.schema import GPU_STATE_FILE, RUN_FILES

    kinds = (*RUN_FILES, GPU_STATE_FILE)
    load_archive(archive)
    runs = list(cache.read_cache(archive, kinds).values())
    assert len(runs) >= 2
    folder = cache.archive_folder(cache.RUNS, archive)
    real = cache.uuid.uuid4
    inner = []

    def meanwhile():  # while the outer writer fills its folder, another writes and swaps its set in
        if not inner:
            inner.append(True)
            cache.write_cache(archive, kinds, runs[:1])
        return real()

    monkeypatch.setattr(cache.uuid, "uuid4", meanwhile)
    cache.write_cache(archive, kinds, runs)
    assert inner and [p.name for p in folder.parent.iterdir()] == [folder.name]
    assert len(cache.read_cache(archive, kinds)) == len(runs)  # the last one swapped in, whole


def test_tables_of_another_generation_than_the_index_are_not_used(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that reads the index of one set and a table of the next (a writer between) uses neither."""
    from runformat.schema import CASES_FILE

    cold = load_archive(archive, cache=False)
    load_archive(archive)
    folder = cache.archive_folder(cache.RUNS, archive)
    earlier = pq.read_table(folder / CASES_FILE)
    shutil.rmtree(folder)
    load_archive(archive)  # the same runs, written again: another generation
    pq.write_table(earlier, folder / CASES_FILE)
    assert cache.read_cache(archive, (CASES_FILE,)) == {}
    reads = _count_reads(monkeypatch)
    a = load_archive(archive)
    assert not a.cache_problems  # not damage: nothing is named
    assert set(cold.runs["run_id"].astype(str)) <= set(reads)
    _same(cold, a)
    assert cache.read_cache(archive, (CASES_FILE,))  # written anew, whole
