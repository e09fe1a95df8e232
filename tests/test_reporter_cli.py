"""The reporter CLI as a user runs it: a subprocess, its exit code, its output.

The main paths run as subprocesses (``python -m reporter`` and the console script); the
longer matrix of bad inputs goes through click's in-process runner, which calls the same
entry point without paying the interpreter start-up each time.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from test_reporter_support import lognormal_processes, run_id, write_run


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """Synthetic archive: stack-b 25% faster on mm; two runs of stack-a (an A/A pair); one bad run."""
    root = tmp_path_factory.mktemp("cli") / "runs"
    rng = np.random.default_rng(5)
    for i, (label, speed) in enumerate([("stack-a", 1.0), ("stack-a", 1.0), ("stack-b", 1.25)]):
        write_run(
            root, label,
            {
                "mm[dtype=bf16,n=4096]": lognormal_processes(rng, 4, 15, 2e-4 / speed, 0.02, 0.005),
                "conv[k=3]": lognormal_processes(rng, 4, 15, 3e-4, 0.02, 0.005),
                f"extra_{i}[x=1]": lognormal_processes(rng, 3, 5, 1e-3, 0.02, 0.0),
            },
            run_id=run_id(i, f"{i:06x}"),
            failed={"oom[n=1]": "CUDA out of memory"} if label == "stack-b" else None,
        )
    write_run(root, "stack-bad", {"mm[dtype=bf16,n=4096]": [[1e-4, float("nan")]]}, run_id=run_id(9))
    return root


def _reporter(run_cli, *args):
    return run_cli("reporter", *args)


def _in_process(*args):
    from click.testing import CliRunner

    from reporter.cli import cli

    return CliRunner().invoke(cli, list(args), prog_name="reporter")


def test_compare_table(run_cli, runs_dir):
    r = _reporter(run_cli, "compare", "stack-a", "stack-b", "--runs", str(runs_dir))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "mm[dtype=bf16,n=4096]" in out and "conv" in out  # brackets survive
    assert "better" in out and "Geometric mean" in out
    assert "Measured on the baseline only (2): extra_0 x=1; extra_1 x=1" in out
    assert out.splitlines()[0] == "baseline: stack-a (Synthetic GPU)"
    assert "stack-bad" in r.stderr and "non-finite" in r.stderr  # the skipped run is named on stderr
    assert "Traceback" not in r.stderr


def test_compare_json(run_cli, runs_dir):
    r = _reporter(run_cli, "compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "json")
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    keys = {"case", "metric", "unit", "baseline_median", "candidate_median", "ratio", "ci_low", "ci_high",
            "p_value", "p_adjusted", "verdict"}
    assert all(keys <= set(rec) for rec in records)
    assert records[-1]["case"] == "geomean" and records[-1]["ratio"] > 1
    by_case = {(rec["case"], rec["metric"]): rec for rec in records}
    mm = by_case[("mm[dtype=bf16,n=4096]", "time")]
    assert mm["verdict"] == "better" and mm["ratio"] == pytest.approx(1.25, rel=0.05)
    assert mm["ci_low"] <= mm["ratio"] <= mm["ci_high"] and mm["unit"] == "s"
    unmatched = [rec for rec in records if rec["verdict"] == "unmatched"]
    assert {rec["case"] for rec in unmatched} == {"extra_0[x=1]", "extra_1[x=1]", "extra_2[x=1]"}


def test_compare_csv_and_markdown(runs_dir):
    r = _in_process("compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows[-1]["case"] == "geomean" and float(rows[-1]["ratio"]) > 1
    r = _in_process("compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "markdown")
    assert r.exit_code == 0, r.output
    assert "| Case | Baseline | Candidate | Ratio &#91;95% CI&#93; | Verdict |" in r.stdout
    assert "▲ better" in r.stdout and '<details markdown="1">' in r.stdout


def test_compare_leaves_out_the_runs_the_config_sets_aside(runs_dir, tmp_path):
    config = tmp_path / "site.toml"
    config.write_text(f'[[set_aside]]\nruns = ["stack-a@{run_id(1, "000001")}"]\nreason = "loaded host"\n',
                      encoding="utf-8")
    both = _in_process("compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "json")
    one = _in_process("compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "json", "--config", str(config))
    assert both.exit_code == 0 and one.exit_code == 0, one.output
    assert "1 run(s) set aside" in one.stderr and "set aside" not in both.stderr
    extra = {rec["case"] for rec in json.loads(one.stdout) if rec["verdict"] == "unmatched"}
    assert extra == {"extra_0[x=1]", "extra_2[x=1]"}  # extra_1 was only in the run set aside
    missing = _in_process("compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--config", str(tmp_path / "no.toml"))
    assert missing.exit_code == 2 and "no.toml" in missing.output and "file not found" in missing.output


def test_compare_two_runs_of_one_label(run_cli, runs_dir):
    prefix = run_id(0, "000000")[:-2]  # a unique prefix of the first run
    r = _reporter(run_cli, "compare", f"stack-a@{prefix}", f"stack-a@{run_id(1, '000001')}",
                  "--runs", str(runs_dir), "--format", "json")
    assert r.returncode == 0, r.stderr
    verdicts = {rec["verdict"] for rec in json.loads(r.stdout) if rec["case"] != "geomean"}
    assert not verdicts & {"better", "worse"}


def test_unknown_label_is_one_clear_line_and_exit_2(run_cli, runs_dir):
    r = _reporter(run_cli, "compare", "stack-a", "stack-z", "--runs", str(runs_dir))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == (
        f"Error: no label 'stack-z' under {runs_dir}; labels: stack-a, stack-b, stack-bad"  # stack-bad: listed, no samples
    )
    assert "Traceback" not in r.stderr
    r = _reporter(run_cli, "compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--strict")
    assert r.returncode == 2 and "--strict: 1 invalid run(s)" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "stack-a@2026", "stack-b"], "is ambiguous"),
        (["compare", "stack-a", "stack-a"], "share run(s)"),
        (["compare", "stack-a", "stack-b@nope"], "no run 'nope' under label 'stack-b'"),
        (["runs", "--strict"], "samples.parquet"),
        (["compare", "stack-a", "stack-b", "--noise", "-1"], "Invalid value for '--noise'"),
        (["compare", "stack-a", "stack-b", "--noise", "100"], "Invalid value for '--noise'"),
        (["compare", "stack-a", "stack-b", "--format", "xml"], "Invalid value for '--format'"),
        (["compare", "stack-a"], "Missing argument 'CANDIDATE'"),
    ],
)
def test_bad_input_exit_2(runs_dir, args, message):
    r = _in_process(*args, "--runs", str(runs_dir))
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_missing_and_empty_archives(run_cli, tmp_path):
    r = _reporter(run_cli, "compare", "a", "b", "--runs", str(tmp_path / "nope"))
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _in_process("compare", "a", "b", "--runs", str(empty))
    assert r.exit_code == 2 and "labels: none" in r.stderr
    r = _in_process("runs", "--runs", str(empty))
    assert r.exit_code == 0 and "No valid runs" in r.stdout


def test_identical_samples_and_missing_side(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "x", {"c[n=1]": [[1e-3] * 4] * 3, "only_x[n=1]": [[1e-3, 2e-3]] * 3}, run_id=run_id(0))
    write_run(root, "y", {"c[n=1]": [[1e-3] * 4] * 3}, run_id=run_id(1))
    r = _in_process("compare", "x", "y", "--runs", str(root), "--format", "json")
    assert r.exit_code == 0, r.output
    recs = {rec["case"]: rec for rec in json.loads(r.stdout)}
    assert recs["c[n=1]"]["ratio"] == 1.0 and recs["c[n=1]"]["verdict"] == "unchanged"  # identical in every process: deterministic
    assert recs["only_x[n=1]"]["verdict"] == "unmatched"
    write_run(root, "z", {"other[n=1]": [[1e-3, 2e-3]] * 3}, run_id=run_id(2))
    r = _in_process("compare", "x", "z", "--runs", str(root))
    assert r.exit_code == 2 and "no case measured on both 'x' and 'z'" in r.stderr


def test_runs_lists_runs_and_problems(run_cli, runs_dir):
    r = _reporter(run_cli, "runs", "--runs", str(runs_dir), "--width", "200")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert run_id(2, "000002") in out and "stack-b" in out and "2.11.0+cu130" in out and "13.0" in out
    assert "3/1/4" in out  # stack-b: cases ok / failed / total
    assert "1 problem(s)" in out and "samples.parquet" in out and "non-finite" in out
    r = _in_process("runs", "--runs", str(runs_dir), "--format", "json")
    data = json.loads(r.stdout)
    assert len(data["runs"]) == 4 and data["problems"][0]["path"].endswith("samples.parquet")  # stack-bad: listed, no samples


def test_help_and_console_script(run_cli, runs_dir):
    r = _in_process("--help")
    assert r.exit_code == 0 and "compare" in r.stdout and "runs" in r.stdout
    script = Path(sys.executable).parent / "reporter"
    if not script.exists():
        pytest.skip("the reporter console script is not installed in this environment")
    import subprocess

    r = subprocess.run([str(script), "compare", "stack-a", "stack-b", "--runs", str(runs_dir), "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[-1]["case"] == "geomean"
