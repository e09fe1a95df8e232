"""The location view of the model: where one label (or one run) sits, per case and metric.

One function, ``locate``, turns a label's units (worker processes, each reduced to the
median of its samples by ``reporter.model.compare._units``) into the estimate and 95% CI
that every page shows for that label: the run pages (each run as a label of its own),
the trend pages and their change points, and the two sides of every comparison. So one
label and case show one interval wherever they appear.

The model is the comparison's, on one side: the log process medians of a (case, metric)
sit in runs; ``reporter.model.stats.moderated_oneway`` removes each process's effect
shared by all the label's cases and squeezes the case-specific within-run and between-run
mean squares across the label's cases (Smyth 2004, with the within-process sampling
variance as the trend covariate); ``compute_hierarchical_tests`` in its one-sample form
gives the interval, with the run-level component whenever the label has two or more
runs (``runs_covered``). Only the label's own cases are pooled: a label's interval does
not depend on which other labels are summarised with it, nor on the comparison it
appears in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from runformat.schema import BETTER_HIGHER, BETTER_LOWER
from reporter.model.stats import compute_location_cis

LOCATION_COLUMNS = ("label", "case_id", "metric", "estimate", "ci_low", "ci_high", "df", "runs_covered")


def covariate(spread: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Per row: the log of the mean within-process sampling variance of a unit's log median."""
    ok = np.isfinite(spread)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(rows[ok], weights=spread[ok], minlength=n) / np.bincount(rows[ok], minlength=n)
        x = np.log(mean)
    return np.where(np.isfinite(x), x, np.nan)


def codes(*columns: pd.Series | np.ndarray) -> np.ndarray:
    """One integer code per distinct combination of the columns' values."""
    if not len(columns[0]):
        return np.zeros(0, np.int64)
    return pd.MultiIndex.from_arrays([np.asarray(c) for c in columns]).factorize()[0].astype(np.int64)


def locate_groups(u: pd.DataFrame, group: np.ndarray, n_groups: int, *, confidence: float = 0.95) -> pd.DataFrame:
    """The location of every group of units (one label's case and metric), as log values.

    ``u``: units (columns label, run_id, process, better, median, vmin, vmax, spread);
    ``group``: each unit's group, ``0..n_groups-1``, every group within one label.
    Returns per group ``estimate``, ``ci_low``, ``ci_high`` (log scale; NaN where a value
    is not positive or there are too few processes), ``df`` and ``runs_covered``.

    The groups moderated together are a label's ranked metrics (better lower or higher)
    whose processes vary and are all positive; any other group keeps its own
    unmoderated interval.
    """
    med = u["median"].to_numpy(np.float64)
    positive = np.ones(n_groups, bool)
    np.logical_and.at(positive, group, med > 0)
    use = positive[group]
    first = np.full(n_groups, -1, np.int64)
    first[group[::-1]] = np.arange(group.size)[::-1]
    has = first >= 0
    better = np.full(n_groups, "", object)
    better[has] = u["better"].to_numpy(object)[first[has]]
    vmin = np.full(n_groups, np.inf)
    vmax = np.full(n_groups, -np.inf)
    np.minimum.at(vmin, group, u["vmin"].to_numpy(np.float64))
    np.maximum.at(vmax, group, u["vmax"].to_numpy(np.float64))
    ranked = (better == BETTER_LOWER) | (better == BETTER_HIGHER)
    moderate = positive & ranked & (vmax > vmin)
    blocks = np.zeros(n_groups, np.int64)
    blocks[has] = pd.factorize(u["label"].to_numpy(object)[first[has]])[0]
    sign = np.where(better == BETTER_HIGHER, 1.0, -1.0)
    loc = compute_location_cis(
        np.log(np.where(use, med, 1.0))[use], group[use], pd.factorize(u["run_id"])[0][use], n_groups=n_groups,
        confidence=confidence, units=codes(u["run_id"], u["process"])[use], sign=sign,
        covariate=covariate(u["spread"].to_numpy(np.float64), group, n_groups), blocks=blocks, moderate=moderate,
    )
    return pd.DataFrame({"estimate": loc.estimate, "ci_low": loc.ci_low, "ci_high": loc.ci_high, "df": loc.df,
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
            "df": loc["df"].to_numpy(), "runs_covered": loc["runs_covered"].to_numpy(),
        })
    return out
