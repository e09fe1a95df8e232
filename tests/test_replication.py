"""The collector's CI of a median agrees with the reporter's (adaptive replication's yardstick)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t

from collector.replication import compute_median_ci, compute_rel_half_width, t_975
from reporter.model.stats import compute_summary


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 29, 30, 31, 60, 200])
def test_t_quantiles_match_scipy(df):
    assert t_975(df) == pytest.approx(t.ppf(0.975, df), rel=2e-5)


@pytest.mark.parametrize("seed", range(20))
def test_the_interval_is_the_reporters(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 8))
    per = int(rng.integers(3, 40))
    shifts = rng.normal(0, 0.05, k)
    values = np.concatenate([np.exp(rng.normal(s, 0.02, per)) * 1e-3 for s in shifts])
    units = np.repeat(np.arange(k), per)
    ours = compute_median_ci(values, units)
    theirs = compute_summary(values, units)
    assert ours == pytest.approx((theirs.median, theirs.ci_low, theirs.ci_high), rel=1e-4)


def test_more_spread_between_processes_is_wider():
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(3), 20)
    tight = 1 + rng.normal(0, 0.01, 60)
    spread = tight * np.repeat([0.9, 1.0, 1.1], 20)
    assert compute_rel_half_width(spread, units) > 3 * compute_rel_half_width(tight, units)
