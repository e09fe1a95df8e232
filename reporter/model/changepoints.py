"""Change points of a series of versions: where a case's location steps up or down.

The input is one point per version, in release order: the log of the label's location
estimate and its standard error with its degrees of freedom, as the label's summary
(``compute_summaries``: estimate and 95% CI) gives them. Nothing here reduces processes or
samples again.

The method is a weighted step fit found by binary segmentation, as asv's ``step_detect``
fits piecewise-constant steps to a benchmark's history (Virtanen, asv
``asv/step_detect.py``; the segmentation of Scott & Knott 1974), with two differences
that the per-point intervals make possible:

- each point is weighted by its inverse variance, so a noisy point moves a segment's
  level less than a precise one, and the segment's level is the inverse-variance
  weighted mean (the fixed-effect estimate of a common location);
- a split is kept only when it is significant: the statistic of the best single split of a
  segment, ``max_k (m_left - m_right)^2 / (1/W_left + 1/W_right)`` (the likelihood-ratio
  statistic of one change in mean with known variances, Hawkins 1977), is referred to its
  distribution under "no step" by a parametric bootstrap that also redraws each standard
  error from its chi-square distribution, so that a point whose interval rests on two
  degrees of freedom cannot produce a step by being precise by luck. asv chooses the
  number of steps by a penalty on the fit instead; E-divisive means (Matteson & James
  2014, as MongoDB's CI uses it) and PELT (Killick et al. 2012) take bare values, not
  values with their own errors. ``benchmarks/changepoints.py`` measures this method and a
  penalised (BIC) optimal partition on simulated series whose noise comes from the
  recorded CPU runs.

Each kept split becomes a ``Step`` between the final segments on either side of it: the
difference of their weighted means, its standard error and Welch–Satterthwaite degrees
of freedom, and a Student t interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import stdtrit

# Bootstrap draws per tested segment: the p-value's Monte Carlo error near 0.05 is about
# 0.003 with this many.
DRAWS = 4000
ALPHA = 0.05
# The level of each split's test where the spread is pooled over the series (``pooled``): on
# simulated series with the noise of the recorded CPU runs, at 0.05 the share of flat series
# given a step was 5.3-6.3% (the points' intervals rest on moderated variances, not exactly on
# their df); at 0.04, 4.2-5.1% (``benchmarks/changepoints.py``, 1,000 series a profile).
POOLED_ALPHA = 0.04
# The degrees of freedom of a point's standard error are capped: above it the chi-square
# redraw is as good as none.
_DF_CAP = 1000.0


@dataclass(frozen=True)
class Step:
    """One detected change of level, between point ``index - 1`` and point ``index``.

    ``size`` is the log of (level after / level before), the levels being the weighted
    means of the segments on either side; ``ci_low``/``ci_high`` bound it (log scale) at
    the requested confidence; ``p_value`` is the bootstrap p-value of the split when it was
    found (the best split of its segment).
    """

    index: int
    size: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_value: float


def compute_steps(
    log_estimates: Sequence[float],
    se: Sequence[float],
    df: Sequence[float],
    *,
    alpha: float = ALPHA,
    confidence: float = 0.95,
    draws: int = DRAWS,
    seed: int = 0,
    pooled: bool = False,
) -> list[Step]:
    """The steps of one series, by weighted binary segmentation with a bootstrap test.

    Args:
        log_estimates: the log location of each point, in release order.
        se: the standard error of each log location (finite and positive).
        df: the degrees of freedom of each standard error (``inf`` for a known one).
        alpha: the level of each split's test: on a series with no step, a step is
            reported with probability at most about ``alpha``.
        confidence: the level of each step's interval.
        draws: bootstrap draws per tested segment.
        seed: the seed of the bootstrap, so that a page built twice says the same.
        pooled: the points are replicated alike (each standard error is ``sd / sqrt(df + 1)``
            of one spread, as a label's runs give it) and their spread is one: the spread is
            pooled over the whole series, as Scott & Knott test every split against the
            analysis of variance's pooled error. Each point then has the pooled standard
            error at ``sum(df)`` degrees of freedom, and the bootstrap redraws that one spread
            for all points at once.

    Returns:
        The steps, ordered by position. Empty for fewer than two points.

    Raises:
        ValueError: arrays of different lengths, or a standard error that is not finite
            and positive.
    """
    y = np.asarray(log_estimates, dtype=np.float64)
    s = np.asarray(se, dtype=np.float64)
    d = np.minimum(np.asarray(df, dtype=np.float64), _DF_CAP)
    if not (y.shape == s.shape == d.shape) or y.ndim != 1:
        raise ValueError("log_estimates, se and df must be 1-d arrays of one length")
    if not (np.all(np.isfinite(s)) and np.all(s > 0) and np.all(np.isfinite(y)) and np.all(d > 0)):
        raise ValueError("every point needs a finite estimate and a finite, positive standard error and df")
    if y.size < 2:
        return []
    common = None
    if pooled:
        s, common = pool_errors(s, d)
        d = np.full_like(d, min(common, _DF_CAP))
    rng = np.random.default_rng(seed)
    cuts: list[tuple[int, float]] = []
    todo = [(0, y.size)]
    while todo:
        lo, hi = todo.pop()
        if hi - lo < 2:
            continue
        k, p = _best_split(y[lo:hi], s[lo:hi], d[lo:hi], draws, rng, common=common is not None, alpha=alpha)
        if p <= alpha:
            cuts.append((lo + k, p))
            todo += [(lo, lo + k), (lo + k, hi)]
    cuts.sort()
    bounds = [0] + [c for c, _ in cuts] + [y.size]
    steps = []
    for i, (cut, p) in enumerate(cuts):
        left, right = slice(bounds[i], cut), slice(cut, bounds[i + 2])
        ml, vl, dl = _weighted_mean(y[left], s[left], d[left])
        mr, vr, dr = _weighted_mean(y[right], s[right], d[right])
        var = vl + vr
        # One pooled spread behind every point: the difference's variance rests on its df.
        dof = float(d[0]) if common is not None else var**2 / (vl**2 / dl + vr**2 / dr)
        half = float(stdtrit(dof, 1 - (1 - confidence) / 2)) * np.sqrt(var)
        size = mr - ml
        steps.append(Step(cut, float(size), float(np.sqrt(var)), float(dof), float(size - half), float(size + half), float(p)))
    return steps


def pool_errors(se: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, float]:
    """Standard errors of points replicated alike, from their spread pooled over all points.

    A point's standard error is ``sd / sqrt(df + 1)``; the pooled variance is the
    df-weighted mean of the points' ``se^2 (df + 1)`` (the one-way analysis of variance's
    error mean square). Returns each point's pooled standard error and the pooled df.
    """
    n = df + 1.0
    pooled = float(np.sum(df * se**2 * n) / np.sum(df))
    return np.sqrt(pooled / n), float(np.sum(df))


def _weighted_mean(y: np.ndarray, s: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    """Inverse-variance weighted mean, its variance and that variance's Satterthwaite df."""
    w = 1.0 / s**2
    var = 1.0 / w.sum()
    c = w * var  # each point's weight in the mean: var(mean) = sum c_i^2 s_i^2
    dof = var**2 / np.sum((c**2 * s**2) ** 2 / d)
    return float(np.sum(c * y)), float(var), float(dof)


def split_statistics(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The single-split statistic at every split of each row of ``y`` (with errors ``s``).

    ``y`` and ``s`` are (draws, n); the result is (draws, n - 1): column ``k - 1`` is
    ``(m_left - m_right)^2 / (1/W_left + 1/W_right)`` for the split before point ``k``.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a redrawn error of 0: that split is nan
        w = 1.0 / s**2
        cw = np.cumsum(w, axis=1)[:, :-1]
        cwy = np.cumsum(w * y, axis=1)[:, :-1]
        # The right side's sums added from the right, not total minus left: a light last point
        # would otherwise round to a weight of 0 (or below).
        rw = np.cumsum(w[:, ::-1], axis=1)[:, ::-1][:, 1:]
        rwy = np.cumsum((w * y)[:, ::-1], axis=1)[:, ::-1][:, 1:]
        return (cwy / cw - rwy / rw) ** 2 / (1.0 / cw + 1.0 / rw)


# The bootstrap's statistics are computed this many draws at a time: once more draws than
# ``alpha`` allows have beaten the observed split, the split is not a step, whatever the rest say.
_BATCH = 500


def _best_split(y: np.ndarray, s: np.ndarray, d: np.ndarray, draws: int, rng: np.random.Generator, *,
                common: bool = False, alpha: float = 1.0) -> tuple[int, float]:
    """The best single split of a segment (index of the first point after it) and its p-value.

    ``common``: the errors rest on one pooled spread (``pool_errors``), redrawn once per draw.
    ``alpha``: a p-value known to lie above it is returned as soon as it is known (then it is
    the share of the draws so far, a lower bound of the whole bootstrap's), and the draws are
    the same either way (every draw is made first), so the steps found do not depend on it.
    """
    q = np.nan_to_num(split_statistics(y[None, :], s[None, :])[0], nan=-np.inf)
    k = int(np.argmax(q)) + 1
    # Under no step every point estimates one level (the weighted mean) with its own
    # variance; each redrawn point also gets a redrawn standard error.
    n = y.size
    ys = rng.standard_normal((draws, n)) * s
    if common:
        ss = s * np.sqrt(rng.chisquare(d[0], size=(draws, 1)) / d[0])
    else:
        ss = s * np.sqrt(rng.chisquare(d, size=(draws, n)) / d)
    beaten = 0
    enough = alpha * (draws + 1.0) - 1.0  # p = (1 + beaten) / (draws + 1) > alpha once beaten exceeds it
    for at in range(0, draws, _BATCH):
        qmax = np.nan_to_num(split_statistics(ys[at:at + _BATCH], ss[at:at + _BATCH]), nan=-np.inf).max(axis=1)
        beaten += int(np.count_nonzero(qmax >= q[k - 1]))
        if beaten > enough:
            break
    return k, float((1.0 + beaten) / (draws + 1.0))


def se_of_interval(log_low: float, log_high: float, df: float, confidence: float = 0.95) -> float:
    """The standard error behind a symmetric Student t interval on the log scale."""
    return (log_high - log_low) / (2.0 * float(stdtrit(df, 1 - (1 - confidence) / 2)))


def point_of_summary(estimate: float, ci_low: float, ci_high: float, n_processes: int, n_runs: int,
                     runs_covered: bool, confidence: float = 0.95) -> tuple[float, float, float] | None:
    """A series point (log estimate, standard error, df) from a label's summary row.

    The summary's interval is a Student t interval on the log scale over processes (one
    run) or over runs (``runs_covered``); its degrees of freedom are not stored, so they
    are taken as the replicate units' count less one: ``n_runs - 1`` with runs covered,
    else ``n_processes - 1``. Where the model pooled processes across runs, its df was
    larger and this standard error is the smaller one (the test errs towards a step);
    ``benchmarks/changepoints.py`` measures the false rate through this same path.
    None where there is no interval (a single process) or no positive estimate.
    """
    values = (estimate, ci_low, ci_high)
    if not all(v is not None and np.isfinite(v) and v > 0 for v in values) or not ci_high > ci_low:
        return None
    df = float((n_runs if runs_covered else n_processes) - 1)
    if df < 1:
        return None
    return float(np.log(estimate)), se_of_interval(float(np.log(ci_low)), float(np.log(ci_high)), df, confidence), df
