"""The run archive: exclusive run folders, atomic writes, clear errors."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from runformat import schema as s
from runformat.archive import ArchiveError, RunWriter, check_writable, new_run_id, read_table, write_table_atomic


def test_run_ids_are_timestamps_with_a_suffix_and_unique():
    ids = [new_run_id() for _ in range(200)]
    assert all(s.is_valid_run_id(i) for i in ids)
    # 24 random bits a second: two of 200 ids drawn in one second are the same about once in 800
    # such draws. Uniqueness in the archive comes from the folder (next test), not from chance.
    assert len(set(ids)) >= 198


def test_a_run_id_drawn_twice_is_never_reused(tmp_path, monkeypatch):
    import runformat.archive as archive

    drawn = iter(["20261202T140512Z-3fa9c1-5e0b7d", "20261202T140512Z-3fa9c1-5e0b7d", "20261202T140512Z-4ab0d2-5e0b7d"])
    monkeypatch.setattr(archive, "new_run_id", lambda: next(drawn))
    a = RunWriter.create(tmp_path, "x")
    b = RunWriter.create(tmp_path, "x")  # the first draw is taken: it draws again
    assert (a.run_id, b.run_id) == ("20261202T140512Z-3fa9c1-5e0b7d", "20261202T140512Z-4ab0d2-5e0b7d")


def test_create_makes_a_new_folder_each_time(tmp_path):
    a = RunWriter.create(tmp_path, "PyTorch 2.9 / CUDA 12.4")
    b = RunWriter.create(tmp_path, "PyTorch 2.9 / CUDA 12.4")
    assert a.folder != b.folder and a.folder.parent == b.folder.parent
    assert a.folder.parent.name == "PyTorch-2.9-CUDA-12.4"
    assert a.folder.parent.parent == tmp_path


def test_atomic_write_replaces_whole_files_and_leaves_no_temp(tmp_path):
    w = RunWriter.create(tmp_path, "x")
    w.write_environment([s.EnvironmentEntry("a", "b", "c")])
    w.write_environment([s.EnvironmentEntry("a", "b", "d"), s.EnvironmentEntry("a", "e", "f")])
    table, meta = read_table(w.folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    assert table.num_rows == 2 and meta["run_id"] == w.run_id and meta["label"] == "x"
    assert sorted(p.name for p in w.folder.iterdir()) == [s.ENVIRONMENT_FILE]
    assert oct(os.stat(w.folder / s.ENVIRONMENT_FILE).st_mode & 0o777) == "0o644"


def test_a_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    w = RunWriter.create(tmp_path, "x")
    w.write_environment([s.EnvironmentEntry("a", "b", "c")])

    def explode(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", explode)
    with pytest.raises(ArchiveError, match="No space left on device"):
        w.write_environment([s.EnvironmentEntry("a", "b", "NEW")])
    monkeypatch.undo()
    table, _ = read_table(w.folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    assert table.column("value").to_pylist() == ["c"]
    assert sorted(p.name for p in w.folder.iterdir()) == [s.ENVIRONMENT_FILE]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_folder_is_a_clear_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(ArchiveError, match="not writable"):
        check_writable(ro)


def test_output_path_that_is_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ArchiveError, match="cannot create output folder|not a folder"):
        check_writable(f)


def test_read_table_names_the_file_for_garbage(tmp_path):
    bad = tmp_path / "cases.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(ArchiveError, match="cases.parquet: not a readable Parquet file"):
        read_table(bad, s.CASES_FILE)


def test_write_table_atomic_to_missing_folder_is_a_clear_error(tmp_path):
    table = s.records_to_table(s.ENVIRONMENT_FILE, [], run_id="r", label="x")
    with pytest.raises(ArchiveError, match="cannot write"):
        write_table_atomic(table, tmp_path / "missing" / "environment.parquet")
