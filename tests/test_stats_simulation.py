"""Coverage, A/A false calls and power by simulation: on whole simulated articles, and through the reporter.

Every input here is synthetic (seeded draws with a known truth), generated in memory or
in a pytest temporary folder. ``stats_sim`` simulates articles with run effects, effects
shared by every case of a process or run, noise that differs tenfold between cases, and
normal, heavy-tailed or bimodal samples, and runs the reporter's statistics on them. The
Monte Carlo standard error of a coverage near 0.95 from n rows is sqrt(0.95·0.05/n):
0.002 for the 12,000 rows of a coverage test (up to 0.007 where all rows of an article share its effects), 0.009 for
600 article geomeans. ``benchmarks/stats_validation.py`` prints the full figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sst

from reporter.model.compare import compare_labels, compute_summaries
from reporter.data.load import load_archive
from reporter.model.stats import VERDICT_BETTER, VERDICT_WORSE
from stats_sim import Design, analyse, coverage, simulate
from test_reporter_support import write_run_arrays

N_SIM = 2000


def _log_sigma(cv: np.ndarray) -> np.ndarray:
    return np.sqrt(np.log1p(cv**2))


def simulate_side(rng: np.random.Generator, log_center: np.ndarray, k: np.ndarray, cv_w: np.ndarray, cv_b: np.ndarray):
    """Samples of one side of every comparison: (comparison index, process, value) per sample."""
    unit_case = np.repeat(np.arange(log_center.size), k)
    starts = np.cumsum(k) - k
    unit_proc = np.arange(unit_case.size) - np.repeat(starts, k)
    n_u = rng.integers(5, 51, unit_case.size)
    effect = _log_sigma(cv_b)[unit_case] * rng.standard_normal(unit_case.size)
    sample_unit = np.repeat(np.arange(unit_case.size), n_u)
    noise = _log_sigma(cv_w)[unit_case][sample_unit] * rng.standard_normal(sample_unit.size)
    values = np.exp(log_center[unit_case][sample_unit] + effect[sample_unit] + noise)
    return unit_case[sample_unit], unit_proc[sample_unit], values


def draw_design(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {
        "cv_w": rng.uniform(0.01, 0.10, n),
        "cv_b": rng.uniform(0.0, 0.05, n),
        "k_b": rng.integers(3, 11, n),
        "k_c": rng.integers(3, 11, n),
        "log_center": rng.uniform(np.log(1e-5), np.log(1e-1), n),
    }


DESIGNS = [(1, 2), (1, 4), (2, 3), (3, 2), (4, 6)]  # (runs, processes) a side


@pytest.mark.parametrize("noise", ["normal", "heavy", "bimodal"])
def test_case_ratio_ci_covers_the_truth(noise):
    """95% CIs cover the true ratio 93–97% of the time, with run and shared process effects."""
    rng = np.random.default_rng({"normal": 1, "heavy": 2, "bimodal": 3}[noise])
    covered = []
    for runs, processes in DESIGNS:
        # With one run a side the run level cannot be seen: there the truth holds no run effect.
        run = 0.02 if runs > 1 else 0.0
        d = Design(runs=runs, processes=processes, cases=12, run_shared=run, run_case=run / 2, proc_shared=0.01,
                   noise=noise, planted=np.log(1.05), planted_share=0.3)
        art = simulate(rng, d, 200)
        res = analyse(art)
        c = coverage(res, art)
        # Rows of one article share its run and process effects, so a design's 2,400 rows
        # weigh like a few hundred: each design alone gets a wider band.
        assert 0.90 <= c <= 0.99, (runs, processes, c)
        covered.append(c)
    assert 0.93 <= np.mean(covered) <= 0.97, covered


def test_aa_rows_are_rarely_called_and_the_geomean_covers_one():
    """A/A with run effects and shared per-process effects: <= 1% of rows called; geomean CI covers 1.0 93–97%."""
    rng = np.random.default_rng(11)
    d = Design(runs=2, processes=3, cases=30, run_shared=0.02, run_case=0.01, proc_shared=0.01)
    art = simulate(rng, d, 600)
    res = analyse(art)
    # Measured 1.0%: false calls come in clusters from the ~5% of articles (BH's level
    # under the global null) whose shared effects happened to be large, so the rate's
    # Monte Carlo error is about 0.2 points; the bound leaves one standard error.
    assert res.called.mean() <= 0.012, res.called.mean()
    assert (res.called.sum(axis=1) > 0).mean() <= 0.07
    geo = np.mean((res.geo_low <= 0) & (0 <= res.geo_high))
    assert 0.93 <= geo <= 0.97, geo
    # The old model (no run level, a geomean CI over cases) is what the issue measured failing.
    unmoderated = analyse(simulate(rng, Design(runs=1, processes=3, cases=30, run_shared=0.02, proc_shared=0.01), 100))
    assert unmoderated.called.mean() > 0.05  # a run effect nobody measured is called a difference


def test_a_planted_five_percent_change_is_found():
    """3 processes a side, 1% between processes, 2% within: >= 80% of planted rows called, FDP <= 5%."""
    rng = np.random.default_rng(5)
    d = Design(runs=1, processes=3, cases=100, proc_shared=0.0, proc_case=(0.01, 0.01), within=0.02,
               planted=np.log(1.05), planted_share=0.2)
    art = simulate(rng, d, 30)
    res = analyse(art)
    planted = art.truth > 0
    assert res.called[planted].mean() >= 0.80, res.called[planted].mean()
    false = (res.called & ~planted).sum() / max(res.called.sum(), 1)
    assert false <= 0.05, false


@pytest.fixture(scope="module")
def simulated_archive(tmp_path_factory):
    """One archive: per synthetic case, a baseline and a candidate with known ratio, plus an A/A pair."""
    rng = np.random.default_rng(7)
    root = tmp_path_factory.mktemp("simulated-runs")
    d = draw_design(rng, N_SIM)
    true_log_ratio = rng.uniform(-0.3, 0.3, N_SIM)
    names = np.array([f"sim[i={i}]" for i in range(N_SIM)])
    sides = {
        "base": simulate_side(rng, d["log_center"], d["k_b"], d["cv_w"], d["cv_b"]),
        "cand": simulate_side(rng, d["log_center"] - true_log_ratio, d["k_c"], d["cv_w"], d["cv_b"]),
        "aa-left": simulate_side(rng, d["log_center"], d["k_b"], d["cv_w"], d["cv_b"]),
        "aa-right": simulate_side(rng, d["log_center"], d["k_c"], d["cv_w"], d["cv_b"]),
    }
    for i, (label, (case, proc, values)) in enumerate(sides.items()):
        write_run_arrays(root, label, f"20261202T00000{i}Z-00000{i}", names[case].tolist(), proc, values)
    return load_archive(root), d, true_log_ratio


def test_whole_pipeline_covers_the_true_ratio(simulated_archive):
    archive, _, true_log_ratio = simulated_archive
    c = compare_labels(archive, "base", "cand")
    assert len(c.rows) == N_SIM and not c.unmatched
    idx = c.rows["case_id"].str.extract(r"i=(\d+)")[0].astype(int).to_numpy()
    truth = np.exp(true_log_ratio[idx])
    coverage = np.mean((c.rows["ci_low"] <= truth) & (truth <= c.rows["ci_high"]))
    assert 0.93 <= coverage <= 0.97, coverage
    assert (c.rows["analysis"] == "hierarchical").all()


def test_aa_pairs_are_rarely_called_better_or_worse(simulated_archive):
    archive, _, _ = simulated_archive
    c = compare_labels(archive, "aa-left", "aa-right")
    rows = c.rows
    called = rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).mean()
    assert called <= 0.01, called
    # The raw test rejects at about its nominal 5%, and its p-values are uniform.
    rejected = np.mean(rows["p_value"] < 0.05)
    assert 0.03 <= rejected <= 0.07, rejected
    assert sst.kstest(rows["p_value"], "uniform").pvalue > 0.001


def test_label_ci_covers_the_true_location(simulated_archive):
    archive, d, _ = simulated_archive
    s = compute_summaries(archive)
    s = s[s["label"] == "base"]
    idx = s["case_id"].str.extract(r"i=(\d+)")[0].astype(int).to_numpy()
    truth = np.exp(d["log_center"][idx])
    coverage = np.mean((s["ci_low"] <= truth) & (truth <= s["ci_high"]))
    # The hierarchical interval of the label's location (t over its processes).
    assert 0.93 <= coverage <= 0.97, coverage
