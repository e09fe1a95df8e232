"""Adaptive replication's yardstick: the reporter's CI of a median, without scipy or pandas.

The collector runs inside the stack under test, which has numpy (torch needs it) but
not necessarily scipy, so the one interval it needs is computed here with numpy and a
table of Student quantiles. It is the same interval as ``reporter.stats.
compute_grouped_summaries`` (Woodruff's interval with each worker process a cluster);
``tests/test_replication.py`` checks that the two agree, so the collector and the
reporter agree on which cases are "wide".
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

Z_975 = 1.959963984540054
# Student's t quantile at 0.975 for 1..30 degrees of freedom.
T_975 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252, 2.306004135,
    2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546, 2.119905299,
    2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
    2.059538553, 2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
)


def t_975(df: int) -> float:
    """Student's t quantile at 0.975 (exact table to 30 degrees of freedom, Cornish-Fisher beyond)."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def compute_median_ci(values: Sequence[float], units: Sequence[int]) -> tuple[float, float, float]:
    """(median, low, high): the 95% CI of the median with each unit (process) a cluster.

    See ``reporter.stats.compute_grouped_summaries`` for the method and its references.
    """
    x = np.asarray(values, dtype=np.float64)
    u = np.asarray(units)
    if x.size == 0:
        raise ValueError("no values")
    xs = np.sort(x)
    n = x.size

    def quantile(q: float) -> float:
        pos = (n - 1) * min(1.0, max(0.0, q))
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        return float(xs[lo] + (pos - lo) * (xs[hi] - xs[lo]))

    median = quantile(0.5)
    _, inv = np.unique(u, return_inverse=True)
    k = int(inv.max()) + 1
    mid = np.where(x < median, 1.0, np.where(x == median, 0.5, 0.0))
    a_u = np.bincount(inv, weights=mid, minlength=k)
    n_u = np.bincount(inv, minlength=k).astype(np.float64)
    p = a_u.sum() / n
    srs = p * (1 - p) / n
    if k >= 2:
        between = float(((a_u - p * n_u) ** 2).sum()) * k / (k - 1) / n**2
        half = t_975(k - 1) * math.sqrt(max(between, srs))
    else:
        half = Z_975 * math.sqrt(srs)
    return median, quantile(0.5 - half), quantile(0.5 + half)


def compute_rel_half_width(values: Sequence[float], units: Sequence[int]) -> float:
    """Half the CI's width over the median (``inf`` where the median is not positive)."""
    median, low, high = compute_median_ci(values, units)
    return (high - low) / 2 / median if median > 0 else math.inf
