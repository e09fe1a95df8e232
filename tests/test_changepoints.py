"""The step fit of reporter.model.changepoints: where it puts steps, their sizes and intervals, its false rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reporter.model.changepoints import compute_steps, point_of_summary, pool_errors, se_of_interval, split_statistics


def test_one_clear_step_is_found_at_its_version_with_its_size_in_the_interval() -> None:
    y = np.log([1.0, 1.0, 1.0, 1.10, 1.10, 1.10])
    steps = compute_steps(y, [0.005] * 6, [8.0] * 6)
    assert [s.index for s in steps] == [3]
    (s,) = steps
    assert s.ci_low < math.log(1.10) < s.ci_high and s.ci_low > 0
    assert s.size == pytest.approx(math.log(1.10))
    assert s.p_value < 0.01


def test_two_steps_up_then_down() -> None:
    y = np.log([1.0, 1.0, 1.2, 1.2, 1.0, 1.0])
    steps = compute_steps(y, [0.005] * 6, [8.0] * 6)
    assert [s.index for s in steps] == [2, 4]
    assert steps[0].size > 0 > steps[1].size


def test_a_difference_within_the_points_errors_is_no_step() -> None:
    y = np.log([1.0, 1.01, 0.99, 1.0, 1.01, 1.0])
    assert compute_steps(y, [0.02] * 6, [8.0] * 6) == []


def test_a_noisy_point_weighs_less_than_a_precise_one() -> None:
    # The same jump at the last point: with that point precise it is a step, with it vague it is not.
    y = np.log([1.0, 1.0, 1.0, 1.0, 1.0, 1.15])
    assert [s.index for s in compute_steps(y, [0.01] * 6, [8.0] * 6)] == [5]
    assert compute_steps(y, [0.01] * 5 + [0.5], [8.0] * 6) == []


def test_flat_series_report_a_step_at_most_alpha_of_the_time() -> None:
    rng = np.random.default_rng(3)
    n, hits = 300, 0
    for i in range(n):
        se = rng.uniform(0.01, 0.05, 6)
        df = np.full(6, 2.0)
        # Estimated standard errors: each is a chi-square draw around the true one.
        est_se = se * np.sqrt(rng.chisquare(df) / df)
        hits += bool(compute_steps(rng.normal(0, se), est_se, df, seed=i, draws=1000))
    assert hits / n <= 0.08  # 5% level, binomial slack for 300 series


def test_the_same_input_gives_the_same_steps() -> None:
    y, s, d = np.log([1.0, 1.02, 1.05, 1.05]), [0.01] * 4, [4.0] * 4
    assert compute_steps(y, s, d) == compute_steps(y, s, d)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        compute_steps([0.0, 0.1], [0.01, 0.0], [2, 2])
    with pytest.raises(ValueError):
        compute_steps([0.0, 0.1], [0.01], [2, 2])
    assert compute_steps([0.0], [0.01], [2.0]) == []


def test_split_statistic_is_the_weighted_two_sample_chi_square() -> None:
    y, s = np.array([[0.0, 0.0, 1.0]]), np.array([[1.0, 1.0, 1.0]])
    q = split_statistics(y, s)[0]
    assert q[1] == pytest.approx(1.0 / (1 / 2 + 1))  # means 0 and 1, weights 2 and 1
    assert q[0] == pytest.approx(0.5**2 / (1 + 1 / 2))


def test_a_summary_row_becomes_a_point_whose_interval_is_the_summary_interval() -> None:
    point = point_of_summary(2.0, 1.8, 2.2222, n_processes=3, n_runs=1, runs_covered=False)
    assert point is not None
    log_est, se, df = point
    assert df == 2 and log_est == pytest.approx(math.log(2.0))
    assert se == pytest.approx(se_of_interval(math.log(1.8), math.log(2.2222), 2))
    assert point_of_summary(2.0, 1.8, 2.2, n_processes=9, n_runs=3, runs_covered=True)[2] == 2
    assert point_of_summary(2.0, float("nan"), float("nan"), n_processes=1, n_runs=1, runs_covered=False) is None


def test_a_spread_pooled_over_the_series_finds_a_step_its_points_alone_cannot() -> None:
    # Six versions of three runs each (df 2 a point): a 5% step after the third, points 1% apart.
    rng = np.random.default_rng(7)
    found = {False: 0, True: 0}
    flat = {False: 0, True: 0}
    n = 200
    for i in range(n):
        sd = 0.02  # run-to-run SD: a point's standard error is sd / sqrt(3)
        df = np.full(6, 2.0)
        est_se = sd / np.sqrt(3) * np.sqrt(rng.chisquare(df) / df)
        y = rng.normal(0, sd / np.sqrt(3), 6) + np.where(np.arange(6) >= 3, math.log(1.05), 0.0)
        y0 = rng.normal(0, sd / np.sqrt(3), 6)
        for pooled in (False, True):
            found[pooled] += any(s.index == 3 for s in compute_steps(y, est_se, df, seed=i, draws=1000, pooled=pooled))
            flat[pooled] += bool(compute_steps(y0, est_se, df, seed=i, draws=1000, pooled=pooled))
    assert found[True] > 1.3 * found[False] and found[True] / n > 0.7
    assert flat[True] / n <= 0.09  # the 5% level holds with the pooled spread (binomial slack)


def test_pooled_errors_are_the_analysis_of_variance_error_mean_square() -> None:
    se = np.array([0.01, 0.02, 0.03]) / np.sqrt(3)
    pooled, dof = pool_errors(se, np.array([2.0, 2.0, 2.0]))
    assert dof == 6 and np.allclose(pooled, np.sqrt((0.01**2 + 0.02**2 + 0.03**2) / 3 / 3))
