"""reporter.stats on fixed inputs: agreement with scipy/numpy, edge cases, and Hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from reporter.stats import (
    VERDICT_BETTER,
    VERDICT_INCONCLUSIVE,
    VERDICT_SAME,
    VERDICT_WORSE,
    adjust_pvalues,
    compute_comparison,
    compute_geomean,
    compute_grouped_summaries,
    compute_log_ratio_tests,
    compute_summary,
    compute_verdict,
)

# Fixed synthetic inputs (seeded), not measurements.
RNG = np.random.default_rng(20261202)
BASE = RNG.lognormal(np.log(1e-3), 0.04, 7)
CAND = RNG.lognormal(np.log(0.9e-3), 0.06, 5)


# ------------------------------------------------------------------ against scipy


def test_comparison_matches_scipy_welch_on_logs():
    r = compute_comparison(BASE, CAND, "lower")
    ref = sst.ttest_ind(np.log(CAND), np.log(BASE), equal_var=False)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert r.df == pytest.approx(ref.df, rel=1e-12)
    ci = ref.confidence_interval(0.95)  # of mean(log cand) - mean(log base)
    # lower is better: ratio = baseline / candidate = exp(-(log c - log b))
    assert r.ratio == pytest.approx(math.exp(-(np.log(CAND).mean() - np.log(BASE).mean())), rel=1e-12)
    assert r.ci_low == pytest.approx(math.exp(-ci.high), rel=1e-10)
    assert r.ci_high == pytest.approx(math.exp(-ci.low), rel=1e-10)


def test_comparison_higher_is_better_is_candidate_over_baseline():
    r = compute_comparison(BASE, CAND, "higher")
    ref = sst.ttest_ind(np.log(CAND), np.log(BASE), equal_var=False).confidence_interval(0.95)
    assert r.ratio == pytest.approx(math.exp(np.log(CAND).mean() - np.log(BASE).mean()), rel=1e-12)
    assert (r.ci_low, r.ci_high) == (pytest.approx(math.exp(ref.low), rel=1e-10), pytest.approx(math.exp(ref.high), rel=1e-10))


def test_vectorised_tests_match_the_scalar_form():
    groups = [(RNG.lognormal(0, 0.05, n), RNG.lognormal(0.02, 0.1, m)) for n, m in ((3, 3), (10, 4), (2, 7), (5, 5))]
    lb = [np.log(b) for b, _ in groups]
    lc = [np.log(c) for _, c in groups]
    v = compute_log_ratio_tests(
        [len(x) for x in lb], [x.mean() for x in lb], [x.var(ddof=1) for x in lb],
        [len(x) for x in lc], [x.mean() for x in lc], [x.var(ddof=1) for x in lc],
        [False, True, False, True],
    )
    for i, (b, c) in enumerate(groups):
        s = compute_comparison(b, c, "higher" if i % 2 else "lower")
        assert (v.ratio[i], v.ci_low[i], v.ci_high[i], v.p_value[i]) == pytest.approx((s.ratio, s.ci_low, s.ci_high, s.p_value))
        ref = sst.ttest_ind(lc[i], lb[i], equal_var=False)
        assert v.p_value[i] == pytest.approx(ref.pvalue, rel=1e-10)


def test_bh_matches_scipy_false_discovery_control():
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216, 0.5, 0.9, 1.0, 0.0])
    np.testing.assert_allclose(adjust_pvalues(p, "bh"), sst.false_discovery_control(p, method="bh"), rtol=1e-12)
    q = RNG.uniform(0, 0.2, 50)
    np.testing.assert_allclose(adjust_pvalues(q, "bh"), sst.false_discovery_control(q, method="bh"), rtol=1e-12)


def test_holm_on_a_worked_example():
    # Holm (1979) step-down: sorted 0.01, 0.02, 0.03, 0.5 with m = 4 -> 0.04, 0.06, 0.06, 0.5.
    p = np.array([0.03, 0.5, 0.01, 0.02])
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.06, 0.5, 0.04, 0.06])


def test_adjust_skips_nan_and_counts_only_tests():
    p = np.array([0.01, np.nan, 0.04])
    out = adjust_pvalues(p, "holm")
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])
    assert np.isnan(adjust_pvalues([np.nan, np.nan])).all()
    with pytest.raises(ValueError):
        adjust_pvalues([0.1], "bonferroni-ish")


def test_summary_quantiles_match_numpy():
    x = RNG.lognormal(0, 0.3, 57)
    s = compute_summary(x)
    assert s.median == pytest.approx(np.median(x))
    assert (s.q1, s.q3) == (pytest.approx(np.quantile(x, 0.25)), pytest.approx(np.quantile(x, 0.75)))
    assert s.mean == pytest.approx(x.mean())
    assert s.cv == pytest.approx(x.std(ddof=1) / x.mean())
    assert (s.n_samples, s.n_units) == (57, 1)


def test_single_process_median_ci_agrees_with_the_exact_binomial_interval():
    # With one unit, Woodruff's interval is the normal approximation of the exact
    # order-statistic interval (scipy.stats.quantile_test): the same to about one rank.
    for n in (15, 30, 80, 200):
        x = np.sort(RNG.lognormal(0, 0.1, n))
        s = compute_summary(x)
        exact = sst.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(0.95)
        spacing = np.max(np.diff(x))
        assert abs(s.ci_low - exact.low) <= spacing * 1.01
        assert abs(s.ci_high - exact.high) <= spacing * 1.01


def test_single_process_median_ci_close_to_scipy_bootstrap():
    x = RNG.lognormal(0, 0.1, 200)
    s = compute_summary(x)
    boot = sst.bootstrap((x,), np.median, method="percentile", n_resamples=4000, random_state=1).confidence_interval
    width = boot.high - boot.low
    assert abs(s.ci_low - boot.low) < 0.25 * width
    assert abs(s.ci_high - boot.high) < 0.25 * width


def test_grouped_summaries_match_one_group_at_a_time():
    values, groups, units = [], [], []
    for g in range(4):
        for u in range(g + 1):
            n = int(RNG.integers(3, 12))
            values.append(RNG.lognormal(g, 0.1, n) * RNG.lognormal(0, 0.05))
            groups.append(np.full(n, g))
            units.append(np.full(n, u))
    v, gr, un = map(np.concatenate, (values, groups, units))
    order = RNG.permutation(v.size)  # order must not matter
    res = compute_grouped_summaries(v[order], gr[order], un[order], n_groups=5)
    for g in range(4):
        s = compute_summary(v[gr == g], un[gr == g])
        got = (res.median[g], res.ci_low[g], res.ci_high[g], res.mean[g], res.q1[g], res.q3[g], res.cv[g])
        assert got == pytest.approx((s.median, s.ci_low, s.ci_high, s.mean, s.q1, s.q3, s.cv))
        assert res.n_units[g] == g + 1 == s.n_units
    assert res.n_samples[4] == 0 and math.isnan(res.median[4])


def test_between_process_spread_widens_the_median_ci():
    # Same within-process noise; processes shifted apart -> a wider CI than one pooled process.
    within = RNG.normal(0, 0.01, (5, 40))
    shifted = 1.0 + within + np.array([-0.1, -0.05, 0, 0.05, 0.1])[:, None]
    units = np.repeat(np.arange(5), 40)
    clustered = compute_summary(shifted.ravel(), units)
    pooled_as_one = compute_summary(shifted.ravel())
    assert clustered.ci_high - clustered.ci_low > 2 * (pooled_as_one.ci_high - pooled_as_one.ci_low)


# ---------------------------------------------------------------- edge cases


def test_identical_samples_do_not_crash_or_claim_significance():
    s = compute_summary([2.5] * 20, [0] * 10 + [1] * 10)
    assert (s.median, s.ci_low, s.ci_high, s.cv, s.iqr) == (2.5, 2.5, 2.5, 0.0, 0.0)
    same = compute_comparison([1.0] * 3, [1.0] * 4)
    assert (same.ratio, same.ci_low, same.ci_high, same.p_value) == (1.0, 1.0, 1.0, 1.0)
    differ = compute_comparison([2.0] * 3, [3.0] * 3, "lower")
    assert math.isnan(differ.p_value)  # scipy would say p = 0; we refuse to test without variance
    assert differ.ratio == pytest.approx(2 / 3) and differ.ci_low == differ.ci_high == differ.ratio
    v = compute_verdict(differ.ratio, differ.ci_low, differ.ci_high, differ.p_value, 3, 3)
    assert v.verdict == VERDICT_INCONCLUSIVE and "no variance" in v.note


def test_one_replicate_a_side_gives_a_ratio_without_ci():
    r = compute_comparison([2.0], [1.0, 1.1, 0.9])
    assert r.ratio == pytest.approx(2 / np.exp(np.log([1.0, 1.1, 0.9]).mean()))
    assert math.isnan(r.ci_low) and math.isnan(r.p_value)
    assert compute_verdict(r.ratio, r.ci_low, r.ci_high, r.p_value, 1, 3).verdict == VERDICT_INCONCLUSIVE


@pytest.mark.parametrize("bad", [[1.0, 0.0], [1.0, -2.0], [1.0, float("nan")], [float("inf")], []])
def test_comparison_rejects_values_without_a_log(bad):
    with pytest.raises(ValueError):
        compute_comparison(bad, [1.0, 2.0])
    with pytest.raises(ValueError):
        compute_comparison([1.0, 2.0], bad)


def test_summary_rejects_misshapen_input():
    with pytest.raises(ValueError):
        compute_summary([])
    with pytest.raises(ValueError):
        compute_grouped_summaries([1.0, 2.0], [0], [0, 0])


def test_geomean_of_known_ratios():
    g = compute_geomean([1.1, 1.2, 0.9, float("nan"), -1.0])
    lr = np.log([1.1, 1.2, 0.9])
    half = sst.t.ppf(0.975, 2) * lr.std(ddof=1) / math.sqrt(3)
    assert (g.ratio, g.ci_low, g.ci_high, g.n_cases) == (
        pytest.approx(math.exp(lr.mean())), pytest.approx(math.exp(lr.mean() - half)), pytest.approx(math.exp(lr.mean() + half)), 3,
    )
    one = compute_geomean([1.3])
    assert one.ratio == pytest.approx(1.3) and math.isnan(one.ci_low) and one.n_cases == 1
    assert compute_geomean([]).n_cases == 0


# -------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    "ratio, lo, hi, p, n, expected",
    [
        (1.20, 1.15, 1.25, 0.001, 5, VERDICT_BETTER),
        (0.80, 0.75, 0.85, 0.001, 5, VERDICT_WORSE),
        (1.005, 1.002, 1.008, 0.001, 5, VERDICT_SAME),  # significant but inside the ±1% band
        (1.02, 1.005, 1.035, 0.01, 5, VERDICT_INCONCLUSIVE),  # significant, CI reaches into the band
        (1.20, 1.15, 1.25, 0.20, 5, VERDICT_INCONCLUSIVE),  # corrected test not significant, CI beyond ±10%
        (1.00, 0.98, 1.02, 0.90, 5, VERDICT_SAME),
        (1.00, 0.70, 1.40, 0.90, 5, VERDICT_INCONCLUSIVE),  # too noisy to tell
        (1.05, 1.03, 1.07, 0.001, 1, VERDICT_INCONCLUSIVE),  # single process: the ±10% band applies
        (1.20, 1.15, 1.25, 0.001, 1, VERDICT_BETTER),
        (float("nan"), float("nan"), float("nan"), float("nan"), 5, VERDICT_INCONCLUSIVE),
    ],
)
def test_verdict_rules(ratio, lo, hi, p, n, expected):
    assert compute_verdict(ratio, lo, hi, p, n, 5).verdict == expected


def test_verdict_notes_name_the_process_count():
    assert "single process" in compute_verdict(1.2, 1.15, 1.25, 0.001, 1, 4).note
    assert "fewer than 3 processes" in compute_verdict(1.2, 1.15, 1.25, 0.001, 2, 4).note
    assert compute_verdict(1.2, 1.15, 1.25, 0.001, 3, 4).note == ""
    assert compute_verdict(1.05, 1.03, 1.07, 0.001, 3, 4, noise=0.05).verdict == VERDICT_INCONCLUSIVE


# ------------------------------------------------------------------ properties

positive = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)
samples = st.lists(positive, min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(samples, samples, st.sampled_from(["lower", "higher"]))
def test_ratio_lies_in_its_ci(b, c, better):
    r = compute_comparison(b, c, better)
    if math.isfinite(r.ci_low):
        assert r.ci_low <= r.ratio * (1 + 1e-12) and r.ratio <= r.ci_high * (1 + 1e-12)
    if math.isfinite(r.p_value):
        assert 0.0 <= r.p_value <= 1.0


@settings(max_examples=300, deadline=None)
@given(samples, samples, st.sampled_from(["lower", "higher"]))
def test_swapping_sides_inverts_ratio_and_ci(b, c, better):
    ab = compute_comparison(b, c, better)
    ba = compute_comparison(c, b, better)
    assert ab.ratio * ba.ratio == pytest.approx(1.0, rel=1e-9)
    if math.isfinite(ab.ci_low):
        assert ab.ci_low * ba.ci_high == pytest.approx(1.0, rel=1e-9)
        assert ab.ci_high * ba.ci_low == pytest.approx(1.0, rel=1e-9)
    assert ab.p_value == pytest.approx(ba.p_value, nan_ok=True)
    # and the direction of "better" flips the orientation the same way
    other = compute_comparison(b, c, "higher" if better == "lower" else "lower")
    assert ab.ratio * other.ratio == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0.5, 2.0), st.floats(0.0, 0.3), st.floats(0.0, 0.3), st.floats(0.0, 1.0),
    st.integers(1, 10), st.integers(1, 10), st.floats(0.0, 0.2),
)
def test_verdict_flips_with_the_sides(ratio, down, up, p, nb, nc, noise):
    lo, hi = ratio * (1 - down), ratio * (1 + up)
    v = compute_verdict(ratio, lo, hi, p, nb, nc, noise=noise).verdict
    w = compute_verdict(1 / ratio, 1 / hi, 1 / lo, p, nc, nb, noise=noise).verdict
    swap = {VERDICT_BETTER: VERDICT_WORSE, VERDICT_WORSE: VERDICT_BETTER}
    assert w == swap.get(v, v)


@settings(max_examples=200, deadline=None)
@given(st.lists(positive, min_size=1, max_size=60), st.integers(1, 6))
def test_summary_median_lies_in_its_ci(values, n_units):
    units = np.arange(len(values)) % n_units
    s = compute_summary(values, units)
    assert s.ci_low <= s.median <= s.ci_high
    assert s.q1 <= s.median <= s.q3
    assert min(values) <= s.ci_low and s.ci_high <= max(values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.2, 5.0), min_size=1, max_size=30))
def test_geomean_in_ci_and_inverts(ratios):
    g = compute_geomean(ratios)
    h = compute_geomean([1 / r for r in ratios])
    assert g.ratio * h.ratio == pytest.approx(1.0)
    if math.isfinite(g.ci_low):
        assert g.ci_low <= g.ratio * (1 + 1e-12) and g.ratio <= g.ci_high * (1 + 1e-12)
        assert g.ci_low * h.ci_high == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.sampled_from(["holm", "bh"]))
def test_adjusted_pvalues_are_valid_and_keep_the_order(p, method):
    raw = np.array(p)
    adj = adjust_pvalues(raw, method)
    assert np.all(adj >= raw - 1e-15) and np.all(adj <= 1.0)
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)
