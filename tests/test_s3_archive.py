"""The shared archive on object storage, against a local S3 server (moto's server mode on
127.0.0.1, no network): record to s3://, build the site from it; only finished uploads are
read; nothing is overwritten; credentials are never recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from runformat import schema as s
from runformat.archive import ArchiveError, read_table
from runformat.remote import MARKER_FILE, is_url, open_filesystem, upload_run
from reporter.data.load import load_archive

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a test dependency (pyproject.toml [test])")

BUCKET = "imagebench-test"
FAULTS = {"IMAGEBENCH_EXTRA_WORKLOADS": "tests.fault_workloads"}


@pytest.fixture(scope="module")
def s3_server():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch, tmp_path):
    """The SDK's usual environment, pointing at the local server, and an empty bucket."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_server,
        "IMAGEBENCH_CACHE": str(tmp_path / "cache"),
        "IMAGEBENCH_STAGE": str(tmp_path / "stage"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    fs, _ = open_filesystem(f"s3://{BUCKET}?allow_bucket_creation=true&allow_bucket_deletion=true")
    fs.create_dir(BUCKET)
    yield env
    fs.delete_dir_contents(BUCKET, missing_dir_ok=True)
    fs.delete_dir(BUCKET)


def keys(prefix: str) -> list[str]:
    fs, base = open_filesystem(prefix)
    return sorted(i.path[len(base) + 1:] for i in fs.get_file_info(pafs.FileSelector(base, recursive=True)) if i.type == pafs.FileType.File)


def test_urls_are_told_from_paths():
    assert is_url("s3://bucket/prefix") and is_url("gs://b") and is_url("file:///tmp/x")
    assert not is_url("runs") and not is_url("/abs/runs") and not is_url("C:\\runs")


def test_record_to_s3_then_build_the_site_from_it(s3, run_cli, tmp_path):
    url = f"s3://{BUCKET}/fleet/nightly"
    result = run_cli("collector", "run", "--suite", "smoke", "--only", "fault_ok", "--processes", "2", "--label", "node-a",
                     "--out", url, "--no-progress", env=FAULTS, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    local = Path(result.stdout.strip().splitlines()[-1])
    assert local.is_relative_to(tmp_path / "stage")  # recorded locally first
    assert f"uploaded node-a/{local.name} (complete" in result.stderr
    stored = keys(url)
    (upload,) = {k.split("/")[2] for k in stored}
    run = f"node-a/{local.name}/{upload}"
    assert stored == sorted(f"{run}/{n}" for n in (*s.RUN_FILES, MARKER_FILE))
    marker = json.loads(open_filesystem(f"{url}/{run}/{MARKER_FILE}")[0].open_input_stream(f"{BUCKET}/fleet/nightly/{run}/{MARKER_FILE}").read())
    assert marker["status"] == s.RUN_COMPLETE and set(marker["files"]) == set(s.RUN_FILES)
    # the credentials reached the collector only through the SDK's environment: never recorded
    env_rows = read_table(local / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)[0].to_pylist()
    recorded = json.dumps(env_rows)
    assert "testing-secret-value" not in recorded and "testing-key-id" not in recorded
    assert not any(r["key"].startswith("AWS_") for r in env_rows)

    archive = load_archive(url)
    assert list(archive.runs["run_id"].astype(str)) == [local.name] and not archive.problems
    assert archive.root.is_relative_to(tmp_path / "cache")
    site, public = tmp_path / "site", tmp_path / "public"
    result = run_cli("reporter", "build", "--runs", url, "--site", str(site), "--public", str(public), env=s3, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    pages = list(site.rglob("*.md"))
    assert any(local.name in p.read_text(encoding="utf-8") for p in pages)
    assert (public / "index.html").is_file()


def test_only_finished_uploads_are_read_and_nothing_is_overwritten(s3, tmp_path, run_cli, monkeypatch):
    url = f"s3://{BUCKET}/shared"
    result = run_cli("collector", "run", "--suite", "smoke", "--only", "fault_ok", "--processes", "1", "--label", "node-b",
                     "--out", str(tmp_path / "local"), "--no-progress", env=FAULTS, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    folder = Path(result.stdout.strip().splitlines()[-1])
    first = upload_run(folder, url)
    second = upload_run(folder, url)  # uploaded again (a retry): fresh keys, the latest one is read
    assert first.upload_id != second.upload_id
    assert len(keys(url)) == 2 * (len(s.RUN_FILES) + 1)
    # an upload cut short (data files without their marker) is invisible
    fs, base = open_filesystem(url)
    with fs.open_output_stream(f"{base}/node-b/20261203T000000Z-abcdef-123456/20261203T000001Z-abcdef-123456/cases.parquet") as f:
        f.write(b"partial")
    archive = load_archive(url)
    assert list(archive.runs["run_id"].astype(str)) == [folder.name]
    cached = archive.root / "node-b" / folder.name
    assert (cached / ".imagebench-upload").read_text().strip() == second.upload_id
    # a tampered file is caught by the marker's checksum and not read: the copy mirrored before stays,
    fs.delete_dir_contents(f"{base}/node-b/{folder.name}")
    bad = upload_run(folder, url)
    with fs.open_output_stream(f"{base}/node-b/{folder.name}/{bad.upload_id}/samples.parquet") as f:
        f.write(b"not parquet")
    archive = load_archive(url)
    assert any("not mirrored" in p.reason and "checksum" in p.reason for p in archive.problems)
    assert (cached / ".imagebench-upload").read_text().strip() == second.upload_id
    # and a fresh cache has no copy of it at all
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "fresh-cache"))
    archive = load_archive(url)
    assert archive.runs.empty and any("not mirrored" in p.reason for p in archive.problems)


def test_a_running_run_is_not_uploaded_and_bad_urls_are_one_line(s3, tmp_path, run_cli):
    from runformat.archive import RunWriter

    w = RunWriter.create(tmp_path / "runs", "lab")
    w.write_environment([s.EnvironmentEntry("run", "status", s.RUN_RUNNING)])
    w.write_cases([], [])
    with pytest.raises(ArchiveError, match="the run is running"):
        upload_run(w.folder, f"s3://{BUCKET}/x")
    result = run_cli("collector", "run", "--out", "nosuchscheme://b/p", "--suite", "smoke", timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "nosuchscheme://b/p" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("reporter", "runs", "--runs", f"s3://{BUCKET}-missing/p", env=s3, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
