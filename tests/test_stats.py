"""reporter.model.stats on fixed inputs: agreement with scipy/numpy, edge cases, and Hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from runformat.vocabulary import Note, NoteCode, Verdict
from reporter.present.notes import note_text
from reporter.present.render import Messages
from reporter.model.stats import (
    MAX_PROCESSES,
    MAX_RUNS,
    MIN_UNITS,
    _trigamma_inverse,
    adjust_pvalues,
    compute_display_level,
    compute_comparison,
    compute_grouped_summaries,
    compute_hierarchical_tests,
    compute_location_cis,
    compute_mde,
    compute_oneway,
    compute_processes_needed,
    compute_runs_needed,
    compute_summary,
    compute_verdict,
    squeeze_variances,
)
from scipy.special import polygamma

# Fixed synthetic inputs (seeded), not measurements.
RNG = np.random.default_rng(20261202)
BASE = RNG.lognormal(np.log(1e-3), 0.04, 7)
CAND = RNG.lognormal(np.log(0.9e-3), 0.06, 5)


# ------------------------------------------------------------------ against scipy


def test_one_run_a_side_is_the_pooled_t_test_on_logs():
    r = compute_comparison(BASE, CAND, "lower")
    ref = sst.ttest_ind(np.log(CAND), np.log(BASE), equal_var=True)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert r.df == pytest.approx(ref.df, rel=1e-12)
    ci = ref.confidence_interval(0.95)  # of mean(log cand) - mean(log base)
    # lower is better: ratio = baseline / candidate = exp(-(log c - log b))
    assert r.ratio == pytest.approx(math.exp(-(np.log(CAND).mean() - np.log(BASE).mean())), rel=1e-12)
    assert r.ci_low == pytest.approx(math.exp(-ci.high), rel=1e-10)
    assert r.ci_high == pytest.approx(math.exp(-ci.low), rel=1e-10)
    up = compute_comparison(BASE, CAND, "higher")
    assert up.ratio * r.ratio == pytest.approx(1.0) and up.p_value == pytest.approx(r.p_value)


def test_runs_with_a_run_effect_give_the_t_test_on_run_means():
    # Two runs a side, three processes each, runs far apart: the interval is the one of
    # the run means (4 run means, 2 df), not of the 12 processes.
    base = np.exp(np.array([0.0, 0.01, -0.01, 0.30, 0.31, 0.29]))
    cand = np.exp(np.array([0.10, 0.11, 0.09, -0.20, -0.19, -0.21]))
    runs = [0, 0, 0, 1, 1, 1]
    r = compute_comparison(base, cand, "higher", baseline_runs=runs, candidate_runs=runs)
    mb = np.log(base).reshape(2, 3).mean(axis=1)
    mc = np.log(cand).reshape(2, 3).mean(axis=1)
    ref = sst.ttest_ind(mc, mb, equal_var=True)
    assert r.df == pytest.approx(2.0, rel=1e-9)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert math.log(r.ci_high) == pytest.approx(ref.confidence_interval().high, rel=1e-9)
    flat = compute_comparison(base, cand, "higher")  # ignoring runs: far too narrow
    assert math.log(flat.ci_high / flat.ci_low) < 0.6 * math.log(r.ci_high / r.ci_low)


def test_runs_without_a_run_effect_keep_the_process_degrees_of_freedom():
    rng = np.random.default_rng(3)
    base, cand = rng.lognormal(0, 0.05, 8), rng.lognormal(0, 0.05, 8)
    runs = [0] * 4 + [1] * 4
    ow = compute_oneway(np.log(np.r_[base, cand]), np.zeros(16, int), np.r_[np.zeros(8, int), np.ones(8, int)],
                        np.r_[runs, runs], n_rows=1)
    t = compute_hierarchical_tests(ow, higher_is_better=[True], paired=False)
    var_r = ow.ms_between[0] - ow.h_between[0] * ow.ms_within[0]
    if var_r <= 0:  # the runs spread no more than their processes imply: processes are the units
        assert t.df[0] == pytest.approx(ow.df_within[0]) and t.run_var[0] == 0
    else:
        assert ow.df_between[0] <= t.df[0] <= ow.df_within[0] + ow.df_between[0]


def test_oneway_mean_squares_match_a_direct_computation():
    y = np.array([1.0, 1.2, 0.9, 2.0, 2.2, 3.0, 3.1, 2.9, 3.3])
    side = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1])
    run = np.array([0, 0, 0, 1, 1, 0, 0, 1, 1])
    ow = compute_oneway(y, np.zeros(9, int), side, run, n_rows=1)
    groups = [y[(side == s) & (run == r)] for s in (0, 1) for r in (0, 1)]
    ssw = sum(((g - g.mean()) ** 2).sum() for g in groups)
    assert ow.ms_within[0] == pytest.approx(ssw / (9 - 4)) and ow.df_within[0] == 5
    means = [g.mean() for g in groups]
    m0, m1 = np.mean(means[:2]), np.mean(means[2:])
    assert ow.mean[0].tolist() == pytest.approx([m0, m1])
    ssb = (means[0] - m0) ** 2 + (means[1] - m0) ** 2 + (means[2] - m1) ** 2 + (means[3] - m1) ** 2
    assert ow.ms_between[0] == pytest.approx(ssb / 2) and ow.df_between[0] == 2
    assert ow.h[0].tolist() == pytest.approx([(1 / 3 + 1 / 2) / 2, 0.5])


def test_paired_one_run_is_the_paired_t_test():
    rng = np.random.default_rng(5)
    b = rng.lognormal(0, 0.1, 6)
    c = b * rng.lognormal(0.05, 0.02, 6)  # strongly correlated rounds
    d = np.log(c) - np.log(b)
    ow = compute_oneway(d, np.zeros(6, int), np.zeros(6, int), np.zeros(6, int), n_rows=1, n_sides=1)
    t = compute_hierarchical_tests(ow, higher_is_better=[True], paired=True)
    ref = sst.ttest_rel(np.log(c), np.log(b))
    assert t.p_value[0] == pytest.approx(ref.pvalue, rel=1e-10)
    assert t.ci_low[0] == pytest.approx(ref.confidence_interval().low, rel=1e-10)
    unpaired = compute_comparison(b, c, "higher")
    assert t.ci_high[0] - t.ci_low[0] < 0.5 * math.log(unpaired.ci_high / unpaired.ci_low)


def test_squeeze_recovers_the_prior_and_shrinks_towards_it():
    rng = np.random.default_rng(9)
    true = 0.01 * 10 / rng.chisquare(10, 4000)  # scaled inverse chi-square prior, d0 = 10
    s2 = true * rng.chisquare(4, 4000) / 4
    q = squeeze_variances(s2, np.full(4000, 4.0))
    assert q.df_prior == pytest.approx(10, rel=0.2)
    assert np.median(q.s2_prior) == pytest.approx(0.01, rel=0.1)
    np.testing.assert_allclose(q.s2, (q.df_prior * q.s2_prior + 4 * s2) / (q.df_prior + 4))
    assert np.all(q.df == pytest.approx(4 + q.df_prior))
    # Identical true variances: the prior is (nearly) all there is.
    same = squeeze_variances(0.02 * rng.chisquare(4, 500) / 4, np.full(500, 4.0))
    assert same.df_prior > 20 and np.median(same.s2) == pytest.approx(0.02, rel=0.1)


def test_squeeze_follows_a_trend_in_the_covariate():
    rng = np.random.default_rng(2)
    x = rng.uniform(-12, -4, 600)  # log noise levels spanning 3.5 decades
    s2 = np.exp(x) * rng.chisquare(4, 600) / 4
    trended = squeeze_variances(s2, np.full(600, 4.0), x)
    flat = squeeze_variances(s2, np.full(600, 4.0))
    assert trended.df_prior > 30 > flat.df_prior  # with the trend the rows agree with their prior
    np.testing.assert_allclose(np.log(trended.s2_prior), x, atol=0.25)


def test_squeeze_leaves_too_few_rows_alone():
    q = squeeze_variances([0.1, 0.2], [3, 3])
    assert q.df_prior == 0 and q.s2.tolist() == [0.1, 0.2]


def test_trigamma_inverse():
    for x in (1e-3, 0.1, 1.0, 10.0, 1e3):
        assert float(polygamma(1, _trigamma_inverse(x))) == pytest.approx(x, rel=1e-6)


def test_location_ci_is_the_t_interval_of_the_units_in_one_run():
    y = np.log(BASE)
    loc = compute_location_cis(y, np.zeros(y.size, int), np.zeros(y.size, int), n_groups=1)
    ref = sst.t.interval(0.95, y.size - 1, loc=y.mean(), scale=sst.sem(y))
    assert (loc.ci_low[0], loc.ci_high[0]) == (pytest.approx(ref[0]), pytest.approx(ref[1]))
    assert not loc.runs_covered[0]
    one = compute_location_cis([0.3], [0], [0], n_groups=1)
    assert math.isnan(one.ci_low[0]) and one.estimate[0] == pytest.approx(0.3)


def test_mde_and_processes_needed_agree():
    se, df = 0.02, 10.0
    mde = compute_mde([se], [df], noise=0.01)[0]
    q = sst.t.ppf(0.975, df) + sst.t.ppf(0.80, df)
    assert mde == pytest.approx(math.expm1(math.log1p(0.01) + q * se))
    assert compute_mde([0.0], [df], noise=0.01)[0] == pytest.approx(0.01)
    unit, run = 0.01**2, 0.0
    n = compute_processes_needed([unit], [run], [df], runs=[1], paired=False, noise=0.01)[0]
    at = compute_mde([math.sqrt(2 * unit / n)], [max(df, 2 * (n - 1))], noise=0.01)[0]
    before = compute_mde([math.sqrt(2 * unit / (n - 1))], [max(df, 2 * (n - 2))], noise=0.01)[0]
    assert at <= 0.02 < before
    # A run component beyond the target: more processes cannot get there.
    assert math.isnan(compute_processes_needed([unit], [0.01], [df], runs=[1], paired=False, noise=0.01)[0])


def test_planning_is_bounded_and_uses_the_df_of_the_planned_design():
    # Two processes a side today (df 2): planned at today's df the advice ran to thousands.
    unit = 0.01**2
    n = compute_processes_needed([unit], [0.0], [2.0], runs=[1], paired=False, noise=0.01)[0]
    assert MIN_UNITS <= n <= MAX_PROCESSES
    at = compute_mde([math.sqrt(2 * unit / n)], [2 * (n - 1)], noise=0.01)[0]
    assert at <= 0.02
    # Beyond the bound: said as "cannot", never as a number above it.
    assert math.isnan(compute_processes_needed([0.2**2], [0.0], [2.0], runs=[1], paired=False, noise=0.01)[0])
    r = compute_runs_needed([unit], [0.005**2], [2.0], processes_per_run=[3], paired=False, noise=0.01)
    assert 2 <= r[0] <= MAX_RUNS
    assert math.isnan(compute_runs_needed([unit], [0.2**2], [2.0], processes_per_run=[3], paired=False, noise=0.01)[0])


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


def test_identical_values_do_not_crash_or_claim_significance():
    s = compute_summary([2.5] * 20, [0] * 10 + [1] * 10)
    assert (s.median, s.ci_low, s.ci_high, s.cv, s.iqr) == (2.5, 2.5, 2.5, 0.0, 0.0)
    differ = compute_comparison([2.0] * 3, [3.0] * 3, "lower")
    assert math.isnan(differ.p_value) and math.isnan(differ.ci_low)  # no variance: nothing to test against
    assert differ.ratio == pytest.approx(2 / 3)


def test_one_replicate_a_side_gives_a_ratio_without_ci():
    r = compute_comparison([2.0], [1.0, 1.1, 0.9])
    assert r.ratio == pytest.approx(2 / np.exp(np.log([1.0, 1.1, 0.9]).mean()))
    assert math.isnan(r.ci_low) and math.isnan(r.p_value)


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


# -------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    "ratio, lo, hi, p, expected",
    [
        (1.20, 1.15, 1.25, 0.001, Verdict.BETTER),
        (0.80, 0.75, 0.85, 0.001, Verdict.WORSE),
        (1.005, 1.002, 1.008, 0.001, Verdict.EQUIVALENT),  # significant but inside the ±1% band and ±2%
        (1.02, 1.005, 1.035, 0.01, Verdict.INCONCLUSIVE),  # significant, CI reaches into the band and beyond 2%
        (1.20, 1.15, 1.25, 0.20, Verdict.INCONCLUSIVE),  # corrected test not significant
        (1.00, 0.70, 1.40, 0.90, Verdict.INCONCLUSIVE),  # could not have seen a 40% change
        (1.00, 0.985, 1.015, 0.90, Verdict.EQUIVALENT),  # a change beyond ±2% ruled out
        (1.00, 0.975, 1.015, 0.90, Verdict.INCONCLUSIVE),  # 2.5% slower not ruled out
        (float("nan"), float("nan"), float("nan"), float("nan"), Verdict.INCONCLUSIVE),
    ],
)
def test_verdict_rules(ratio, lo, hi, p, expected):
    assert compute_verdict(ratio, lo, hi, p) == expected


def test_equivalence_band_is_symmetric_on_log_scale():
    e = 0.02
    assert compute_verdict(1.0, 1 / 1.02, 1.02, 0.5, equivalence=e) is Verdict.EQUIVALENT
    assert compute_verdict(1.0, 0.98, 1.02, 0.5, equivalence=e) is Verdict.INCONCLUSIVE  # 0.98 < 1/1.02
    assert compute_verdict(1.0, 0.95, 1.05, 0.5, equivalence=0.05) is Verdict.INCONCLUSIVE
    assert compute_verdict(1.0, 0.96, 1.04, 0.5, equivalence=0.05) is Verdict.EQUIVALENT


def test_display_level_makes_every_interval_agree_with_the_corrected_verdict():
    rng = np.random.default_rng(7)
    for correction in ("bh", "holm"):
        for _ in range(200):
            m = int(rng.integers(1, 60))
            z = rng.normal(0, 1, m) + np.where(rng.random(m) < 0.3, rng.normal(0, 4, m), 0)
            df = rng.uniform(3, 40, m)
            p = 2 * sst.t.sf(np.abs(z), df)
            q = adjust_pvalues(p, correction)
            level = compute_display_level(p, q, correction=correction)
            half = sst.t.ppf(1 - (1 - level) / 2, df)
            excludes = np.abs(z) > half  # the interval z ± t·1 leaves 0 out
            np.testing.assert_array_equal(excludes, q < 0.05)
            assert (level >= 0.95).all()
            # rows whose 95% interval already agrees keep it
            plain = (np.abs(z) > sst.t.ppf(0.975, df)) == (q < 0.05)
            assert (level[plain & (q >= 0.05)] == 0.95).all()


def test_display_level_of_selected_rows_is_benjamini_yekutieli():
    p = np.array([0.0001, 0.004, 0.035, 0.2, 0.6])
    q = adjust_pvalues(p, "bh")
    level = compute_display_level(p, q)
    r = int((q < 0.05).sum())
    assert r == 2 and level[0] == level[1] == pytest.approx(1 - r * 0.05 / p.size)
    assert level[2] == pytest.approx(1 - r * 0.05 / p.size)  # its 95% CI excludes 1, its test does not call it
    assert level[3] == level[4] == 0.95
    assert np.isnan(compute_display_level([np.nan], [np.nan])).all()


# ------------------------------------------------------------------------ notes


def test_every_note_code_has_an_english_and_a_chinese_message_with_its_parameters():
    import re

    for lang in ("en", "zh"):
        own = Messages(lang)._own.get("notes", {})
        for code in NoteCode:
            assert code.value in own, (lang, code)
    en, zh = Messages("en")._own["notes"], Messages("zh")._own["notes"]
    for code in NoteCode:
        fields = set(re.findall(r"{(\w+)}", en[code.value]))
        assert fields == set(re.findall(r"{(\w+)}", zh[code.value])), code


def test_note_text_fills_the_parameters():
    note = Note.of(NoteCode.TOO_FEW_UNITS, n_baseline=1, n_candidate=3, needed=4)
    assert note_text(note, "en") == "not enough replicates: 1 vs 3 process(es); at least 4 processes a side are needed"
    assert "4" in note_text(note, "zh") and "{" not in note_text(note, "zh")
    assert "±1%" in note_text(Note.of(NoteCode.WITHIN_NOISE, noise=0.01), "en")


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
@given(st.floats(0.5, 2.0), st.floats(0.0, 0.3), st.floats(0.0, 0.3), st.floats(0.0, 1.0), st.floats(0.0, 0.2))
def test_verdict_flips_with_the_sides(ratio, down, up, p, noise):
    lo, hi = ratio * (1 - down), ratio * (1 + up)
    v = compute_verdict(ratio, lo, hi, p, noise=noise)
    w = compute_verdict(1 / ratio, 1 / hi, 1 / lo, p, noise=noise)
    swap = {Verdict.BETTER: Verdict.WORSE, Verdict.WORSE: Verdict.BETTER}
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
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.sampled_from(["holm", "bh"]))
def test_adjusted_pvalues_are_valid_and_keep_the_order(p, method):
    raw = np.array(p)
    adj = adjust_pvalues(raw, method)
    assert np.all(adj >= raw - 1e-15) and np.all(adj <= 1.0)
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)


def test_sort_within_groups_is_lexsort() -> None:
    from reporter.model.stats import sort_within_groups

    rng = np.random.default_rng(17)
    for trial in range(60):
        n = int(rng.integers(0, 2000))
        g = rng.integers(0, int(rng.integers(1, 300)), n)
        if trial % 3 == 0:
            g = np.sort(g)  # stored grouped, as an archive's samples are
        v = rng.choice([1.0, 2.0, np.nan, 0.5, -0.0, 0.0, 3.3], n) if trial % 2 else rng.normal(size=n)
        assert np.array_equal(sort_within_groups(g, v), np.lexsort((v, g))), trial
    g = np.repeat(np.arange(500), rng.integers(1, 200, 500))  # more distinct sizes than the row sorts take
    v = rng.normal(size=g.size)
    assert np.array_equal(sort_within_groups(g, v), np.lexsort((v, g)))


def test_sort_values_within_groups_are_lexsorts_values() -> None:
    from reporter.model.stats import sort_values_within_groups

    rng = np.random.default_rng(23)
    cases = []
    for trial in range(60):
        n = int(rng.integers(0, 2000))
        g = rng.integers(0, int(rng.integers(1, 300)), n)
        if trial % 3 == 0:
            g = np.sort(g)
        v = rng.choice([1.0, 2.0, np.nan, 0.5, 0.0, 3.3], n) if trial % 2 else rng.normal(size=n)
        cases.append((g, v))
    cases.append((np.repeat(np.arange(4000), 10), rng.normal(size=40000)))  # one size, stored grouped
    cases.append((np.repeat(np.arange(4000), 10)[rng.permutation(40000)], rng.normal(size=40000)))
    g = np.repeat(np.arange(500), rng.integers(1, 200, 500))  # the lexsort fallback
    cases.append((g, rng.normal(size=g.size)))
    for i, (g, v) in enumerate(cases):
        order, xs = sort_values_within_groups(g, v)
        assert np.array_equal(xs, v[np.lexsort((v, g))], equal_nan=True), i
        assert np.array_equal(g if order is None else g[order], np.sort(g, kind="stable")), i
