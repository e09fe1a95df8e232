"""The location view of the model: where one label (or one run) sits, per case and metric.

One function, ``locate``, turns a label's units (worker processes, each reduced to the
median of its samples by ``reporter.model.compare._units``) into the estimate and 95% CI
that every page shows for that label: the run pages (each run as a label of its own),
the trend pages and their change points, and the two sides of every comparison. So one
label and case show one interval wherever they appear, and a label's interval does not
depend on the comparison it appears in.

The model: the log process medians of a (case, metric) sit in runs;
``reporter.model.stats.compute_location_cis`` gives the one-sample hierarchical interval,
with the run-level component whenever the label has two or more runs (``runs_covered``).
Each case keeps its own variances. Moderating them across the label's cases (as the
comparison's rows are) was measured and not taken: with the noise of the recorded CPU
series, ``benchmarks/changepoints.py`` then reported a step in 8.7% and 8.3% of flat
series (7.7% and 6.7% moderating the within-run variance alone; 5.3% and 5.0% with each
case's own), since a single prior pulls the noisiest cases' variances down.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reporter.model.stats import compute_location_cis

LOCATION_COLUMNS = ("label", "case_id", "metric", "estimate", "ci_low", "ci_high", "runs_covered")


def locate_groups(u: pd.DataFrame, group: np.ndarray, n_groups: int, *, confidence: float = 0.95) -> pd.DataFrame:
    """The location of every group of units (one label's case and metric), as log values.

    ``u``: units (columns run_id, median); ``group``: each unit's group, ``0..n_groups-1``.
    Returns per group ``estimate``, ``ci_low``, ``ci_high`` (log scale; NaN where a
    process median is not positive, the CI NaN with too few processes), ``runs_covered``
    and ``positive`` (every process median of the group above zero).
    """
    med = u["median"].to_numpy(np.float64)
    positive = np.ones(n_groups, bool)
    np.logical_and.at(positive, group, med > 0)
    use = positive[group]
    loc = compute_location_cis(np.log(np.where(use, med, 1.0))[use], group[use], pd.factorize(u["run_id"])[0][use],
                               n_groups=n_groups, confidence=confidence)
    return pd.DataFrame({"estimate": loc.estimate, "ci_low": loc.ci_low, "ci_high": loc.ci_high,
                         "runs_covered": loc.runs_covered, "positive": positive})


def locate(u: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """``locate_groups`` of every (label, case, metric) of the units ``u``, on the natural
    scale: columns ``LOCATION_COLUMNS``, sorted by label, case and metric."""
    if u.empty:
        return pd.DataFrame({c: [] for c in LOCATION_COLUMNS})
    keys = pd.MultiIndex.from_arrays([u[k].astype(str).to_numpy() for k in ("label", "case_id", "metric")])
    group, index = keys.factorize(sort=True)
    loc = locate_groups(u, group.astype(np.int64), len(index), confidence=confidence)
    with np.errstate(over="ignore"):
        out = pd.DataFrame({
            "label": index.get_level_values(0), "case_id": index.get_level_values(1),
            "metric": index.get_level_values(2),
            "estimate": np.where(loc["positive"], np.exp(loc["estimate"]), np.nan),
            "ci_low": np.exp(loc["ci_low"]), "ci_high": np.exp(loc["ci_high"]),
            "runs_covered": loc["runs_covered"].to_numpy(),
        })
    return out
