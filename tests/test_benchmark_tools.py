"""The benchmark tools that read recorded runs: the stop-rule re-cut and the run-time profile."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import run_time  # noqa: E402
import stop_rule  # noqa: E402

RUN = ROOT / "runs" / "h100-torch-2.11.0-cu130" / "20261205T194302Z-777a80-5bce98"


def test_the_stop_rule_waits_for_its_minimum_then_stops_on_a_narrow_ci():
    assert stop_rule.stop_at([1.0] * 40, [1] * 40, min_samples=10, budget_s=100.0, target=0.01) == 10


def test_the_stop_rule_stops_on_the_budget_when_the_ci_stays_wide():
    values = [1.0 if i % 2 else 2.0 for i in range(40)]  # a median CI as wide as the median
    # Blocks of one iteration, 2 s and 1 s in turn: 12 s are spent after 8 blocks; a
    # minimum of 10 blocks still holds past the budget.
    assert stop_rule.stop_at(values, [1] * 40, min_samples=10, budget_s=12.0, target=0.01) == 10
    assert stop_rule.stop_at(values, [1] * 40, min_samples=4, budget_s=12.0, target=0.01) == 8


def test_the_stop_rule_keeps_a_short_list_whole():
    assert stop_rule.stop_at([1.0, 2.0, 3.0], [1, 1, 1], min_samples=10, budget_s=1.0, target=0.01) == 3


@pytest.mark.skipif(not RUN.is_dir(), reason="the recorded H100 run is not in this checkout")
def test_the_run_time_profile_adds_up_to_the_recorded_durations():
    import pyarrow.parquet as pq

    whole, by_workload = run_time.profile(RUN)
    cases = pq.read_table(RUN / "cases.parquet").to_pandas()
    assert whole["attempts"] == len(cases) == 291
    assert whole["inside cases s"] == pytest.approx(cases["duration_s"].sum())
    assert by_workload["seconds"].sum() == pytest.approx(whole["inside cases s"])
    assert by_workload.loc["matmul", "attempts"] == 90
    # what the samples measured never exceeds the time the attempts took
    assert (by_workload["measured"] <= by_workload["seconds"] + 1e-6).all()
    assert 0 < whole["first case after start s"] < 60 and 0 <= whole["tail after last case s"] < 60


def test_the_gpu_state_cost_times_each_reading_of_the_source(capsys):
    import gpu_state_cost

    class Source:
        reads = 0

        def read(self):
            Source.reads += 1
            return []

    times = gpu_state_cost.time_reads(Source(), 7)
    assert Source.reads == 7 and len(times) == 7 and all(t >= 0 for t in times)
    line = gpu_state_cost.describe("idle", [0.001, 0.002, 0.010])
    assert "median    2.00 ms" in line and "max   10.00 ms" in line and "(3 reads)" in line


def test_the_gpu_state_cost_says_what_is_sampled_without_a_gpu(capsys, monkeypatch):
    import torch

    import gpu_state_cost

    if torch.cuda.is_available():
        pytest.skip("this checks the CPU path")
    monkeypatch.setattr(sys, "argv", ["gpu_state_cost.py", "--reads", "3"])
    assert gpu_state_cost.main() == 0
    assert "no CUDA device" in capsys.readouterr().out


def test_the_tiny_kernel_noise_table_reads_each_condition_of_each_kernel():
    from collector.timing import Timed

    import tiny_kernel_noise

    def timed(values, stopped):
        return Timed(per_iter=values, wall_per_iter=None, iterations=1, method="cuda_event", warmup_calls=3, stopped=stopped)

    results = [
        ("k", "lead", timed([2e-6] * 10, "ci"), 0.1),
        ("k", "plain", timed([1e-6, 3e-6] * 20, "budget"), 1.0),
        ("k", "plain", timed([2e-6] * 12, "ci"), 0.2),
    ]
    rows = tiny_kernel_noise.summarize(results)
    assert [r["condition"] for r in rows] == ["plain", "lead"]  # in CONDITIONS order
    plain, lead = rows
    assert plain["rounds"] == 2 and plain["budget_stops"] == 1 and plain["blocks"] == 26
    assert plain["seconds"] == pytest.approx(0.6) and plain["median_us"] == pytest.approx(2.0)
    assert lead["ci_width"] == 0.0 and lead["budget_stops"] == 0


def test_the_tiny_kernel_noise_says_what_it_needs_without_a_gpu(capsys, monkeypatch):
    import torch

    import tiny_kernel_noise

    if torch.cuda.is_available():
        pytest.skip("this checks the CPU path")
    monkeypatch.setattr(sys, "argv", ["tiny_kernel_noise.py", "--rounds", "1"])
    assert tiny_kernel_noise.main() == 0
    assert "no CUDA device" in capsys.readouterr().out


def test_the_process_spread_names_the_process_that_reads_slower(tmp_path):
    """A process timed while the host was busy reads slower on every case: the spread says which."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import process_spread

    run = tmp_path / "label" / "20261207T000000Z-abcdef"
    run.mkdir(parents=True)
    rows = {"case_id": [], "process": [], "metric": [], "value": []}
    for case, base in (("a", 1e-3), ("b", 2e-3), ("c", 5e-3)):
        for process, factor in ((0, 2.0), (1, 1.0), (2, 1.02)):
            for i in range(5):
                rows["case_id"].append(case)
                rows["process"].append(process)
                rows["metric"].append("time")
                rows["value"].append(base * factor * (1 + 0.001 * i))
    pq.write_table(pa.table(rows), run / "samples.parquet")
    assert process_spread.run_folders([str(tmp_path / "label")]) == [run]
    processes, typical, largest, cases = process_spread.process_spread(run)
    assert processes == [0, 1, 2] and cases == 3
    assert typical[0] == pytest.approx(np.log(2.0 / 1.02)) and typical[2] == pytest.approx(0.0)
    assert largest[0] == pytest.approx(2.0 / 1.02)
