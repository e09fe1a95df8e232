"""Coverage and A/A error rates by simulation, on the pure functions and through the whole reporter.

Every input here is synthetic (seeded lognormal draws with a known truth), generated in
memory or in a pytest temporary folder. The model is the one DESIGN.md describes for a
GPU: each worker process has its own level (a lognormal process effect, between-process
CV 0–5%) and its samples scatter around it (lognormal, within-process CV 1–10%, 5–50
samples), with 3–10 processes a side.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sst

from reporter.compare import compare_labels, compute_summaries
from reporter.load import load_archive
from reporter.stats import VERDICT_BETTER, VERDICT_WORSE, compute_log_ratio_tests, compute_verdict
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


def unit_log_moments(case: np.ndarray, proc: np.ndarray, values: np.ndarray, n: int):
    """Per comparison: count, mean and variance of the log of each process's median (numpy only)."""
    key = case * 16 + proc
    order = np.lexsort((values, key))
    v, kk = values[order], key[order]
    starts = np.flatnonzero(np.r_[True, kk[1:] != kk[:-1]])
    sizes = np.diff(np.r_[starts, kk.size])
    med = 0.5 * (v[starts + (sizes - 1) // 2] + v[starts + sizes // 2])
    ucase = kk[starts] // 16
    logs = np.log(med)
    cnt = np.bincount(ucase, minlength=n)
    mean = np.bincount(ucase, logs, minlength=n) / cnt
    var = np.bincount(ucase, (logs - mean[ucase]) ** 2, minlength=n) / (cnt - 1)
    return cnt, mean, var


def test_welch_on_process_medians_covers_the_true_ratio():
    """4,000 synthetic comparisons with known ratios: the 95% CI covers the truth 93–97%."""
    rng = np.random.default_rng(1)
    n = 2 * N_SIM
    d = draw_design(rng, n)
    true_log_ratio = rng.uniform(-0.3, 0.3, n)  # baseline time / candidate time
    b = simulate_side(rng, d["log_center"], d["k_b"], d["cv_w"], d["cv_b"])
    c = simulate_side(rng, d["log_center"] - true_log_ratio, d["k_c"], d["cv_w"], d["cv_b"])
    nb, mb, vb = unit_log_moments(*b, n)
    nc, mc, vc = unit_log_moments(*c, n)
    r = compute_log_ratio_tests(nb, mb, vb, nc, mc, vc, np.zeros(n, dtype=bool))
    truth = np.exp(true_log_ratio)
    coverage = np.mean((r.ci_low <= truth) & (truth <= r.ci_high))
    assert 0.93 <= coverage <= 0.97, coverage
    # The pooled-sample test the issue warns about under-covers badly on the same data.
    pooled = _pooled_sample_coverage(b, c, n, truth)
    assert pooled < 0.80, pooled


def _pooled_sample_coverage(b, c, n, truth) -> float:
    def moments(case, _proc, values):
        logs = np.log(values)
        cnt = np.bincount(case, minlength=n)
        mean = np.bincount(case, logs, minlength=n) / cnt
        var = np.bincount(case, (logs - mean[case]) ** 2, minlength=n) / (cnt - 1)
        return cnt, mean, var

    r = compute_log_ratio_tests(*moments(*b), *moments(*c), np.zeros(n, dtype=bool))
    return float(np.mean((r.ci_low <= truth) & (truth <= r.ci_high)))


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
    assert (c.rows["level"] == "process").all()


def test_aa_pairs_are_rarely_called_better_or_worse(simulated_archive):
    archive, _, _ = simulated_archive
    c = compare_labels(archive, "aa-left", "aa-right")
    rows = c.rows
    called = rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).mean()
    assert called <= 0.05, called
    # Even before the Holm correction, "significant and beyond the ±1% band" stays under 5%,
    # and the raw test rejects at about its nominal 5%.
    uncorrected = np.mean(
        [
            compute_verdict(r.ratio, r.ci_low, r.ci_high, r.p_value, r.n_baseline_units, r.n_candidate_units).verdict
            in (VERDICT_BETTER, VERDICT_WORSE)
            for r in rows.itertuples()
        ]
    )
    assert uncorrected <= 0.05, uncorrected
    rejected = np.mean(rows["p_value"] < 0.05)
    assert 0.03 <= rejected <= 0.07, rejected
    assert sst.kstest(rows["p_value"], "uniform").pvalue > 0.001


def test_label_median_ci_covers_the_true_median(simulated_archive):
    archive, d, _ = simulated_archive
    s = compute_summaries(archive)
    s = s[s["label"] == "base"]
    idx = s["case_id"].str.extract(r"i=(\d+)")[0].astype(int).to_numpy()
    truth = np.exp(d["log_center"][idx])
    coverage = np.mean((s["ci_low"] <= truth) & (truth <= s["ci_high"]))
    # Woodruff's interval with t(k-1) is conservative with 3–4 processes, about exact beyond.
    assert 0.93 <= coverage <= 0.99, coverage
