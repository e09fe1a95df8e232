"""Robustness, round 3 (issue 43), against a local S3 server (moto's server mode on 127.0.0.1 only):
one bad upload never stops anyone's build.

A corpus of bad uploads in one bucket, read by ``reporter runs``, ``reporter build`` and the
collector's ``upload`` as a user runs them (no ``Traceback`` on stderr, each bad upload named,
the good runs listed); a run taken from its latest upload that reads; a download that stalls;
a mirror that never writes outside its folder; and two writers and a tamperer on one bucket
while a build runs. Synthetic runs go to pytest's temporary folders, never under runs/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pyarrow as pa
import pytest

from runformat import schema as s
from runformat.remote import MARKER_FILE, MAX_MARKER_BYTES, open_filesystem, upload_run
from reporter.data import remote
from reporter.data.load import load_archive
from reporter.errors import ReporterError
from test_reporter_support import lognormal_processes, run_id, write_run
from test_s3_archive import BUCKET, s3, s3_server  # noqa: F401 - the local server and its bucket

ROOT = Path(__file__).resolve().parent.parent
CASES = ("mm[n=64]", "conv[k=3]")
SHA = "ab" * 32


def make_run(root: Path, label: str, n: int, suffix: str) -> Path:
    rng = np.random.default_rng(n)
    return write_run(root, label, {c: lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0) for c in CASES},
                     run_id=run_id(n, suffix))


def put(url: str, key: str, data: bytes) -> None:
    fs, base = open_filesystem(url)
    with fs.open_output_stream(f"{base}/{key}") as f:
        f.write(data)


def marker_of(label: str, run: str, upload: str, folder: Path | None = None, /, **change: object) -> dict:
    """A marker as the collector writes it (of ``folder``'s files when given), with ``change`` applied."""
    import hashlib

    files = {}
    for name in s.RUN_FILES:
        data = (folder / name).read_bytes() if folder is not None else b""
        files[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    m = {"format": 1, "label": label, "run_id": run, "upload_id": upload, "status": "complete", "host": "abcdef", "files": files}
    m.update(change)
    return m


def upload_raw(url: str, folder: Path, upload: str, marker: bytes | None, files: dict[str, bytes] | None = None) -> str:
    """Upload ``folder``'s files (or ``files``) and ``marker`` as upload ``upload`` of its run; the key prefix."""
    label, run = folder.parent.name, folder.name
    prefix = f"{label}/{run}/{upload}"
    for name in s.RUN_FILES:
        put(url, f"{prefix}/{name}", (files or {}).get(name, (folder / name).read_bytes()))
    if marker is not None:
        put(url, f"{prefix}/{MARKER_FILE}", marker)
    return prefix


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[-3000:]


# The malformed uploads of the corpus: name -> (marker bytes for (label, run, upload, folder), what its skip says).
def _files_with(entry: object):
    def make(label: str, run: str, upload: str, folder: Path) -> bytes:
        m = marker_of(label, run, upload, folder)
        m["files"][s.CASES_FILE] = entry
        return json.dumps(m).encode()
    return make


def _marker_with(**change: object):
    return lambda label, run, upload, folder: json.dumps(marker_of(label, run, upload, folder, **change)).encode()


def _extra_file(name: str):
    def make(label: str, run: str, upload: str, folder: Path) -> bytes:
        m = marker_of(label, run, upload, folder)
        m["files"][name] = {"size": 1, "sha256": SHA}
        return json.dumps(m).encode()
    return make


def _wrong_hash(label: str, run: str, upload: str, folder: Path) -> bytes:
    m = marker_of(label, run, upload, folder)
    m["files"][s.SAMPLES_FILE]["sha256"] = SHA
    return json.dumps(m).encode()


def _huge_size(label: str, run: str, upload: str, folder: Path) -> bytes:
    m = marker_of(label, run, upload, folder)
    m["files"][s.SAMPLES_FILE]["size"] = 10**15
    return json.dumps(m).encode()


CORPUS = {
    "null": (lambda *a: b"null", "its marker is not an object (it is null); skipped"),
    "array": (lambda *a: b"[]", "its marker is not an object (it is an array); skipped"),
    "files null": (_marker_with(files=None), "its marker's 'files' is null, not an object; skipped"),
    "file entry a string": (_files_with("0" * 64), "its marker's entry for cases.parquet is a string, not an object; skipped"),
    "file entry null": (_files_with(None), "entry for cases.parquet is null"),
    "path with ..": (_extra_file("../../../outside.parquet"), "lists '../../../outside.parquet'"),
    "absolute path": (_extra_file("/etc/passwd"), "lists '/etc/passwd'"),
    "wrong hash": (_wrong_hash, "another checksum than its marker says"),
    "huge size": (_huge_size, "a file has 0 to"),
    "utf-16": (lambda label, run, upload, folder: json.dumps(marker_of(label, run, upload, folder)).encode("utf-16"),
               "its marker is not UTF-8 text; skipped"),
    "not json": (lambda *a: b"{'format': 1}", "its marker is not JSON"),
    "status running": (_marker_with(status="running"), "status 'running' is not one of"),
    "label of another run": (_marker_with(label="elsewhere"), "but it is stored under"),
    "too large": (lambda *a: b"{" + b" " * MAX_MARKER_BYTES + b"}", f"the limit is {MAX_MARKER_BYTES:,}; skipped"),
}


@pytest.fixture
def corpus(s3, tmp_path: Path) -> tuple[str, dict[str, Path], dict[str, tuple[str, str, str]]]:
    """One bucket prefix holding a good run, one with extra keys in its marker, and one run per bad form."""
    url = f"s3://{BUCKET}/corpus"
    local = tmp_path / "local"
    good = {"good": make_run(local, "stack-good", 0, "900000")}
    upload_run(good["good"], url)
    extra = make_run(local, "stack-extra", 1, "900001")
    upload_raw(url, extra, run_id(50, "e00001"), json.dumps(
        marker_of("stack-extra", extra.name, run_id(50, "e00001"), extra, written_by={"a": "newer collector"})).encode())
    good["extra keys"] = extra
    bad: dict[str, tuple[str, str, str]] = {}
    for i, (name, (make, _)) in enumerate(CORPUS.items()):
        folder = make_run(local, "stack-bad", 10 + i, f"b{i:05d}")
        upload = run_id(60 + i, f"f{i:05d}")
        upload_raw(url, folder, upload, make("stack-bad", folder.name, upload, folder))
        bad[name] = ("stack-bad", folder.name, upload)
    # cut short (no marker), misplaced, and an honest upload of a file that is empty
    cut = make_run(local, "stack-bad", 40, "c00000")
    upload_raw(url, cut, run_id(41, "c00001"), None)
    put(url, f"Stack Bad!/{run_id(43)}/{run_id(44)}/{MARKER_FILE}", b"{}")
    empty = make_run(local, "stack-bad", 42, "d00000")
    (empty / s.CASES_FILE).write_bytes(b"")
    upload_run(empty, url)
    bad["empty cases file"] = ("stack-bad", empty.name, "")
    return url, good, bad


def _named(problems: list[dict], form: str, label: str, run: str, upload: str) -> bool:
    if form == "empty cases file":
        return any(run in p["path"] and p["path"].endswith(s.CASES_FILE) and "0 bytes" in p["reason"] for p in problems)
    needle = CORPUS[form][1]
    return any(p["path"] == f"upload {upload} of run {label}/{run} in s3://{BUCKET}/corpus" and needle in p["reason"]
               for p in problems)


def test_the_cli_on_a_corpus_of_bad_uploads_names_each_and_lists_the_good_runs(corpus, s3, run_cli, tmp_path: Path) -> None:
    url, good, bad = corpus
    result = run_cli("reporter", "runs", "--runs", url, "--format", "json", env=s3, timeout=300)
    no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout)
    assert {r["run_id"] for r in out["runs"]} == {f.name for f in good.values()}
    problems = out["problems"]
    for form, (label, run, upload) in bad.items():
        assert _named(problems, form, label, run, upload), (form, problems)
    assert any(p["path"].endswith(f"Stack Bad!/{run_id(43)}/{run_id(44)}/{MARKER_FILE}") and "not under" in p["reason"]
               for p in problems)
    # the table, --strict and the nightly build: the same, never a traceback
    table = run_cli("reporter", "runs", "--runs", url, env=s3, timeout=300)
    no_traceback(table)
    assert table.returncode == 0 and "upload" in table.stderr + table.stdout
    strict = run_cli("reporter", "runs", "--runs", url, "--strict", env=s3, timeout=300)
    no_traceback(strict)
    assert strict.returncode == 2 and len(strict.stderr.strip().splitlines()) == 1, strict.stderr
    site = tmp_path / "site"
    build = run_cli("reporter", "build", "--runs", url, "--site", str(site), "--public", str(tmp_path / "public"),
                    "--no-mkdocs", env=s3, timeout=600)
    no_traceback(build)
    assert build.returncode == 0, build.stderr[-3000:]
    for form, (label, run, upload) in bad.items():
        assert (f"upload {upload} of run {label}/{run}" if upload else run) in build.stderr, form
    pages = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.md"))
    assert all(f.name in pages for f in good.values())


def test_the_collector_meets_bad_input_with_one_line(s3, run_cli, tmp_path: Path) -> None:
    url = f"s3://{BUCKET}/collector"
    not_a_run = tmp_path / "runs" / "lab" / "not-a-run-id"
    not_a_run.mkdir(parents=True)
    empty_env = make_run(tmp_path / "runs", "lab", 1, "f00001")
    (empty_env / s.ENVIRONMENT_FILE).write_bytes(b"")
    garbage_env = make_run(tmp_path / "runs", "lab", 2, "f00002")
    (garbage_env / s.ENVIRONMENT_FILE).write_bytes(b"\x00garbage" * 100)
    no_samples = make_run(tmp_path / "runs", "lab", 3, "f00003")
    (no_samples / s.SAMPLES_FILE).unlink()
    for folder in (not_a_run, empty_env, garbage_env, no_samples):
        result = run_cli("collector", "upload", "--out", url, str(folder), env=s3, timeout=120)
        no_traceback(result)
        assert result.returncode != 0 and str(folder.name) in result.stderr, result.stderr
    result = run_cli("collector", "upload", "--out", f"s3://{BUCKET}-missing/x", str(make_run(tmp_path / "runs", "lab", 4, "f00004")),
                     env=s3, timeout=120)
    no_traceback(result)
    assert result.returncode != 0


def test_a_run_is_read_from_its_latest_upload_that_reads(s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"s3://{BUCKET}/fallback"
    folder = make_run(tmp_path / "local", "stack", 0, "a00000")
    first = upload_run(folder, url)
    newer = ["29991231T000000Z-000001", "29991231T000001Z-000002"]  # after the real upload: tried first
    upload_raw(url, folder, newer[0], b"null")
    upload_raw(url, folder, newer[1], json.dumps(marker_of("stack", folder.name, newer[1], folder)).encode(),
               files={s.SAMPLES_FILE: b"tampered"})
    archive = load_archive(url)
    assert list(archive.runs["run_id"].astype(str)) == [folder.name]
    assert (archive.root / "stack" / folder.name / remote.UPLOAD_NOTE).read_text().strip() == first.upload_id
    named = {p.path: p.reason for p in archive.problems}
    for upload in newer:
        reason = named[f"upload {upload} of run stack/{folder.name} in {url}"]
        assert reason.endswith(f"skipped, the run is read from its upload {first.upload_id}"), reason


class _Stalling:
    """A filesystem whose reads of one file (or whose listing) never return."""

    def __init__(self, fs: pafs.FileSystem, file: str | None = None, listing: bool = False) -> None:
        self.fs, self.file, self.listing = fs, file, listing

    def get_file_info(self, what):
        if self.listing and isinstance(what, pafs.FileSelector):
            time.sleep(60)
        return self.fs.get_file_info(what)

    def open_input_stream(self, path: str):
        stream = self.fs.open_input_stream(path)
        if self.file and path.endswith(self.file):
            class Stuck:
                def read(self, n: int) -> bytes:
                    time.sleep(60)
                    return b""

                def close(self) -> None:
                    stream.close()
            return Stuck()
        return stream


def test_a_stalled_download_is_one_line_and_the_rest_loads(s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"s3://{BUCKET}/stall"
    stuck = make_run(tmp_path / "local", "stuck", 0, "500000")
    fine = make_run(tmp_path / "local", "fine", 1, "500001")
    for folder in (stuck, fine):
        upload_run(folder, url)
    real = remote.open_filesystem
    monkeypatch.setenv(remote.STALL_ENV, "0.5")

    def one_file_stalls(u: str):
        fs, base = real(u)
        wrapped = _Stalling(fs)
        wrapped.file = None
        original = wrapped.open_input_stream

        def open_input_stream(path: str):
            if f"/stuck/{stuck.name}/" in path and path.endswith(s.SAMPLES_FILE):
                wrapped.file = s.SAMPLES_FILE
            else:
                wrapped.file = None
            return original(path)

        wrapped.open_input_stream = open_input_stream
        return wrapped, base

    monkeypatch.setattr(remote, "open_filesystem", one_file_stalls)
    clock = time.monotonic()
    archive = load_archive(url)
    assert time.monotonic() - clock < 20
    assert list(archive.runs["run_id"].astype(str)) == [fine.name]
    (problem,) = archive.problems
    assert problem.path.startswith("upload ") and f"run stuck/{stuck.name}" in problem.path
    assert "download of samples.parquet stalled: nothing arrived for 0.5 s" in problem.reason and "\n" not in problem.reason
    monkeypatch.setattr(remote, "open_filesystem", lambda u: (_Stalling(real(u)[0], listing=True), real(u)[1]))
    with pytest.raises(ReporterError, match="stalled") as caught:
        load_archive(url)
    assert "\n" not in str(caught.value) and url in str(caught.value)


def _files_outside(root: Path, cache: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_relative_to(cache)}


def test_the_mirror_never_writes_outside_its_folder(s3, tmp_path: Path) -> None:
    url = f"s3://{BUCKET}/confined"
    local = tmp_path / "local"
    linked = make_run(local, "linked", 0, "600000")
    upload_run(linked, url)
    escaping = make_run(local, "escaping", 1, "600001")
    upload = run_id(70, "600002")
    m = marker_of("escaping", escaping.name, upload, escaping)
    m["files"]["../../../../escaped.parquet"] = {"size": 4, "sha256": SHA}
    upload_raw(url, escaping, upload, json.dumps(m).encode())
    put(url, f"escaping/{escaping.name}/{upload}/../../../../escaped.parquet", b"data")
    cache = remote.default_cache(url)
    outside = tmp_path / "outside"
    (outside / run_id(1, "600009")).mkdir(parents=True)
    (outside / run_id(1, "600009") / remote.UPLOAD_NOTE).write_text("an old upload\n")  # what a prune would delete
    cache.mkdir(parents=True)
    (cache / "linked").symlink_to(outside, target_is_directory=True)
    (cache / "gone").symlink_to(outside, target_is_directory=True)
    before = _files_outside(tmp_path, cache)
    archive = load_archive(url)
    assert _files_outside(tmp_path, cache) == before
    assert archive.runs.empty
    reasons = " ".join(p.reason for p in archive.problems)
    assert "symbolic link" in reasons and "../../../../escaped.parquet" in reasons


# -- two writers and a tamperer on one bucket while a build runs ----------------------------------


def test_two_writers_and_a_tamperer_while_a_build_runs(s3, tmp_path: Path, run_cli) -> None:
    url = f"s3://{BUCKET}/shared"
    local = tmp_path / "local"
    runs = {host: [make_run(local / host, f"host-{host}", i, f"{host * 3}{i:03d}") for i in range(4)] for host in ("a", "b")}
    uploaded: dict[str, list[str]] = {"a": [], "b": []}
    for host in runs:  # before the build: two runs of each writer
        for folder in runs[host][:2]:
            uploaded[host].append(upload_run(folder, url).upload_id)
    victim = runs["a"][0]
    tampered: list[tuple[str, str, str]] = []  # (label, run id, upload id) of each bad upload

    def tamper(n: int) -> None:
        """Bad uploads of every kind: new runs, newer uploads of good runs, cut-short uploads."""
        bad = make_run(local / "tamper", "host-a", 20 + n, f"ee{n:04d}")
        u = f"2999123{n}T000000Z-00000{n}"
        forms = [b"null", b"[]", json.dumps(marker_of("host-a", bad.name, u, bad, files=None)).encode(),
                 json.dumps(marker_of("host-a", bad.name, u, bad, files={s.CASES_FILE: "x"})).encode()]
        upload_raw(url, bad, u, forms[n % len(forms)])
        tampered.append(("host-a", bad.name, u))
        # a newer upload of a good run with a checksum that lies
        v = f"2999123{n}T000001Z-00001{n}"
        upload_raw(url, victim, v, json.dumps(marker_of(victim.parent.name, victim.name, v, victim)).encode(),
                   files={s.SAMPLES_FILE: b"not parquet"})
        tampered.append((victim.parent.name, victim.name, v))
        upload_raw(url, make_run(local / "tamper", "host-b", 40 + n, f"ef{n:04d}"), f"2999123{n}T000002Z-00002{n}", None)

    tamper(0)
    tamper(1)
    site = tmp_path / "site"
    env = {**os.environ, **s3, "PYTHONPATH": str(ROOT)}
    build = subprocess.Popen([sys.executable, "-m", "reporter", "build", "--runs", url, "--site", str(site),
                              "--public", str(tmp_path / "public"), "--no-mkdocs"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors: list[BaseException] = []

    def writer(host: str) -> None:
        try:
            for folder in runs[host][2:]:
                time.sleep(0.3)
                uploaded[host].append(upload_run(folder, url).upload_id)
        except BaseException as e:  # reported by the test's thread
            errors.append(e)

    def tamperer() -> None:
        try:
            for n in (2, 3):
                time.sleep(0.2)
                tamper(n)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(h,)) for h in ("a", "b")] + [threading.Thread(target=tamperer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    stdout, stderr = build.communicate(timeout=600)
    assert not errors, errors
    assert "Traceback" not in stderr, stderr[-3000:]
    assert build.returncode == 0, stderr[-3000:]
    # it finished, with every good run uploaded before it began, and named what it skipped
    pages = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.md"))
    for host in runs:
        for folder in runs[host][:2]:
            assert folder.name in pages, folder
    skipped = [line for line in stderr.splitlines() if line.startswith("warning: skipped")]
    for label, run, upload in tampered[:4]:  # the tampering done before the build began
        assert any(f"upload {upload} of run {label}/{run}" in line for line in skipped), (upload, skipped)
    good_ids = {f.name for host in runs for f in runs[host]}
    for line in skipped:  # a skip names a bad upload, never a good one
        assert any(f"upload {u} of run" in line for _, _, u in tampered) or "not under" in line, line
    # once the writers are done, every good run is there and every bad upload named
    result = run_cli("reporter", "runs", "--runs", url, "--format", "json", env=s3, timeout=300)
    no_traceback(result)
    out = json.loads(result.stdout)
    assert {r["run_id"] for r in out["runs"]} == good_ids
    for label, run, upload in tampered:
        assert any(p["path"] == f"upload {upload} of run {label}/{run} in {url}" for p in out["problems"]), upload
    assert any(p["reason"].endswith(f"the run is read from its upload {uploaded['a'][0]}") for p in out["problems"])
