"""Robustness, round 2: nothing lost, nothing leaked (issue 15).

Each test names the failure it guards against: `reporter build --public` emptying a folder
it did not write, targets in the runs archive, read-only or wrong targets, escapes reaching
the terminal, NaN and other non-numbers accepted as options, multi-line option errors,
Unicode labels refused or mangled, symlinked label folders, resume of a damaged run, two
writers of one run, flags ignored by --resume, and the message after a signal before any
case. Synthetic runs go to pytest's temporary folders, never under runs/.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from runformat import schema as s
from runformat.archive import ArchiveError, RunWriter, read_table
from collector.lock import LOCK_FILE, LockHeld, RunLock
from collector.resume import check_resume_flags
from reporter.cli import cli
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from reporter.site.publish import PUBLIC_MARKER, publish_site
from test_reporter_support import lognormal_processes, run_id, write_run

ROOT = Path(__file__).resolve().parent.parent
CASES = ("mm[n=64]", "conv[k=3]")


def _archive(root: Path, labels: tuple[str, ...] = ("stack-a", "stack-b"), environment: dict | None = None) -> Path:
    rng = np.random.default_rng(3)
    for i, label in enumerate(labels):
        write_run(root, label, {c: lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0) for c in CASES},
                  run_id=run_id(i, f"{i:06x}"), environment=environment)
    return root


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="reporter")


def _one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- 1. reporter build never deletes what it did not write ----------------------------------------


def test_public_holding_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    runs = _archive(tmp_path / "runs")
    public = tmp_path / "public"
    public.mkdir()
    (public / "thesis.tex").write_text("years of work")
    result = _invoke("build", "--runs", str(runs), "--site", str(tmp_path / "site"), "--public", str(public))
    _one_line_error(result, str(public), "did not write", PUBLIC_MARKER)
    assert (public / "thesis.tex").read_text() == "years of work"


@pytest.mark.parametrize("where", ["public=runs", "public=inside-runs", "public=holds-runs", "site=runs", "site=inside-runs",
                                   "public=site", "public=inside-site"])
def test_targets_in_or_around_the_archive_are_refused(tmp_path: Path, where: str) -> None:
    runs = _archive(tmp_path / "archive" / "runs")
    before = _tree(runs)
    site, public = tmp_path / "site", tmp_path / "public"
    target = {"runs": runs, "inside-runs": runs / "stack-a", "holds-runs": runs.parent, "site": site,
              "inside-site": site / "out"}[where.split("=")[1]]
    flag = where.split("=")[0]
    site, public = (target, public) if flag == "site" else (site, target)
    result = _invoke("build", "--runs", str(runs), "--site", str(site), "--public", str(public))
    _one_line_error(result, f"--{flag}")
    assert _tree(runs) == before


def test_wrong_targets_are_one_line(tmp_path: Path) -> None:
    runs = _archive(tmp_path / "runs")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    for flag, value, needle in (("--public", str(a_file), "file"), ("--site", str(a_file), "file"),
                                ("--public", "", "empty"), ("--site", "", "empty"), ("--runs", "", "empty"),
                                ("--public", str(link), "symbolic link")):
        args = {"--runs": str(runs), "--site": str(tmp_path / "site"), "--public": str(tmp_path / "public")}
        args[flag] = value
        result = _invoke("build", *[x for kv in args.items() for x in kv])
        _one_line_error(result, flag, needle)
    assert a_file.read_text() == "x"


@pytest.mark.parametrize("flag", ["--site", "--public"])
def test_read_only_targets_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str) -> None:
    """Root writes through permission bits, so the file system's refusal is simulated where it lands."""
    runs = _archive(tmp_path / "runs")
    read_only = tmp_path / "mounted-read-only"
    read_only.mkdir()
    target = read_only / flag.strip("-")
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        where = Path(kwargs.get("dir") or (args[2] if len(args) > 2 else "."))
        if where == read_only or read_only in where.parents:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    site = target if flag == "--site" else tmp_path / "site"
    public = target if flag == "--public" else tmp_path / "public"
    result = _invoke("build", "--runs", str(runs), "--site", str(site), "--public", str(public))
    _one_line_error(result, flag, str(target), "Read-only file system")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits; see the simulated test")
def test_read_only_public_folder_by_permission_bits(tmp_path: Path) -> None:
    runs = _archive(tmp_path / "runs")
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        result = _invoke("build", "--runs", str(runs), "--site", str(tmp_path / "site"), "--public", str(parent / "public"))
    finally:
        parent.chmod(0o755)
    _one_line_error(result, "--public", "not writable")


def _builder(version: str, fail: bool = False):
    def build(folder: Path) -> None:
        (folder / "index.html").write_text(version)
        (folder / "assets").mkdir()
        (folder / "assets" / "app.js").write_text(version)
        if fail:
            raise ReporterError("mkdocs build --strict failed (exit 1)")

    return build


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_site_is_swapped_in_whole_and_a_failed_build_keeps_the_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      exchange: bool) -> None:
    if not exchange:
        monkeypatch.setattr("reporter.site.publish._exchange", lambda a, b: False)
    public = tmp_path / "public"
    publish_site(public, _builder("v1"))
    assert (public / "index.html").read_text() == "v1" and (public / PUBLIC_MARKER).is_file()
    with pytest.raises(ReporterError, match="mkdocs"):
        publish_site(public, _builder("v2", fail=True))
    assert _tree(public) == {"index.html": b"v1", "assets/app.js": b"v1", PUBLIC_MARKER: (public / PUBLIC_MARKER).read_bytes()}
    publish_site(public, _builder("v3"))
    assert (public / "index.html").read_text() == "v3" and (public / "assets" / "app.js").read_text() == "v3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"]  # no staging or old folder left beside it


def test_an_empty_public_folder_is_taken_and_a_marked_one_replaced(tmp_path: Path) -> None:
    public = tmp_path / "public"
    public.mkdir()
    publish_site(public, _builder("v1"))
    assert (public / "index.html").read_text() == "v1"
    (public / "stale.html").write_text("from the last build")  # inside a marked site: the build owns it
    publish_site(public, _builder("v2"))
    assert not (public / "stale.html").exists()


# -- 5. terminal escapes -------------------------------------------------------------------------

ESCAPES = ("\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31m", "\x9b31m", "\u202e", "\x1b]8;;http://evil.example\x1b\\")


def test_recorded_escapes_reach_the_terminal_inert(tmp_path: Path) -> None:
    env = {("gpu0", "name"): "GPU \x1b[2J\x1b[31mred\u202e", ("torch", "version"): "2.9\x9b31m", ("cuda", "runtime"): "\x1b]0;pwned\x07"}
    runs = _archive(tmp_path / "runs", ("plain", "lab\x1b]0;title\x07el"), environment=env)
    broken = runs / "x\x1b[31mbroken" / run_id(9)
    broken.mkdir(parents=True)  # a problem line names this folder
    outputs = []
    for args in (["runs"], ["compare", "plain", "lab\x1b]0;title\x07el"],
                 ["compare", "plain", "lab\x1b]0;title\x07el", "--format", "markdown"],
                 ["compare", "plain", "lab\x1b]0;title\x07el", "--format", "csv"]):
        result = _invoke(*args, "--runs", str(runs))
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    for out in outputs:
        for bad in ESCAPES:
            assert bad not in out
        assert not any(unicodedata.category(c) == "Cc" and c not in "\n" for c in out), repr(out)
    # shown, not hidden: the label and the folder in the runs list, the GPU's name in compare's header
    assert "\\x1b" in outputs[0] and "\\u202e" in outputs[1]
    # JSON keeps the data exactly (as \u escapes) and is inert text too
    result = _invoke("runs", "--runs", str(runs), "--format", "json")
    assert not any(unicodedata.category(c) == "Cc" and c not in "\n" for c in result.output)
    records = json.loads(result.output)["runs"]
    assert {r["device_name"] for r in records} == {"GPU \x1b[2J\x1b[31mred\u202e"}
    assert {r["torch"] for r in records} == {"2.9\x9b31m"}


# -- 6. numbers, one-line errors -----------------------------------------------------------------


@pytest.mark.parametrize("args, option", [
    (["--time-budget", "nan"], "--time-budget"), (["--time-budget", "inf"], "--time-budget"),
    (["--time-budget", "-1"], "--time-budget"), (["--time-budget", "0"], "--time-budget"),
    (["--case-timeout", "nan"], "--case-timeout"), (["--case-timeout", "-inf"], "--case-timeout"),
    (["--processes", "0"], "--processes"), (["--processes", "2.5"], "--processes"), (["--processes", "nan"], "--processes"),
    (["--out", ""], "--out"), (["--resume", ""], "--resume"), (["--device", "gpu"], "--device"),
])
def test_collector_refuses_non_numbers_in_one_line(capsys: pytest.CaptureFixture[str], args: list[str], option: str) -> None:
    from collector.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and option in err and "usage:" not in err, err


@pytest.mark.parametrize("args, option", [
    (["--noise", "nan"], "--noise"), (["--noise", "inf"], "--noise"), (["--noise", "100"], "--noise"),
    (["--noise", "-1"], "--noise"), (["--single-band", "nan"], "--single-band"), (["--single-band", "1e999"], "--single-band"),
])
def test_reporter_refuses_non_numbers_in_one_line(tmp_path: Path, args: list[str], option: str) -> None:
    runs = _archive(tmp_path / "runs")
    _one_line_error(_invoke("compare", "stack-a", "stack-b", "--runs", str(runs), *args), option)


@pytest.mark.parametrize("args, needle", [
    (["compare", "stack-a"], "CANDIDATE"), (["runs", "--bogus"], "--bogus"), (["--bogus"], "--bogus"),
    (["runs", "--format", "xml"], "--format"), (["nope"], "nope"),
])
def test_click_usage_errors_are_one_line(args: list[str], needle: str) -> None:
    _one_line_error(_invoke(*args), needle)


# -- 6. labels -----------------------------------------------------------------------------------


def _is_safe_component(name: str) -> bool:
    return (
        name not in ("", ".", "..") and not name.startswith((".", "-")) and "/" not in name and "\\" not in name
        and len(name) <= s.MAX_LABEL_LENGTH and len(name.encode("utf-8")) <= s.MAX_LABEL_BYTES
        and not any(unicodedata.category(c)[0] in "CZ" and c != "\u200d" for c in name)
        and unicodedata.normalize("NFC", name) == name
    )


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_any_label_gives_one_safe_folder_name_or_a_clear_refusal(label: str) -> None:
    try:
        name = s.sanitize_label(label)
    except s.SchemaError as e:
        assert "has no letters or digits" in str(e)
        return
    assert _is_safe_component(name), repr(name)
    assert s.sanitize_label(name) == name  # a resume re-sanitises what it recorded: same folder
    assert (Path("/srv/runs") / name).parent == Path("/srv/runs")


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(categories=("L", "N", "So")), min_size=1, max_size=40))
def test_printable_unicode_labels_are_kept_as_given(label: str) -> None:
    label = unicodedata.normalize("NFC", label)
    if label.startswith((".", "-", "_")) or label.endswith((".", "-", "_")) or len(label.encode()) > s.MAX_LABEL_BYTES:
        return
    assert s.sanitize_label(label) == label


@pytest.mark.parametrize("label, folder", [
    ("名字 2.9", "名字-2.9"), ("镜像-cu124", "镜像-cu124"), ("🚀-fast", "🚀-fast"), ("👩\u200d💻 dev", "👩\u200d💻-dev"),
    ("Ünïcödé", "Ünïcödé"), ("e\u0301", "\u00e9"), ("torch 2.9+cu124", "torch-2.9-cu124"), ("a∕b", "a-b"),
    ("\u202eevil", "evil"), ("../../etc", "etc"),
])
def test_unicode_labels_name_their_folder(tmp_path: Path, label: str, folder: str) -> None:
    assert s.sanitize_label(label) == folder
    w = RunWriter.create(tmp_path / "runs", label)
    assert w.folder.parent == tmp_path / "runs" / folder and w.label == folder


def test_a_chinese_label_is_accepted_by_the_collector_cli(tmp_path: Path) -> None:
    from collector.cli import _check_run_args, build_parser

    args = build_parser().parse_args(["run", "--label", "名字 2.9"])
    _check_run_args(args)  # no CLIError


def test_a_label_folder_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    out, outside = tmp_path / "runs", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "stack").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ArchiveError, match="symbolic link"):
        RunWriter.create(out, "stack", staged=True)
    assert list(outside.iterdir()) == []
    real = write_run(outside, "x", {"mm[n=1]": [[1e-3, 2e-3]]}, run_id=run_id(0))  # a run reached through a link
    (out / "linked").symlink_to(real.parent, target_is_directory=True)
    with pytest.raises(ArchiveError, match="symbolic link"):
        RunWriter.reopen(out / "linked" / real.name)


# -- 3. resume verifies a run's files; the reporter loads what is readable -------------------------


def test_a_run_without_its_samples_is_listed_and_named(tmp_path: Path) -> None:
    runs = _archive(tmp_path / "runs")
    folder = runs / "stack-b" / run_id(1, "000001")
    (folder / s.SAMPLES_FILE).unlink()
    archive = load_archive(runs)
    assert archive.labels() == ["stack-a", "stack-b"]
    (problem,) = archive.problems
    assert problem.path == str(folder / s.SAMPLES_FILE) and problem.reason.startswith("file missing; the run is loaded")
    assert archive.select("stack-b").samples.empty


def test_attempts_without_samples_are_left_out_and_the_rest_used(tmp_path: Path) -> None:
    runs = _archive(tmp_path / "runs")
    path = runs / "stack-a" / run_id(0, "000000") / s.SAMPLES_FILE
    table, meta = read_table(path, s.SAMPLES_FILE)
    rows = [r for r in table.to_pylist() if not (r["case_id"] == "conv[k=3]" and r["process"] == 1)]
    RunWriter(folder=path.parent, run_id=meta["run_id"], label=meta["label"]).write(s.SAMPLES_FILE, rows)
    archive = load_archive(runs).select("stack-a")
    attempts = set(zip(archive.cases["case_id"].astype(str), archive.cases["process"]))
    assert ("conv[k=3]", 1) not in attempts and ("conv[k=3]", 0) in attempts and len(attempts) == 5
    assert len(archive.ok_samples()) == len(rows)
    assert any("1 attempt(s) recorded ok" in p.reason and "'conv[k=3]' process 1" in p.reason for p in load_archive(runs).problems)


def _collector(*args: str, env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full_env.get("PYTHONPATH")) if p)
    full_env.pop("IMAGEBENCH_IMAGE", None)
    full_env.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "collector", "run", "--no-progress", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full_env, cwd=ROOT, **popen)


@pytest.mark.slow
def test_resume_measures_again_what_a_deleted_samples_file_held(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    proc = _collector("--suite", "smoke", "--only", "matmul[dtype=fp32,n=64]", "--processes", "2", "--time-budget", "0.05",
                      "--out", str(out))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    folder = Path(stdout.strip().splitlines()[-1])
    (folder / s.SAMPLES_FILE).unlink()
    proc = _collector("--resume", str(folder))
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "2 attempt(s) recorded ok have no samples" in stderr
    cases, _ = read_table(folder / s.CASES_FILE, s.CASES_FILE)
    samples, _ = read_table(folder / s.SAMPLES_FILE, s.SAMPLES_FILE)
    ok = {(r["case_id"], r["process"]) for r in cases.to_pylist() if r["status"] == "ok"}
    assert ok == {("matmul[dtype=fp32,n=64]", 0), ("matmul[dtype=fp32,n=64]", 1)}
    assert ok == {(r["case_id"], r["process"]) for r in samples.to_pylist()}
    archive = load_archive(out)
    assert archive.problems == [] and len(archive.runs) == 1 and archive.runs["status"].iloc[0] == "complete"
    assert not (folder / LOCK_FILE).exists()


def test_resume_refuses_flags_that_conflict_with_the_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collector.cli import main

    env = {("run", "processes"): "3", ("run", "suite"): "smoke", ("run", "only"): '["matmul"]', ("run", "device"): "auto",
           ("run", "time_budget"): "", ("run", "status"): "interrupted"}
    folder = write_run(tmp_path / "runs", "stack", {"mm[n=1]": [[1e-3, 2e-3]]}, run_id=run_id(0), environment=env)
    before = _tree(folder)
    assert main(["run", "--resume", str(folder), "--processes", "5", "--suite", "quick", "--time-budget", "2"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    for part in ("--processes 5 conflicts with the run's recorded 3", "--suite quick conflicts with the run's recorded smoke",
                 "--time-budget 2 conflicts with the run's recorded none"):
        assert part in err
    assert _tree(folder) == before


def test_resume_names_the_flags_it_uses_or_ignores() -> None:
    run = {"processes": "3", "suite": "smoke", "only": '["matmul"]', "device": "auto", "time_budget": "0.5"}
    conflicts, notes = check_resume_flags(run, "u:[redacted]@reg.example/img", {
        "processes": 3, "suite": "smoke", "only": ["matmul"], "device": "auto", "time_budget": 0.5,
        "image": "u:pw@reg.example/img", "out": "elsewhere", "case_timeout": 60.0, "data_dir": "/data",
    })
    assert conflicts == []  # the same values: nothing to refuse (the image compared as recorded: redacted)
    assert [n.split(" ")[0] for n in notes] == ["--out", "--case-timeout", "--data-dir"]
    assert "ignored" in notes[0]
    conflicts, _ = check_resume_flags(run, None, {"only": ["conv"], "device": "cuda", "image": "other"})
    assert [c.split(" ")[0] for c in conflicts] == ["--only", "--device", "--image"]


def test_a_second_writer_of_a_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collector.cli import main

    folder = write_run(tmp_path / "runs", "stack", {"mm[n=1]": [[1e-3, 2e-3]]}, run_id=run_id(0),
                       environment={("run", "status"): "interrupted"})
    before = _tree(folder)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from collector.lock import RunLock; RunLock(sys.argv[1]).acquire(); "
                               "print('locked', flush=True); time.sleep(120)", str(folder)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeld, match=f"process {holder.pid}"):
            RunLock(folder).acquire()
        assert main(["run", "--resume", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"is being written by process {holder.pid}" in err and len(err.strip().splitlines()) == 1
        assert {k: v for k, v in _tree(folder).items() if k != LOCK_FILE} == before
    finally:
        holder.kill()
        holder.wait()
    # SIGKILL left the lock file behind: stale, taken over and named
    assert (folder / LOCK_FILE).read_text().strip() == str(holder.pid)
    lock = RunLock(folder)
    note = lock.acquire()
    assert note is not None and f"stale lock of process {holder.pid}" in note
    assert (folder / LOCK_FILE).read_text().strip() == str(os.getpid())
    lock.release()
    assert not (folder / LOCK_FILE).exists()


def test_sigterm_before_any_run_folder_says_nothing_was_recorded(tmp_path: Path) -> None:
    started = tmp_path / "probe-started"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\ntouch '{started}'\nexec sleep 60\n")  # an interpreter that never answers the probe
    fake.chmod(0o755)
    out = tmp_path / "runs"
    proc = _collector("--python", str(fake), "--out", str(out))
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.2)  # the probe is waiting for its worker: no run folder yet
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "interrupted by SIGTERM; no run folder was created; nothing was recorded" in stderr
    assert "resume" not in stderr and "Traceback" not in stderr
    assert not any(out.rglob("*.parquet"))


def test_an_interruption_names_each_run_folder_and_what_it_holds(tmp_path: Path) -> None:
    from collector.cli import _what_exists
    from runformat.schema import CaseRecord

    class _Writer:
        def __init__(self, folder: Path) -> None:
            self.folder, self.final = folder, None

    class _Planned:
        def __init__(self, folder: Path, statuses: list[str]) -> None:
            self.writer = _Writer(folder)
            self.records = [CaseRecord("c", "w", "{}", i, st, None, "none", "cpu", 0.0, 0.0, None, None, None, None)
                            for i, st in enumerate(statuses)]

    a, b = tmp_path / "a" / run_id(0), tmp_path / "b" / run_id(1)
    text = _what_exists([_Planned(a, []), _Planned(b, ["ok", "failed", "interrupted"])])
    assert f"{a} holds 0 finished attempt(s)" in text and f"{b} holds 2 finished attempt(s)" in text
    assert f"collector run --resume {a}" in text and f"collector run --resume {b}" in text


def test_the_collector_prints_recorded_values_inert(capsys: pytest.CaptureFixture[str]) -> None:
    from collector.cli import _print_summary
    from runformat.schema import CaseRecord

    class _Writer:
        label = "lab\x1b]0;title\x07el"

    class _Planned:
        writer = _Writer()
        records = [CaseRecord("c[x=\x1b[2J]", "w", "{}", 0, "failed", "boom \x1b[31mred\u202e", "none", "cpu", 0.0, 0.0,
                              None, None, None, None)]
        samples: list = []

    _print_summary([_Planned()])
    out = capsys.readouterr().out
    assert not any(unicodedata.category(c) == "Cc" and c != "\n" for c in out) and "\u202e" not in out, repr(out)
    assert "\\x1b" in out
