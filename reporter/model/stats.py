"""Statistics of recorded samples: summaries, hierarchical comparisons, moderation, verdicts (pure).

Every function here takes numpy arrays and returns numbers or dataclasses; nothing reads
files, prints or knows about pandas. ``reporter.model.compare`` arranges an archive's samples
into the arrays these functions take.

The model (DESIGN.md, "Statistics"): a value is the log of one worker process's median
(the *unit*); units sit in *runs* (one ``collector run`` invocation each); samples within
a unit are not independent evidence about the stack. For every (case, metric) row:

* ``compute_oneway`` lays the unit values of each side out as a one-way design, runs as
  groups: the pooled within-run (between-process) mean square and the pooled variance of
  the run means, each with its degrees of freedom.
* ``squeeze_variances`` moderates each of those across the rows of one article (Smyth
  2004, limma's ``squeezeVar`` with a variance trend), because with 2–5 processes a side
  a row's own variance has 2–8 degrees of freedom.
* ``compute_hierarchical_tests`` combines the moderated components by the method of
  moments: the run-level component ``max(0, s²_runs - h·s²_within)`` is in the standard
  error whenever a side has two or more runs; with one run a side it is borrowed from
  other runs of the same case on the same device when the archive has them, and
  otherwise the row says that run-to-run variation is not covered. An interleaved
  recording is analysed paired: the values are per-round log differences, grouped by run
  pair, through the same functions with one side.
* ``adjust_pvalues`` controls the false discovery rate over the article
  (Benjamini–Hochberg); ``compute_verdict`` calls better/worse only for a significant
  row whose CI lies wholly outside the noise band.
* ``compute_mde`` states the smallest change each row could have detected at 80% power;
  ``compute_processes_needed`` how many processes (or runs) would resolve ±2%.

References
----------
* T. Kalibera & R. Jones, "Rigorous benchmarking in reasonable time", ISMM 2013
  (repeated runs and processes: variance at every level of the experiment).
* G. K. Smyth, "Linear models and empirical Bayes methods for assessing differential
  expression in microarray experiments", Statistical Applications in Genetics and
  Molecular Biology 3 (2004), article 3 (moderated variances and t-statistics).
* C. W. Law, Y. Chen, W. Shi & G. K. Smyth, "voom: precision weights unlock linear model
  analysis tools for RNA-seq read counts", Genome Biology 15 (2014) R29 (the variance trend).
* Y. Benjamini & Y. Hochberg, "Controlling the false discovery rate", JRSS B 57 (1995)
  289–300.
* S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
  Journal of Statistics 6 (1979) 65–70.
* S. R. Searle, G. Casella & C. E. McCulloch, "Variance Components", Wiley 1992, ch. 3
  (one-way random model, ANOVA estimators).
* F. E. Satterthwaite, "An approximate distribution of estimates of variance
  components", Biometrics Bulletin 2 (1946) 110–114.
* R. S. Woodruff, "Confidence intervals for medians and other position measures",
  JASA 47 (1952) 635–646.
* R. J. Hyndman & Y. Fan, "Sample quantiles in statistical packages", The American
  Statistician 50 (1996) 361–365 (definition 7, numpy's default, is used throughout).
* P. J. Fleming & J. J. Wallace, "How not to lie with statistics: the correct way to
  summarize benchmark results", CACM 29 (1986) 218–221.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma, ndtri, polygamma, stdtr, stdtrit

from runformat.vocabulary import Analysis, Verdict

# Verdict strings, kept under their old names for readers of earlier versions.
VERDICT_BETTER = Verdict.BETTER.value
VERDICT_WORSE = Verdict.WORSE.value
VERDICTS = tuple(v.value for v in Verdict)

# Fewer replicate units than this on a side and no between-unit variation can be estimated.
MIN_UNITS = 2
# The power and the change a row's MDE and processes_needed refer to.
POWER = 0.80
RESOLVE = 0.02
# The equivalence band of a verdict: a CI wholly inside ±EQUIVALENCE rules out a change
# beyond it. The same ±2% that replicate advice aims to resolve.
EQUIVALENCE = RESOLVE
# Replicate advice a user can follow: never more than this many processes or runs a side.
MAX_PROCESSES = 30
MAX_RUNS = 20
# Degrees of freedom beyond which Student's t is the normal distribution to 6 digits.
_DF_CAP = 1e6
# --------------------------------------------------------------------------- summaries


@dataclass(frozen=True)
class Summary:
    """One group's summary: the median of its pooled samples with a 95% CI and spread.

    ``ci_low``/``ci_high`` bound the median of the population the samples come from,
    with the worker process as the unit of replication (see ``compute_grouped_summaries``).
    ``cv`` is the pooled sample standard deviation over the mean (NaN for one sample).
    """

    median: float
    ci_low: float
    ci_high: float
    mean: float
    q1: float
    q3: float
    iqr: float
    cv: float
    n_samples: int
    n_units: int


@dataclass(frozen=True)
class GroupedSummaries:
    """``compute_grouped_summaries``' result: one array entry per group code ``0..G-1``.

    Groups that hold no sample have ``n_samples == 0`` and NaN statistics.
    """

    median: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    mean: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    iqr: np.ndarray
    cv: np.ndarray
    n_samples: np.ndarray
    n_units: np.ndarray


def _group_order(g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """A stable permutation sorting ``g`` (None when it is sorted already), and the start and
    size of each group in that order. A stable sort is linear on sorted runs, as samples are
    stored (a case's process writes its samples together)."""
    n = g.size
    if bool(np.all(g[1:] >= g[:-1])):
        order, gs = None, g
    elif g.dtype.kind in "iu" and g.min() >= 0 and g.max() < 2**16:
        order = np.argsort(g.astype(np.uint16), kind="stable")  # a radix sort: the same permutation, faster
        gs = g[order]
    else:
        order = np.argsort(g, kind="stable")
        gs = g[order]
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    return order, starts, np.diff(np.r_[starts, n])


# Group sizes sorted as the rows of one matrix each; with more distinct sizes, one lexsort.
_MAX_ROW_SIZES = 64
_ROW_BLOCK = 1 << 20  # values per matrix: the matrices stay small


def sort_within_groups(groups: ArrayLike, values: ArrayLike) -> np.ndarray:
    """``np.lexsort((values, groups))``, the same permutation, faster on a run archive.

    The groups are sorted with a stable sort (``_group_order``), and the values of every
    group of one size are then sorted together as the rows of one matrix. Ties keep their
    original order in both steps, as ``lexsort`` does. With many distinct group sizes it
    is ``lexsort`` itself. Where only the sorted values are needed,
    ``sort_values_within_groups`` is several times faster.
    """
    g = np.asarray(groups)
    v = np.asarray(values)
    n = g.size
    if n < 2:
        return np.arange(n, dtype=np.intp)
    order, starts, sizes = _group_order(g)
    distinct = np.unique(sizes)
    if distinct.size > _MAX_ROW_SIZES:
        return np.lexsort((v, g))
    if order is None:
        order = np.arange(n, dtype=np.intp)
        vs = v
    else:
        vs = v[order]
    out = order.copy()
    for size in distinct[distinct > 1]:
        first = starts[sizes == size]
        step = max(1, _ROW_BLOCK // int(size))
        for at in range(0, first.size, step):
            idx = first[at:at + step, None] + np.arange(size)
            within = np.argsort(vs[idx], axis=1, kind="stable")
            out[idx] = order[np.take_along_axis(idx, within, axis=1)]
    return out


def sort_values_within_groups(groups: ArrayLike, values: ArrayLike) -> tuple[np.ndarray | None, np.ndarray]:
    """``values`` sorted by (group, value), without the permutation that does it.

    Returns a stable permutation sorting ``groups`` (None when they are sorted already:
    ``groups[order]`` is then ``groups``) and ``values[np.lexsort((values, groups))]``.
    Each group's values are sorted as rows of a matrix by ``np.sort``, which moves
    values only; sorting indices (``argsort``) costs several times more. Ties are equal
    values, so the result is that of ``lexsort`` (NaN last, as there).
    """
    g = np.asarray(groups)
    v = np.asarray(values)
    n = g.size
    if n < 2:
        return None, v.copy()
    order, starts, sizes = _group_order(g)
    distinct = np.unique(sizes)
    if distinct.size > _MAX_ROW_SIZES:
        return order, v[np.lexsort((v, g))]
    vs = v.copy() if order is None else v[order]
    if distinct.size == 1 and int(distinct[0]) > 1:  # one size: the whole array is the matrix
        size = int(distinct[0])
        return order, np.sort(vs.reshape(-1, size), axis=1).reshape(-1)
    for size in distinct[distinct > 1]:
        first = starts[sizes == size]
        step = max(1, _ROW_BLOCK // int(size))
        for at in range(0, first.size, step):
            idx = first[at:at + step, None] + np.arange(size)
            vs[idx] = np.sort(vs[idx], axis=1)
    return order, vs


@dataclass(frozen=True)
class PooledSummaries:
    """``compute_pooled_summaries``' result: per group code, the pooled samples' median,
    mean, quartiles, IQR, CV and count; ``sorted_values`` holds the samples sorted by
    (group, value), group ``i``'s from ``starts[i]`` on (for further quantiles)."""

    median: np.ndarray
    mean: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    iqr: np.ndarray
    cv: np.ndarray
    n_samples: np.ndarray
    sorted_values: np.ndarray
    starts: np.ndarray


def _quantiles(xs: np.ndarray, start: np.ndarray, n: np.ndarray, q: np.ndarray | float) -> np.ndarray:
    """Per group: quantile ``q`` (Hyndman & Fan definition 7) of its slice of the sorted ``xs``."""
    G = n.size
    has = n > 0
    q = np.broadcast_to(np.asarray(q, dtype=np.float64), (G,))
    pos = np.where(has, (n - 1) * q, 0.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    frac = pos - lo
    out = np.full(G, np.nan)
    if has.any():
        a = xs[(start + lo)[has]]
        b = xs[(start + hi)[has]]
        out[has] = a + frac[has] * (b - a)
    return out


def compute_pooled_summaries(values: ArrayLike, groups: ArrayLike, *, n_groups: int | None = None) -> PooledSummaries:
    """Median, mean, quartiles, IQR, CV and count of every group's pooled samples, in one sort.

    Args:
        values: the samples (finite).
        groups: an integer group code ``>= 0`` per sample.
        n_groups: the number of groups (default ``max(groups) + 1``).

    Quantiles use linear interpolation between order statistics (Hyndman & Fan 1996
    definition 7, numpy's and pandas' default); ``cv`` is the sample standard deviation
    over the absolute mean (0 for identical samples, NaN for one sample). Groups without
    samples have ``n_samples == 0`` and NaN statistics. These are the descriptive half of
    ``compute_grouped_summaries``, without its cluster CI of the median.
    """
    x = np.asarray(values, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    G = int(n_groups if n_groups is not None else (g.max() + 1 if g.size else 0))
    xs = sort_values_within_groups(g, x)[1]
    n = np.bincount(g, minlength=G)
    start = np.cumsum(n) - n
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(g, weights=x, minlength=G) / n
        dev = x - mean[g]
        ss = np.bincount(g, weights=dev * dev, minlength=G)
        sd = np.sqrt(ss / (n - 1))
        cv = np.where(n > 1, np.where(sd == 0, 0.0, sd / np.abs(mean)), np.nan)
    q1, q3 = _quantiles(xs, start, n, 0.25), _quantiles(xs, start, n, 0.75)
    return PooledSummaries(median=_quantiles(xs, start, n, 0.5), mean=mean, q1=q1, q3=q3, iqr=q3 - q1, cv=cv,
                           n_samples=n, sorted_values=xs, starts=start)


def compute_grouped_summaries(
    values: ArrayLike,
    groups: ArrayLike,
    units: ArrayLike,
    *,
    n_groups: int | None = None,
    confidence: float = 0.95,
) -> GroupedSummaries:
    """Median (with CI), mean, quartiles, IQR and CV of every group, in one pass.

    Args:
        values: the samples (finite).
        groups: an integer group code ``>= 0`` per sample (e.g. one per label, case, metric).
        units: an integer unit code per sample: samples sharing (group, unit) come from
            one worker process. Codes need only be distinct within a group.
        n_groups: the number of groups (default ``max(groups) + 1``).
        confidence: the CI's coverage (0.95).

    Returns:
        A ``GroupedSummaries`` of arrays indexed by group code.

    Quantiles (median, q1, q3) use linear interpolation between order statistics
    (Hyndman & Fan 1996 definition 7, numpy's and pandas' default).

    The CI of the median is Woodruff's (1952) interval for a quantile under cluster
    sampling, with each worker process a cluster (Francisco & Fuller 1991 prove its
    consistency for complex designs). Let ``M`` be the pooled sample median and
    ``a_u`` the number of samples of unit ``u`` below ``M`` (those equal to ``M`` count
    one half), ``n_u`` its sample count, ``N = sum(n_u)`` and ``k`` the number of units.
    The proportion below the median, ``p = sum(a_u)/N``, has the cluster-robust
    (between-unit) variance ``V = k/(k-1) * sum((a_u - p n_u)^2) / N^2``. The interval
    ``0.5 ± t(k-1) * sqrt(max(V, p(1-p)/N))`` on the proportion scale is mapped back
    through the pooled empirical quantile function. ``t(k-1)`` is Student's quantile
    with ``k - 1`` degrees of freedom because the variance rests on ``k`` clusters; the
    floor ``p(1-p)/N`` (the variance for independent samples) keeps a lucky perfectly
    balanced split from collapsing the interval to a point. With a single unit the
    between-process variation cannot be seen: the interval is the ordinary
    distribution-free one for independent samples (normal quantile), which is then a
    within-process interval only.

    This interval describes the pooled samples; it is *not* a confidence interval for
    the stack's median when processes differ: it cannot reach beyond the pooled
    samples, so when the between-process spread dominates, the truth lies outside it
    whenever every process lands on one side. Measured coverage of the true median with
    a between-process CV of a few per cent: 0.63 with 2 processes, 0.84–0.87 with 3.
    ``reporter.model.compare.compute_summaries`` therefore gives each label the hierarchical
    interval of ``compute_location_cis`` instead (and the spread of ``compute_pooled_summaries``).
    This interval is the collector's yardstick for adaptive replication
    (``collector.replication.compute_median_ci``, a numpy-only copy that
    ``tests/test_replication.py`` holds to this one).

    All-identical samples give a zero-width interval and ``cv = 0``; nothing divides
    by zero.
    """
    x = np.asarray(values, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    u = np.asarray(units, dtype=np.int64)
    if not (x.shape == g.shape == u.shape) or x.ndim != 1:
        raise ValueError("values, groups and units must be 1-D arrays of one length")
    G = int(n_groups if n_groups is not None else (g.max() + 1 if g.size else 0))
    if g.size and (g.min() < 0 or g.max() >= G):
        raise ValueError("group codes must lie in 0..n_groups-1")

    pooled = compute_pooled_summaries(x, g, n_groups=G)
    n, median, xs, start = pooled.n_samples, pooled.median, pooled.sorted_values, pooled.starts
    k, half = _woodruff_half_widths(x, g, u, median, n, n_groups=G, confidence=confidence)
    ci_low = _quantiles(xs, start, n, np.clip(np.nan_to_num(0.5 - half, nan=0.5), 0.0, 1.0))
    ci_high = _quantiles(xs, start, n, np.clip(np.nan_to_num(0.5 + half, nan=0.5), 0.0, 1.0))
    return GroupedSummaries(
        median=median,
        ci_low=ci_low,
        ci_high=ci_high,
        mean=pooled.mean,
        q1=pooled.q1,
        q3=pooled.q3,
        iqr=pooled.iqr,
        cv=pooled.cv,
        n_samples=n,
        n_units=k,
    )


def _woodruff_half_widths(
    x: np.ndarray, g: np.ndarray, u: np.ndarray, median: np.ndarray, n: np.ndarray, *, n_groups: int,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: its number of units (clusters) and the half-width of Woodruff's interval on
    the proportion scale, each worker process a cluster (``compute_grouped_summaries``)."""
    # Clusters: one per distinct (group, unit).
    umin = int(u.min()) if u.size else 0
    span = int(u.max()) - umin + 1 if u.size else 1
    ukeys, uinv = np.unique(g * span + (u - umin), return_inverse=True)
    ugroup = ukeys // span
    k = np.bincount(ugroup, minlength=n_groups)
    mid = np.where(x < median[g], 1.0, np.where(x == median[g], 0.5, 0.0))
    a_u = np.bincount(uinv, weights=mid, minlength=ukeys.size)
    n_u = np.bincount(uinv, minlength=ukeys.size).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.bincount(ugroup, weights=a_u, minlength=n_groups) / n
        resid = a_u - p[ugroup] * n_u
        between = np.bincount(ugroup, weights=resid * resid, minlength=n_groups) * k / (k - 1) / (n.astype(np.float64) ** 2)
        srs = p * (1 - p) / n
        var = np.where(k >= 2, np.fmax(between, srs), srs)
        alpha = 1.0 - confidence
        mult = np.where(k >= 2, stdtrit(np.maximum(k - 1, 1), 1 - alpha / 2), ndtri(1 - alpha / 2))
        half = mult * np.sqrt(var)
    return k, half


def compute_summary(values: ArrayLike, units: ArrayLike | None = None, *, confidence: float = 0.95) -> Summary:
    """Summarise one group of samples; ``units`` names each sample's worker process.

    Args:
        values: the samples (finite, at least one).
        units: one label per sample (any hashable values; default: all one unit).
        confidence: the CI's coverage.

    Returns:
        A ``Summary``; see ``compute_grouped_summaries`` for the method and references.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("compute_summary needs at least one sample")
    codes = np.zeros(x.size, dtype=np.int64) if units is None else np.unique(np.asarray(units), return_inverse=True)[1].ravel()
    s = compute_grouped_summaries(x, np.zeros(x.size, dtype=np.int64), codes, n_groups=1, confidence=confidence)
    return Summary(
        median=float(s.median[0]),
        ci_low=float(s.ci_low[0]),
        ci_high=float(s.ci_high[0]),
        mean=float(s.mean[0]),
        q1=float(s.q1[0]),
        q3=float(s.q3[0]),
        iqr=float(s.iqr[0]),
        cv=float(s.cv[0]),
        n_samples=int(s.n_samples[0]),
        n_units=int(s.n_units[0]),
    )


# ----------------------------------------------------------------- one-way layout


@dataclass(frozen=True)
class OneWay:
    """``compute_oneway``'s result. Per row and side (shape ``(rows, sides)``): ``mean``,
    the mean over runs of the run means (NaN without units); ``n_units``, ``n_groups``
    (runs); ``h``, the mean over runs of ``1/n`` (n: units in the run). Per row:
    ``ms_within`` (pooled variance of units around their run mean, ``df_within`` =
    units - runs), ``ms_between`` (pooled variance of the run means around their side's
    mean, ``df_between`` = runs - sides with runs) and ``h_between`` (the mean of ``1/n``
    over the runs that enter ``ms_between``). Variances are NaN where their df is 0.
    """

    mean: np.ndarray
    n_units: np.ndarray
    n_groups: np.ndarray
    h: np.ndarray
    ms_within: np.ndarray
    df_within: np.ndarray
    ms_between: np.ndarray
    df_between: np.ndarray
    h_between: np.ndarray


def compute_oneway(
    values: ArrayLike, rows: ArrayLike, sides: ArrayLike, groups: ArrayLike, *, n_rows: int, n_sides: int = 2
) -> OneWay:
    """Per row, the one-way random-effects layout of its units' values, runs as groups.

    Args:
        values: one value per unit (a log process median, or a paired log difference).
        rows: the row (case, metric) code of each unit, ``0..n_rows-1``.
        sides: the side code, ``0..n_sides-1`` (baseline 0, candidate 1; 0 when paired).
        groups: the run (or run pair) of each unit; codes need only be distinct within a
            (row, side).
        n_rows, n_sides: the array sizes.

    Returns:
        ``OneWay``. Under the model ``y = mu_side + a_run + e_unit`` with
        ``Var a = s2_run``, ``Var e = s2_unit``, the expectations are
        ``E ms_within = s2_unit`` and ``E ms_between = s2_run + h_between * s2_unit``
        (exactly for equal run sizes; Searle, Casella & McCulloch 1992, ch. 3).
    """
    y = np.asarray(values, dtype=np.float64)
    r = np.asarray(rows, dtype=np.int64)
    s = np.asarray(sides, dtype=np.int64)
    g = np.asarray(groups, dtype=np.int64)
    if not (y.shape == r.shape == s.shape == g.shape) or y.ndim != 1:
        raise ValueError("values, rows, sides and groups must be 1-D arrays of one length")
    n_rs = n_rows * n_sides
    span = int(g.max()) + 1 if g.size else 1
    ukeys, inv = np.unique((r * n_sides + s) * span + g, return_inverse=True)
    inv = inv.ravel()
    n_g = np.bincount(inv, minlength=ukeys.size).astype(np.float64)
    mean_g = np.bincount(inv, weights=y, minlength=ukeys.size) / np.maximum(n_g, 1)
    ss_g = np.bincount(inv, weights=(y - mean_g[inv]) ** 2, minlength=ukeys.size)
    rs = ukeys // span
    row_g = rs // n_sides
    R = np.bincount(rs, minlength=n_rs).astype(np.float64)
    N = np.bincount(rs, weights=n_g, minlength=n_rs)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.bincount(rs, weights=mean_g, minlength=n_rs) / R
        h = np.bincount(rs, weights=1.0 / n_g, minlength=n_rs) / R
        df_w = np.bincount(row_g, weights=n_g - 1, minlength=n_rows)
        ms_w = np.bincount(row_g, weights=ss_g, minlength=n_rows) / df_w
        multi = (R[rs] >= 2).astype(np.float64)
        df_b = np.bincount(np.arange(n_rs) // n_sides, weights=np.maximum(R - 1, 0), minlength=n_rows)
        ss_b = np.bincount(row_g, weights=multi * (mean_g - m[rs]) ** 2, minlength=n_rows)
        ms_b = ss_b / df_b
        h_b = np.bincount(row_g, weights=multi / n_g, minlength=n_rows) / np.bincount(row_g, weights=multi, minlength=n_rows)
    ms_w = np.where(df_w > 0, ms_w, np.nan)
    ms_b = np.where(df_b > 0, ms_b, np.nan)
    return OneWay(
        mean=m.reshape(n_rows, n_sides),
        n_units=N.reshape(n_rows, n_sides).astype(np.int64),
        n_groups=R.reshape(n_rows, n_sides).astype(np.int64),
        h=h.reshape(n_rows, n_sides),
        ms_within=ms_w,
        df_within=df_w,
        ms_between=ms_b,
        df_between=df_b,
        h_between=np.where(df_b > 0, h_b, np.nan),
    )


# ------------------------------------------------------------------ moderation


@dataclass(frozen=True)
class Squeezed:
    """``squeeze_variances``' result: per row the posterior variance and its df, and the
    prior (``s2_prior`` per row, as the trend gives it; ``df_prior`` one number, 0 when
    there was nothing to borrow from, ``inf`` when the rows' variances agree with the
    trend up to sampling error)."""

    s2: np.ndarray
    df: np.ndarray
    s2_prior: np.ndarray
    df_prior: float


def _trigamma_inverse(x: float) -> float:
    """The y with trigamma(y) = x (Newton's method as in limma's ``trigammaInverse``)."""
    if x > 1e7:
        return 1.0 / np.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        dif = tri * (1 - tri / x) / float(polygamma(2, y))
        y += dif
        if -dif / y < 1e-8:
            break
    return y


def squeeze_variances(s2: ArrayLike, df: ArrayLike, covariate: ArrayLike | None = None, *, min_rows: int = 3) -> Squeezed:
    """Empirical-Bayes moderated variances (Smyth 2004), with an optional linear trend.

    Args:
        s2: one sample variance per row (NaN or 0 where the row has none).
        df: its degrees of freedom (0 where none).
        covariate: a per-row value the prior's log variance may depend on linearly
            (NaN allowed: those rows get their own intercept). ``reporter.model.compare`` passes
            the log of the rows' within-process sampling variance of a median, which
            tracks how noisy a case is (a matmul's processes scatter far more than a
            conv's), as limma-trend uses the mean log expression.
        min_rows: fewer usable rows than this and nothing is borrowed.

    Returns:
        ``Squeezed``. The prior: ``s2_g`` given the true variance ``σ²_g`` is
        ``σ²_g χ²_{d_g}/d_g`` and ``1/σ²_g`` is ``χ²_{d0}/(d0 s0²)``; ``d0`` and ``s0²``
        come from the first two moments of ``z = log s2 - ψ(d/2) + log(d/2)``
        (``E z = log s0² - ψ(d0/2) + log(d0/2)`` plus the trend,
        ``Var z = ψ'(d/2) + ψ'(d0/2)``), exactly limma's ``fitFDist``. The posterior is
        ``(d0 s0² + d s2)/(d0 + d)`` with ``d0 + d`` degrees of freedom, capped at the
        pooled df of all rows (limma's ``df.total``). Rows without a variance of their
        own (df 0) get the prior.
    """
    v = np.asarray(s2, dtype=np.float64)
    d = np.asarray(df, dtype=np.float64)
    ok = (d > 0) & np.isfinite(v) & (v > 0)
    n_ok = int(ok.sum())
    if n_ok < min_rows:
        return Squeezed(v.copy(), d.copy(), np.full(v.shape, np.nan), 0.0)
    z = np.full(v.shape, np.nan)
    z[ok] = np.log(v[ok]) - digamma(d[ok] / 2) + np.log(d[ok] / 2)
    columns = [np.ones(v.shape)]
    if covariate is not None:
        x = np.asarray(covariate, dtype=np.float64)
        finite = np.isfinite(x)
        if finite[ok].sum() >= 3 and np.ptp(x[ok & finite]) > 0:
            columns.append(np.where(finite, x, 0.0))
            if (~finite[ok]).any():
                columns.append((~finite).astype(np.float64))
    X = np.column_stack(columns)
    while X.shape[1] > 1 and n_ok - X.shape[1] < 2:
        X = X[:, :1]
    beta, *_ = np.linalg.lstsq(X[ok], z[ok], rcond=None)
    rank = int(np.linalg.matrix_rank(X[ok]))
    fit = X @ beta
    resid = z[ok] - fit[ok]
    evar = float(np.sum(resid**2) / max(n_ok - rank, 1) - np.mean(polygamma(1, d[ok] / 2)))
    pooled_df = float(d[ok].sum())
    if evar > 0:
        d0 = 2 * _trigamma_inverse(evar)
        prior = np.exp(fit + digamma(d0 / 2) - np.log(d0 / 2))
        post = (d0 * prior + np.where(d > 0, d * np.nan_to_num(v), 0.0)) / (d0 + d)
        df_post = np.minimum(d + d0, pooled_df)
    else:
        d0 = np.inf
        prior = np.exp(fit)
        post = prior.copy()
        df_post = np.full(v.shape, pooled_df)
    return Squeezed(post, df_post, prior, float(d0))


def moderated_components(
    specific: OneWay, shared: OneWay, covariate: ArrayLike | None = None
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Within- and between-run mean squares of every row: case-specific parts moderated, shared parts not.

    Args:
        specific: the rows' layout of their values minus each unit's shared effect (the
            unit's mean residual over all rows: a slow process or a hot run moves every
            case it ran).
        shared: the one-row layout of those per-unit shared effects.
        covariate: the trend covariate of ``squeeze_variances``.

    Returns:
        ``((ms_within, df), (ms_between, df))`` per row, for ``compute_hierarchical_tests``.

    Why: an effect shared by all cases of a process or run is one realisation for every
    row of the article. Its variance agrees across rows because it is the same number,
    not because each row has measured it well, so moderating it would credit every row
    with the whole article's degrees of freedom for a quantity the article has seen only
    ``processes - runs`` (or ``runs - 1``) times, and shared effects would be called
    better/worse together. The case-specific parts are independent across rows and are
    moderated (Smyth 2004); the shared parts keep their own df; each sum's df is
    Satterthwaite's.
    """
    w = squeeze_variances(specific.ms_within, specific.df_within, covariate)
    b = squeeze_variances(specific.ms_between, specific.df_between, covariate)
    b_s2 = np.where(specific.df_between > 0, b.s2, np.nan)

    def add(s2: np.ndarray, df: np.ndarray, extra: float, extra_df: float) -> tuple[np.ndarray, np.ndarray]:
        if not (np.isfinite(extra) and extra_df > 0):
            return s2, df
        total = s2 + extra
        with np.errstate(invalid="ignore", divide="ignore"):
            dft = total**2 / (np.where(df > 0, s2**2 / df, 0.0) + extra**2 / extra_df)
        return total, np.minimum(np.where(np.isfinite(dft), dft, df), np.maximum(df, extra_df))

    within = add(w.s2, w.df, float(shared.ms_within[0]), float(shared.df_within[0]))
    between = add(b_s2, b.df, float(shared.ms_between[0]), float(shared.df_between[0]))
    return within, between


def moderated_oneway(
    values: np.ndarray, rows: np.ndarray, sides: np.ndarray, groups: np.ndarray, units: np.ndarray, *,
    sign: np.ndarray, n_rows: int, n_sides: int, x: np.ndarray, moderate: bool, robust: bool = False,
) -> tuple[OneWay, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], float, np.ndarray]:
    """The rows' one-way layout and their mean squares, moderated apart from the shared per-unit effects.

    ``units`` identifies each value's unit (process, or round when paired) across rows;
    ``sign`` orients each row (+1 higher is better) so that a slow process lowers every
    row alike. A unit's shared effect is its mean residual over the rows, or with
    ``robust`` its median (``reporter.model.compare`` lends it with ``robust``). Returns the layout, (ms_within, df),
    (ms_between, df), and the prior df and variance of the case-specific within-run part
    (for planning rows with too few units).
    """
    ow = compute_oneway(values, rows, sides, groups, n_rows=n_rows, n_sides=n_sides)
    if not moderate or values.size == 0:
        return ow, (ow.ms_within, ow.df_within), (ow.ms_between, ow.df_between), 0.0, np.full(n_rows, np.nan)
    o = values * sign[rows]
    resid = o - ow.mean[rows, sides] * sign[rows]
    n_units = int(units.max()) + 1
    if robust:
        z = compute_pooled_summaries(resid, units, n_groups=n_units).median
    else:
        with np.errstate(invalid="ignore"):
            z = np.bincount(units, weights=resid, minlength=n_units) / np.bincount(units, minlength=n_units)
    spec = compute_oneway(values - sign[rows] * z[units], rows, sides, groups, n_rows=n_rows, n_sides=n_sides)
    first = np.unique(units, return_index=True)[1]
    shared = compute_oneway(z[units[first]], np.zeros(first.size, np.int64), sides[first], groups[first],
                            n_rows=1, n_sides=n_sides)
    within, between = moderated_components(spec, shared, x)
    prior = squeeze_variances(spec.ms_within, spec.df_within, x)
    return ow, within, between, prior.df_prior, prior.s2_prior + (shared.ms_within[0] if np.isfinite(shared.ms_within[0]) else 0.0)



# ------------------------------------------------------------ hierarchical tests


@dataclass(frozen=True)
class HierarchicalTests:
    """``compute_hierarchical_tests``' result, one entry per row.

    ``estimate`` is the oriented log ratio (> 0: the candidate is better), ``se`` its
    standard error and ``df`` its Satterthwaite degrees of freedom, ``ci_low``/``ci_high``
    the log CI, ``p_value`` the two-sided t-test of zero. ``run_var`` is the run-level
    variance component in the standard error (0 when the data show none, NaN when not
    covered), ``unit_var`` the moderated between-unit variance, ``run_level`` one of
    ``"replicated"``, ``"borrowed"``, ``"none"``. NaN where a side has fewer than
    ``MIN_UNITS`` units.
    """

    estimate: np.ndarray
    se: np.ndarray
    df: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    run_var: np.ndarray
    unit_var: np.ndarray
    run_level: np.ndarray


def compute_hierarchical_tests(
    oneway: OneWay,
    *,
    higher_is_better: ArrayLike,
    paired: bool,
    within: tuple[np.ndarray, np.ndarray] | None = None,
    between: tuple[np.ndarray, np.ndarray] | None = None,
    borrowed: tuple[np.ndarray, np.ndarray] | None = None,
    confidence: float = 0.95,
) -> HierarchicalTests:
    """t-intervals and tests of the difference of side means with variance at every level.

    Args:
        oneway: the rows' layout (``compute_oneway``; one side when ``paired``, whose
            values are the per-round differences candidate minus baseline).
        higher_is_better: per row, True when higher values are better.
        paired: True for a one-sample analysis of paired differences.
        within, between: the (moderated) ``ms_within`` and ``ms_between`` with their df,
            e.g. from ``squeeze_variances``; default the raw ones of ``oneway``.
        borrowed: (run-level variance, its df) per row, estimated elsewhere, used for
            rows whose own data hold a single run a side (NaN: none).
        confidence: the CI's coverage.

    Returns:
        ``HierarchicalTests``. With ``a = Σ 1/R_s`` and ``b = Σ h_s/R_s`` over the sides
        (``R_s`` runs, ``h_s`` the mean of 1/processes per run), the variance of the
        estimate is ``a·σ²_run + b·σ²_unit``. ``σ²_unit`` is the moderated within-run
        mean square; ``σ²_run`` the method-of-moments component
        ``max(0, s²_runs - h·σ²_unit)`` when some side has two or more runs (the constraint
        ``E s²_runs ≥ h σ²_unit`` of the one-way model), else the borrowed component,
        else absent (``run_level = "none"``). The degrees of freedom are Satterthwaite's
        for the combination (1946). For equal run sizes this is exactly the t-test on run
        means when the run component dominates, and the t-test on units when the runs
        show no spread beyond what their units imply.
    """
    hib = np.asarray(higher_is_better, dtype=bool)
    R = oneway.n_groups.astype(np.float64)
    N = oneway.n_units
    ms_w, df_w = within if within is not None else (oneway.ms_within, oneway.df_within)
    ms_b, df_b = between if between is not None else (oneway.ms_between, oneway.df_between)
    with np.errstate(invalid="ignore", divide="ignore"):
        if paired:
            diff = oneway.mean[:, 0]
            enough = N[:, 0] >= MIN_UNITS
        else:
            diff = oneway.mean[:, 1] - oneway.mean[:, 0]
            enough = (N[:, 0] >= MIN_UNITS) & (N[:, 1] >= MIN_UNITS)
        est = np.where(hib, diff, -diff)
        a = np.sum(1.0 / R, axis=1)
        b = np.sum(oneway.h / R, axis=1)
        run = _run_component(oneway, ms_w, ms_b, borrowed, est.shape)
        ms_w = run.unit_var
        se2 = b * ms_w + a * np.nan_to_num(run.var)
        df = np.minimum(_satterthwaite_df(se2, a, b, ms_w, df_w, ms_b, df_b, run), _DF_CAP)
        se = np.sqrt(se2)
        tq = stdtrit(df, 1 - (1 - confidence) / 2)
        p = 2 * stdtr(df, -np.abs(est) / se)
        ok = enough & np.isfinite(se) & (se > 0) & np.isfinite(df)
    nan = np.full(est.shape, np.nan)
    level = np.where(run.replicated, "replicated", np.where(run.has_borrow, "borrowed", "none"))
    return HierarchicalTests(
        estimate=est,
        se=np.where(ok, se, nan),
        df=np.where(ok, df, nan),
        ci_low=np.where(ok, est - tq * se, nan),
        ci_high=np.where(ok, est + tq * se, nan),
        p_value=np.where(ok, p, nan),
        run_var=run.var,
        unit_var=ms_w,
        run_level=level,
    )


@dataclass(frozen=True)
class _RunComponent:
    """Per row, the run-level variance component of ``compute_hierarchical_tests`` and where it
    comes from: ``var`` (NaN: not covered), the row's own method-of-moments ``own``, the lent
    ``lent``/``lent_df`` (NaN: none), whether ``replicated`` (a side has two runs or more),
    ``has_borrow``, ``runs_only`` (one unit per run), the ``h_between`` that entered ``own``, and
    ``unit_var``, the between-unit variance left beside it."""

    var: np.ndarray
    own: np.ndarray
    lent: np.ndarray
    lent_df: np.ndarray
    replicated: np.ndarray
    has_borrow: np.ndarray
    runs_only: np.ndarray
    h_between: np.ndarray
    unit_var: np.ndarray


def _run_component(
    oneway: OneWay, ms_w: np.ndarray, ms_b: np.ndarray, borrowed: tuple[np.ndarray, np.ndarray] | None,
    shape: tuple[int, ...],
) -> _RunComponent:
    """The run-level component: the row's own when a side has two runs or more, else the borrowed one."""
    replicated = oneway.df_between > 0
    h_b = np.where(replicated, oneway.h_between, 0.0)
    var_r_own = np.maximum(0.0, ms_b - h_b * ms_w)
    if borrowed is not None:
        var_r_borrow, df_r_borrow = (np.asarray(x, dtype=np.float64) for x in borrowed)
    else:
        var_r_borrow = np.full(shape, np.nan)
        df_r_borrow = np.full(shape, np.nan)
    has_borrow = ~replicated & np.isfinite(var_r_borrow)
    run_var = np.where(replicated, var_r_own, np.where(has_borrow, var_r_borrow, np.nan))
    # One unit per run: the run means are the units, and their spread holds both levels.
    runs_only = replicated & ~(oneway.df_within > 0)
    return _RunComponent(
        var=np.where(runs_only, ms_b, run_var), own=var_r_own, lent=var_r_borrow, lent_df=df_r_borrow,
        replicated=replicated, has_borrow=has_borrow, runs_only=runs_only, h_between=h_b,
        unit_var=np.where(runs_only, 0.0, ms_w),
    )


def _satterthwaite_df(
    se2: np.ndarray, a: np.ndarray, b: np.ndarray, ms_w: np.ndarray, df_w: np.ndarray, ms_b: np.ndarray,
    df_b: np.ndarray, run: _RunComponent,
) -> np.ndarray:
    """Satterthwaite's degrees of freedom of ``se2`` as a combination of independent mean squares."""
    own_positive = run.replicated & ((run.own > 0) | run.runs_only)
    c_between = np.where(own_positive, a * ms_b, 0.0)
    c_within = np.where(own_positive, (b - a * run.h_between) * ms_w, b * ms_w)
    c_borrow = np.where(run.has_borrow, a * np.nan_to_num(run.lent), 0.0)
    denom = (
        np.where(c_between != 0, c_between**2 / df_b, 0.0)
        + np.where(c_within != 0, c_within**2 / df_w, 0.0)
        + np.where(c_borrow != 0, c_borrow**2 / np.where(run.lent_df > 0, run.lent_df, np.nan), 0.0)
    )
    return se2**2 / denom


def compute_run_variance(oneway: OneWay, within: tuple[np.ndarray, np.ndarray], between: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The run-level variance component of every row and its df, for lending to other rows.

    ``oneway`` lays out labels with several runs (one side per label); ``within`` and
    ``between`` are its moderated mean squares. The component is the method-of-moments
    ``max(0, s²_runs - h·s²_within)``; its df is that of ``s²_runs``. NaN where no label
    has two runs of the row.
    """
    ms_w, _ = within
    ms_b, df_b = between
    has = oneway.df_between > 0
    with np.errstate(invalid="ignore"):
        var = np.maximum(0.0, ms_b - np.where(has, oneway.h_between, 0.0) * ms_w)
    return np.where(has, var, np.nan), np.where(has, df_b, np.nan)


# ------------------------------------------------------- power and planning


def _quantile_sum(df: ArrayLike, alpha: float, power: float) -> np.ndarray:
    d = np.minimum(np.asarray(df, dtype=np.float64), _DF_CAP)
    return stdtrit(d, 1 - alpha / 2) + stdtrit(d, power)


def compute_mde(se: ArrayLike, df: ArrayLike, *, noise: float, alpha: float = 0.05, power: float = POWER) -> np.ndarray:
    """The smallest relative change a row detects with probability ``power``.

    A true log change ``δ`` is called when the CI lies wholly beyond the noise band:
    ``δ - t_{df,1-α/2}·se > log(1 + noise)``; that holds with probability ``power`` when
    ``δ = log(1 + noise) + (t_{df,1-α/2} + t_{df,power})·se``. Returned as a fraction,
    ``exp(δ) - 1`` (0.031 = a 3.1% change). The false-discovery control of the article
    is left out (it depends on the other rows), so an article's calls need a little more.
    NaN where ``se`` is.
    """
    s = np.asarray(se, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.expm1(np.log1p(noise) + _quantile_sum(df, alpha, power) * s)


def _smallest_reaching(se2: np.ndarray, df: np.ndarray, counts: np.ndarray, *, noise: float, target: float,
                       alpha: float, power: float) -> np.ndarray:
    """Per row, the first of ``counts`` whose design (``se2``, ``df``: rows × counts) has an MDE of
    at most ``target``; NaN when none does."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mde = np.expm1(np.log1p(noise) + _quantile_sum(df, alpha, power) * np.sqrt(se2))
    reach = mde <= target
    first = np.argmax(reach, axis=1)
    return np.where(reach.any(axis=1), counts[first].astype(np.float64), np.nan)


def compute_processes_needed(
    unit_var: ArrayLike,
    run_var: ArrayLike,
    df: ArrayLike,
    *,
    runs: ArrayLike,
    paired: bool,
    noise: float,
    target: float = RESOLVE,
    alpha: float = 0.05,
    power: float = POWER,
    limit: int = MAX_PROCESSES,
) -> np.ndarray:
    """Processes per side (rounds when paired), at most ``limit``, for the MDE to reach ``target`` at ``runs`` runs.

    With ``σ²_unit`` and ``σ²_run`` the row's variance components, ``n`` processes a side
    spread over ``R`` runs give ``se² = k(σ²_run/R + σ²_unit/n)`` (``k = 2`` for two
    independent sides, 1 for paired differences), at ``max(df, k(n - 1))`` degrees of
    freedom: more processes only add df, and the df of today's few processes would ask
    for thousands. ``n`` is the smallest count from ``MIN_UNITS`` to ``limit`` whose MDE
    (``compute_mde``) reaches ``target``. NaN when none does (the run component, or the
    noise within processes, is too large for processes alone: more runs,
    ``compute_runs_needed``, pairing or a longer time budget) or the variance is unknown.
    """
    su = np.asarray(unit_var, dtype=np.float64)[:, None]
    sr = np.nan_to_num(np.asarray(run_var, dtype=np.float64))[:, None]
    R = np.maximum(np.asarray(runs, dtype=np.float64), 1)[:, None] * np.ones_like(su)
    d = np.asarray(df, dtype=np.float64)[:, None]
    k = 1.0 if paired else 2.0
    n = np.arange(MIN_UNITS, max(limit, MIN_UNITS) + 1, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        se2 = k * (sr / R + su / n[None, :])
        dfn = np.fmax(d, k * (n[None, :] - 1))
    return _smallest_reaching(se2, dfn, n, noise=noise, target=target, alpha=alpha, power=power)


def compute_runs_needed(
    unit_var: ArrayLike,
    run_var: ArrayLike,
    df: ArrayLike,
    *,
    processes_per_run: ArrayLike,
    paired: bool,
    noise: float,
    target: float = RESOLVE,
    alpha: float = 0.05,
    power: float = POWER,
    limit: int = MAX_RUNS,
) -> np.ndarray:
    """Runs per side (2 to ``limit``), at ``processes_per_run``, for the MDE to reach ``target``.

    ``se² = k(σ²_run + σ²_unit/m)/R`` at ``m`` processes a run, at ``max(df, k(R - 1))``
    degrees of freedom; an unknown ``σ²_unit`` (one process a run: ``σ²_run`` then holds
    both levels) counts as 0. NaN when no count up to ``limit`` reaches ``target``.
    """
    su = np.nan_to_num(np.asarray(unit_var, dtype=np.float64))[:, None]
    sr = np.nan_to_num(np.asarray(run_var, dtype=np.float64))[:, None]
    m = np.maximum(np.asarray(processes_per_run, dtype=np.float64), 1)[:, None]
    d = np.asarray(df, dtype=np.float64)[:, None]
    k = 1.0 if paired else 2.0
    r = np.arange(2, max(limit, 2) + 1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se2 = k * (sr + su / m) / r[None, :]
        dfr = np.fmax(d, k * (r[None, :] - 1))
    return _smallest_reaching(se2, dfr, r, noise=noise, target=target, alpha=alpha, power=power)


def compute_comparison(
    baseline: ArrayLike,
    candidate: ArrayLike,
    better: str = "lower",
    *,
    baseline_runs: ArrayLike | None = None,
    candidate_runs: ArrayLike | None = None,
    confidence: float = 0.95,
) -> "ComparisonResult":
    """Compare two sets of positive replicate values (one per worker process), unmoderated.

    Args:
        baseline, candidate: each process's value (its median).
        better: ``"lower"`` (time, memory) or ``"higher"`` (throughput).
        baseline_runs, candidate_runs: the run of each value (default: one run a side).
        confidence: the CI's coverage.

    Returns:
        A ``ComparisonResult`` with ``ratio > 1`` meaning the candidate is better. The
        ratio is ``exp`` of the oriented difference of the sides' means of log values
        (means over runs of run means); the CI and p-value are
        ``compute_hierarchical_tests``' on one row. With one run a side this is
        Student's pooled two-sample t-test on the logs
        (``scipy.stats.ttest_ind(equal_var=True)``).

    Raises:
        ValueError: a value is not finite and positive, or ``better`` is not lower/higher.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")
    b = np.asarray(baseline, dtype=np.float64).ravel()
    c = np.asarray(candidate, dtype=np.float64).ravel()
    for side, arr in (("baseline", b), ("candidate", c)):
        if arr.size == 0:
            raise ValueError(f"the {side} has no values")
        if not np.all(np.isfinite(arr) & (arr > 0)):
            raise ValueError(f"the {side} holds values that are not finite and positive")
    gb = np.zeros(b.size, np.int64) if baseline_runs is None else np.unique(np.asarray(baseline_runs), return_inverse=True)[1].ravel()
    gc = np.zeros(c.size, np.int64) if candidate_runs is None else np.unique(np.asarray(candidate_runs), return_inverse=True)[1].ravel()
    ow = compute_oneway(
        np.log(np.r_[b, c]), np.zeros(b.size + c.size, np.int64), np.r_[np.zeros(b.size, np.int64), np.ones(c.size, np.int64)],
        np.r_[gb, gc], n_rows=1,
    )
    t = compute_hierarchical_tests(ow, higher_is_better=[better == "higher"], paired=False, confidence=confidence)
    return ComparisonResult(
        ratio=float(np.exp(t.estimate[0])),
        ci_low=float(np.exp(t.ci_low[0])),
        ci_high=float(np.exp(t.ci_high[0])),
        p_value=float(t.p_value[0]),
        log_ratio=float(t.estimate[0]),
        se=float(t.se[0]),
        df=float(t.df[0]),
        n_baseline=int(b.size),
        n_candidate=int(c.size),
    )


@dataclass(frozen=True)
class ComparisonResult:
    """``compute_comparison``'s result: ``ratio > 1`` means the candidate is better; the CI
    and p-value are NaN with fewer than ``MIN_UNITS`` values on a side or no variance."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    log_ratio: float
    se: float
    df: float
    n_baseline: int
    n_candidate: int


# ------------------------------------------------------- per-label locations


@dataclass(frozen=True)
class LocationCIs:
    """``compute_location_cis``' result per group: ``estimate`` (the mean over runs of the
    run means of the log values), its CI bounds (log scale), ``se``, ``df``, and whether
    a run level entered (``runs_covered``)."""

    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    se: np.ndarray
    df: np.ndarray
    runs_covered: np.ndarray


def compute_location_cis(
    values: ArrayLike, groups: ArrayLike, runs: ArrayLike, *, n_groups: int, confidence: float = 0.95
) -> LocationCIs:
    """The CI of one label's location from its units (log process medians), hierarchically.

    Args:
        values: one log value per unit (a worker process's log median).
        groups: the group (label, case, metric) of each unit.
        runs: the run of each unit.
        n_groups: the number of groups.

    Returns:
        ``LocationCIs``: the one-sample form of ``compute_hierarchical_tests`` (no
        moderation, nothing borrowed): with two or more runs the run-level component is
        in the interval; with one, the interval covers the processes of that run only
        (``runs_covered`` False). NaN with fewer than ``MIN_UNITS`` units.
    """
    y = np.asarray(values, dtype=np.float64)
    ow = compute_oneway(y, np.asarray(groups), np.zeros(y.size, np.int64), np.asarray(runs), n_rows=n_groups, n_sides=1)
    t = compute_hierarchical_tests(ow, higher_is_better=np.ones(n_groups, bool), paired=True, confidence=confidence)
    return LocationCIs(
        estimate=t.estimate, ci_low=t.ci_low, ci_high=t.ci_high, se=t.se, df=t.df,
        runs_covered=ow.df_between > 0,
    )


# ----------------------------------------------------------------- multiple comparisons


def adjust_pvalues(p: ArrayLike, method: str = "bh") -> np.ndarray:
    """P-values adjusted for multiple comparisons; NaN entries stay NaN and do not count.

    Args:
        p: raw p-values in [0, 1] (NaN for comparisons without a test).
        method: ``"bh"`` (Benjamini & Hochberg 1995: controls the false discovery rate,
            valid for independent or positively dependent tests; the default, because an
            article is a list of discoveries, and a few false ones among many true ones
            cost less than missing the true ones, which the family-wise control of Holm
            does with 2–5 processes a side) or ``"holm"`` (Holm 1979: controls the
            family-wise error rate under any dependence).

    Returns:
        The adjusted p-values, same shape as ``p``, each in [0, 1] and never below its
        raw value. Holm: the ``i``-th smallest of ``m`` becomes
        ``max_{j<=i} min(1, (m - j + 1) p_(j))``. BH: ``min_{j>=i} min(1, m p_(j) / j)``;
        this equals ``scipy.stats.false_discovery_control(p, method="bh")``.
    """
    if method not in ("holm", "bh"):
        raise ValueError(f"method must be 'holm' or 'bh', not {method!r}")
    arr = np.asarray(p, dtype=np.float64)
    out = np.full(arr.shape, np.nan)
    flat = arr.ravel()
    ok = np.flatnonzero(~np.isnan(flat))
    m = ok.size
    if m == 0:
        return out
    vals = flat[ok]
    if np.any((vals < 0) | (vals > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(vals, kind="stable")
    ranked = vals[order]
    i = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - i + 1) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ranked / i)[::-1])[::-1]
    res = np.empty(m)
    res[order] = np.maximum(adj, ranked)  # m p / i rounds below p when i = m
    flat_out = out.ravel()
    flat_out[ok] = res
    return flat_out.reshape(arr.shape)


# ----------------------------------------------------------------------------- verdict


def compute_verdict(
    ratio: float, ci_low: float, ci_high: float, p_adjusted: float, *, noise: float = 0.01,
    equivalence: float = EQUIVALENCE, alpha: float = 0.05,
) -> Verdict:
    """Better / worse / equivalent / inconclusive for a row that was tested.

    Args:
        ratio, ci_low, ci_high: the oriented ratio (> 1 is better) and the CI shown beside
            the verdict (``compute_display_level``: 95%, or the adjusted level where the
            corrected test needs it).
        p_adjusted: the p-value after the article's false-discovery-rate control.
        noise: the noise band ``b``: a ratio within ``[1/(1+b), 1+b]`` is no change worth
            reporting. Bands are symmetric on log scale, so swapping the sides swaps
            better and worse exactly.
        equivalence: the equivalence band ``e``: a CI inside ``[1/(1+e), 1+e]`` rules out
            a change beyond ±e (two one-sided tests at the CI's level, Schuirmann 1987).
        alpha: the significance level for ``p_adjusted``.

    Returns:
        ``Verdict.BETTER`` / ``Verdict.WORSE`` when ``p_adjusted < alpha`` and the whole
        CI lies above ``1 + b`` / below ``1/(1 + b)``; else ``Verdict.EQUIVALENT`` when
        the CI lies inside the equivalence band; else ``Verdict.INCONCLUSIVE`` (also for a
        row without a finite CI or p-value: rows with too few units, deterministic values
        or no ratio get their verdicts from ``reporter.model.compare`` before any test).
    """
    if not (np.isfinite(ratio) and np.isfinite(ci_low) and np.isfinite(ci_high) and np.isfinite(p_adjusted)):
        return Verdict.INCONCLUSIVE
    upper = 1.0 + noise
    if p_adjusted < alpha and ci_low > upper:
        return Verdict.BETTER
    if p_adjusted < alpha and ci_high < 1.0 / upper:
        return Verdict.WORSE
    if ci_low >= 1.0 / (1.0 + equivalence) and ci_high <= 1.0 + equivalence:
        return Verdict.EQUIVALENT
    return Verdict.INCONCLUSIVE


def compute_display_level(p_value: ArrayLike, p_adjusted: ArrayLike, *, correction: str = "bh", alpha: float = 0.05,
                          confidence: float = 0.95) -> np.ndarray:
    """Per tested row, the level of the CI shown beside its verdict, so that the two agree.

    A row's marginal 95% CI can exclude 1 while its corrected p-value is not significant
    (or the other way round). With ``m`` tested rows of which ``R`` are selected
    (``p_adjusted < alpha``), the level ``L = 1 - max(R, 1)·alpha/m`` (Benjamini–Hochberg;
    Holm: ``1 - alpha/(m - R + 1)``) separates them exactly: every selected row's p-value
    is at most ``1 - L`` and every other row's above it, so at level ``L`` the selected
    rows' CIs exclude 1 and the others' hold it. For the selected rows these are the
    false-coverage-rate-adjusted intervals of Benjamini & Yekutieli (2005), which cover
    their true ratios with FCR at most ``alpha``. Returns ``L`` for the selected rows and
    for rows whose marginal CI would exclude 1 unselected; ``confidence`` for the others
    (their marginal CI already agrees); NaN for untested rows.
    """
    p = np.asarray(p_value, dtype=np.float64)
    q = np.asarray(p_adjusted, dtype=np.float64)
    tested = np.isfinite(p) & np.isfinite(q)
    m = int(tested.sum())
    if m == 0:
        return np.full(p.shape, np.nan)
    selected = tested & (q < alpha)
    r = int(selected.sum())
    level = 1 - alpha / (m - r + 1) if correction == "holm" else 1 - max(r, 1) * alpha / m
    level = max(level, confidence)
    disagree = tested & ~selected & (p < 1 - confidence)
    out = np.where(selected | disagree, level, confidence)
    return np.where(tested, out, np.nan)


# ---------------------------------------------------------------------------- geomean


@dataclass(frozen=True)
class Geomean:
    """The geometric mean of per-case ratios, with a CI over replicate units.

    ``ratio`` (> 1: the candidate is better), ``ci_low``/``ci_high``, ``n_cases`` (the
    cases it averages), ``family`` (``"all"`` for the article's overall one), ``n_units``
    (the replicate units its CI rests on: rounds when paired, else processes or runs per
    side, the smaller side), ``verdict`` and ``analysis`` (``Verdict``/``Analysis``
    values), ``mde`` (as for a row), ``p_value`` and ``run_level``.
    """

    ratio: float
    ci_low: float
    ci_high: float
    n_cases: int
    family: str = "all"
    n_units: int = 0
    verdict: str = Verdict.TOO_FEW.value
    analysis: str = Analysis.ESTIMATE.value
    mde: float = float("nan")
    p_value: float = float("nan")
    run_level: str = "none"


def compute_percentiles(values: np.ndarray, qs: Sequence[float] = (0.5, 0.95, 0.99)) -> list[float]:
    """Sample quantiles (Hyndman & Fan definition 7, numpy's default) of pooled latency samples.

    Descriptive only: the ratio, CI and verdict of a latency case are compare_labels'.
    """
    if values.size == 0:
        return [np.nan for _ in qs]
    return [float(v) for v in np.quantile(values, qs)]
