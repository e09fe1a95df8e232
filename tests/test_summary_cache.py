"""The per-run units and per-label summaries of the reporter's cache (``reporter.data.cache``): a cached
report reads no samples, a changed or deleted run recomputes only what depends on it, a
corrupt cache is rebuilt, and the results are those computed from the samples."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import reporter.model.compare as compare
from reporter.model.compare import compare_labels, compute_summaries
from reporter.data.load import load_archive
from reporter.data import cache

GOLDEN = Path(__file__).parent / "data" / "golden_runs"


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "runs"
    shutil.copytree(GOLDEN, root, ignore=shutil.ignore_patterns(".cache"))
    return root


def _report(a):
    labels = a.labels()
    return compute_summaries(a), compare_labels(a, labels[0], labels[1]).rows


def _same(x, y) -> None:
    for p, q in zip(x, y):
        pd.testing.assert_frame_equal(p.reset_index(drop=True), q.reset_index(drop=True), check_dtype=False,
                                      check_categorical=False, rtol=1e-9)


def _spy(monkeypatch: pytest.MonkeyPatch) -> tuple[list[set[str]], list[set[str]]]:
    units: list[set[str]] = []
    labels: list[set[str]] = []
    real_units, real_pooled = compare._store_units, compare._pooled_summaries

    def counting_units(store, archive, fresh, run_ids):  # every run whose units are computed is stored
        units.append(set(run_ids))
        return real_units(store, archive, fresh, run_ids)

    def counting_pooled(a, confidence, **kwargs):
        labels.append(set(a.runs["label"].astype(str)))
        return real_pooled(a, confidence, **kwargs)

    monkeypatch.setattr(compare, "_store_units", counting_units)
    monkeypatch.setattr(compare, "_pooled_summaries", counting_pooled)
    return units, labels


def test_a_cached_report_reads_no_samples_and_matches_the_samples(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _report(load_archive(archive, cache=False))
    first = load_archive(archive)
    _same(plain, _report(first))
    warm = load_archive(archive)
    units, labels = _spy(monkeypatch)
    again = _report(warm)
    assert not warm.samples_loaded  # neither the archive's samples files nor the cached samples
    assert units == [] and labels == []
    _same(plain, again)
    assert len(warm.samples) == len(first.samples)  # still there for whoever needs them


def _units_computed(units: list[set[str]]) -> set[str]:
    return set().union(*units) if units else set()


def test_a_changed_or_deleted_run_recomputes_only_what_depends_on_it(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _report(load_archive(archive, cache=False))
    _report(load_archive(archive))
    a = load_archive(archive)
    changed_label, changed = str(a.runs["label"].iloc[0]), str(a.runs["run_id"].iloc[0])
    samples = archive / changed_label / changed / "samples.parquet"
    os.utime(samples, ns=(samples.stat().st_atime_ns, samples.stat().st_mtime_ns + 10**9))
    units, labels = _spy(monkeypatch)
    b = load_archive(archive)
    _same(plain, _report(b))
    assert _units_computed(units) <= {changed} and changed in _units_computed(units)
    assert set().union(*labels) == {changed_label}

    runs = a.runs[a.runs["label"].astype(str) == a.labels()[-1]]
    if len(runs) >= 2:  # deleting a run recomputes its label's summaries, no run's units
        gone = str(runs["run_id"].iloc[-1])
        shutil.rmtree(archive / a.labels()[-1] / gone)
        units.clear(), labels.clear()
        c = load_archive(archive)
        compute_summaries(c)
        assert _units_computed(units) == set()
        assert set().union(*labels) == {a.labels()[-1]}


def test_a_corrupt_cache_is_rebuilt(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _report(load_archive(archive, cache=False))
    _report(load_archive(archive))
    folders = cache.SummaryCache(archive).folders
    (folders[cache.UNITS] / "data.parquet").write_bytes(b"not parquet")
    (folders[cache.LABELS] / "index.json").write_text("{", encoding="utf-8")
    units, labels = _spy(monkeypatch)
    a = load_archive(archive)
    _same(plain, _report(a))
    assert units and labels  # recomputed, not trusted
    units.clear(), labels.clear()
    b = load_archive(archive)
    _same(plain, _report(b))
    assert units == [] and labels == [] and not b.samples_loaded


def test_summaries_of_a_selection_leave_those_of_the_whole_labels(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reporter.article.config import restrict

    a = load_archive(archive)
    compute_summaries(a)
    compute_summaries(restrict(a, frozenset([str(a.runs["run_id"].iloc[0])])))  # one run: an entry of its own
    units, labels = _spy(monkeypatch)
    b = load_archive(archive)
    compute_summaries(b)
    assert labels == [] and not b.samples_loaded


def test_summaries_a_label_at_a_time_and_samples_read_again_from_the_runs_are_the_same(
        archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import reporter.data.load as load
    from test_reporter_support import lognormal_processes, run_id, write_run

    # Runs recorded as today's collector writes them (their samples are their files, not copied into the cache).
    archive = archive.parent / "modern"
    rng = np.random.default_rng(5)
    for i in range(6):
        write_run(archive, f"stack-{i % 3}", {c: lognormal_processes(rng, 3, 6, 1e-3 * (1 + i % 3), 0.02, 0.005)
                                             for c in ("mm[n=1024]", "conv[k=3]")}, run_id=run_id(i, f"{i:06x}"))
    plain = _report(load_archive(archive, cache=False))
    # Every label summarised alone, the runs read in batches, and the samples checked at load let go and read
    # again from the runs.
    monkeypatch.setattr(compare, "SUMMARY_CHUNK_ATTEMPTS", 1)
    monkeypatch.setattr(load, "KEEP_SAMPLE_ROWS", 0)
    monkeypatch.setattr(load, "READ_BATCH_RUNS", 4)  # and the runs read a few at a time
    chunks, read = [], []
    real_pooled, real_read = compare._pooled_summaries, load._OriginalSamples.read

    def counting_pooled(a, confidence, **kwargs):
        chunks.append(set(a.runs["label"].astype(str)))
        return real_pooled(a, confidence, **kwargs)

    def counting_read(self, indices):
        read.append(len(indices))
        return real_read(self, indices)

    monkeypatch.setattr(compare, "_pooled_summaries", counting_pooled)
    monkeypatch.setattr(load._OriginalSamples, "read", counting_read)
    a = load_archive(archive)
    _same(plain, _report(a))
    assert len(chunks) == len(a.labels()) and all(len(c) == 1 for c in chunks)
    assert read and max(read) < len(a.runs)  # a label's runs at a time, never the whole archive


def test_every_runs_summaries_at_once_are_each_runs_own(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reporter.model.compare import compute_run_summaries
    from reporter.article.config import restrict

    plain = load_archive(archive, cache=False)
    one_by_one = {str(r): compute_summaries(restrict(plain, frozenset([str(r)]))) for r in plain.runs["run_id"]}
    assert len(one_by_one) >= 2
    for got in (compute_run_summaries(plain), compute_run_summaries(load_archive(archive))):
        assert set(got) == set(one_by_one)
        for run_id, expected in one_by_one.items():
            pd.testing.assert_frame_equal(got[run_id], expected, check_exact=True)
    # The second cached load summarises nothing: every run's entry is read from the cache.
    units, labels = _spy(monkeypatch)
    again = compute_run_summaries(load_archive(archive))
    assert not units and not labels
    for run_id, expected in one_by_one.items():
        pd.testing.assert_frame_equal(again[run_id], expected, check_exact=True)


def test_puts_while_deferred_write_each_kind_once(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    real = cache._write_frames

    def counting(folder, entries):
        written.append(folder.parent.name)
        return real(folder, entries)

    monkeypatch.setattr(cache, "_write_frames", counting)
    a = load_archive(archive)
    with a.summaries.deferred():
        for r in a.runs["run_id"].astype(str):
            from reporter.article.config import restrict
            compute_summaries(restrict(a, frozenset([r])))
        assert written == []
    assert sorted(written) == ["labels", "units"]
    # What was written reads back: a new load summarises nothing.
    units, labels = _spy(monkeypatch)
    compute_summaries(load_archive(archive))
    assert not units
