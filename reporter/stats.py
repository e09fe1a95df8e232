"""Statistics of recorded samples: summaries, comparisons, corrections, verdicts (pure, no I/O).

Every function here takes numpy arrays and returns numbers or dataclasses; nothing reads
files, prints or knows about pandas. The vectorised forms (``compute_grouped_summaries``,
``compute_log_ratio_tests``) serve the whole archive at once; the scalar forms
(``compute_summary``, ``compute_comparison``) wrap them for one group, which is what
tests and readers usually want.

The unit of replication is the *worker process* (a unit is one ``(run_id, process)``
pair), not the sample: on an H200 the same stack's process medians moved 25% between
processes while each process's own 95% CI of its median was about ±2.3%, so intervals
built on pooled samples are far too narrow (Kalibera & Jones 2013 reach the same
conclusion for repeated VM invocations).

References
----------
* B. L. Welch, "The generalization of 'Student's' problem when several different
  population variances are involved", Biometrika 34 (1947) 28–35.
* F. E. Satterthwaite, "An approximate distribution of estimates of variance
  components", Biometrics Bulletin 2 (1946) 110–114.
* R. S. Woodruff, "Confidence intervals for medians and other position measures",
  JASA 47 (1952) 635–646; C. A. Francisco & W. A. Fuller, "Quantile estimation with a
  complex survey design", Annals of Statistics 19 (1991) 454–469.
* R. J. Hyndman & Y. Fan, "Sample quantiles in statistical packages", The American
  Statistician 50 (1996) 361–365 (definition 7, numpy's default, is used throughout).
* S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
  Journal of Statistics 6 (1979) 65–70.
* Y. Benjamini & Y. Hochberg, "Controlling the false discovery rate", JRSS B 57 (1995)
  289–300.
* P. J. Fleming & J. J. Wallace, "How not to lie with statistics: the correct way to
  summarize benchmark results", CACM 29 (1986) 218–221.
* T. Kalibera & R. Jones, "Rigorous benchmarking in reasonable time", ISMM 2013.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri, stdtr, stdtrit

VERDICT_BETTER = "better"
VERDICT_WORSE = "worse"
VERDICT_SAME = "no significant difference"
VERDICT_INCONCLUSIVE = "inconclusive"
VERDICTS = (VERDICT_BETTER, VERDICT_WORSE, VERDICT_SAME, VERDICT_INCONCLUSIVE)

# Fewer independent processes than this on a side and the between-process variation is
# not estimated well enough for the ordinary noise band; the wide band applies instead.
MIN_UNITS = 3


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
    within-process interval only. Coverage in simulation is about 95% with five or more
    processes and conservative (97–100%) with two to four.

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

    order = np.lexsort((x, g))
    xs = x[order]
    n = np.bincount(g, minlength=G)
    start = np.cumsum(n) - n
    has = n > 0

    def quantile(q: np.ndarray | float) -> np.ndarray:
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

    median = quantile(0.5)
    q1 = quantile(0.25)
    q3 = quantile(0.75)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(g, weights=x, minlength=G) / n
        dev = x - mean[g]
        ss = np.bincount(g, weights=dev * dev, minlength=G)
        sd = np.sqrt(ss / (n - 1))
        cv = np.where(n > 1, np.where(sd == 0, 0.0, sd / np.abs(mean)), np.nan)

    # Clusters: one per distinct (group, unit).
    umin = int(u.min()) if u.size else 0
    span = int(u.max()) - umin + 1 if u.size else 1
    ukeys, uinv = np.unique(g * span + (u - umin), return_inverse=True)
    ugroup = ukeys // span
    k = np.bincount(ugroup, minlength=G)
    mid = np.where(x < median[g], 1.0, np.where(x == median[g], 0.5, 0.0))
    a_u = np.bincount(uinv, weights=mid, minlength=ukeys.size)
    n_u = np.bincount(uinv, minlength=ukeys.size).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.bincount(ugroup, weights=a_u, minlength=G) / n
        resid = a_u - p[ugroup] * n_u
        between = np.bincount(ugroup, weights=resid * resid, minlength=G) * k / (k - 1) / (n.astype(np.float64) ** 2)
        srs = p * (1 - p) / n
        var = np.where(k >= 2, np.fmax(between, srs), srs)
        alpha = 1.0 - confidence
        mult = np.where(k >= 2, stdtrit(np.maximum(k - 1, 1), 1 - alpha / 2), ndtri(1 - alpha / 2))
        half = mult * np.sqrt(var)
    ci_low = quantile(np.clip(np.nan_to_num(0.5 - half, nan=0.5), 0.0, 1.0))
    ci_high = quantile(np.clip(np.nan_to_num(0.5 + half, nan=0.5), 0.0, 1.0))
    return GroupedSummaries(
        median=median,
        ci_low=ci_low,
        ci_high=ci_high,
        mean=mean,
        q1=q1,
        q3=q3,
        iqr=q3 - q1,
        cv=cv,
        n_samples=n,
        n_units=k,
    )


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


# -------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class ComparisonResult:
    """A candidate against a baseline, oriented so that ``ratio > 1`` means better.

    ``ratio`` is ``exp(d)`` where ``d`` is the difference of the mean log replicate
    values (candidate minus baseline for higher-is-better metrics, baseline minus
    candidate for lower-is-better), ``ci_low``/``ci_high`` its Welch interval,
    ``p_value`` the two-sided Welch test of ``d = 0``, ``se`` and ``df`` its standard
    error and Welch–Satterthwaite degrees of freedom. ``p_value`` is NaN when the
    replicates show no variance at all (nothing to test against) or a side has fewer
    than two replicates; the CI is then NaN too, except that zero variance gives the
    zero-width interval ``[ratio, ratio]``.
    """

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    log_ratio: float
    se: float
    df: float
    n_baseline: int
    n_candidate: int


@dataclass(frozen=True)
class LogRatioTests:
    """``compute_log_ratio_tests``' result: arrays, one entry per comparison."""

    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    log_ratio: np.ndarray
    se: np.ndarray
    df: np.ndarray


def compute_log_ratio_tests(
    n_baseline: ArrayLike,
    mean_baseline: ArrayLike,
    var_baseline: ArrayLike,
    n_candidate: ArrayLike,
    mean_candidate: ArrayLike,
    var_candidate: ArrayLike,
    higher_is_better: ArrayLike,
    *,
    confidence: float = 0.95,
) -> LogRatioTests:
    """Welch t-intervals and t-tests on log scale for many comparisons at once.

    Args:
        n_baseline, n_candidate: replicate counts per side.
        mean_baseline, mean_candidate: means of the log replicate values.
        var_baseline, var_candidate: their sample variances (``ddof=1``; any value when
            the count is below 2).
        higher_is_better: True where the metric is better when higher (throughput),
            False where lower (time, memory).
        confidence: the CI's coverage.

    Returns:
        ``LogRatioTests``: ``ratio = exp(d)`` with ``d`` oriented so that > 0 is better,
        its CI ``exp(d ± t_{df, 1-α/2} · se)``, and the two-sided p-value
        ``2 · P(T_df > |d|/se)`` with ``se² = s_b²/n_b + s_c²/n_c`` and the
        Welch–Satterthwaite ``df = se⁴ / ((s_b²/n_b)²/(n_b-1) + (s_c²/n_c)²/(n_c-1))``
        (Welch 1947; Satterthwaite 1946). These are exactly
        ``scipy.stats.ttest_ind(equal_var=False)`` on the log values.

    Zero variance on both sides (a standard error below ``1e-12`` of the log level,
    which absorbs rounding in the moments of identical values): ``p = 1`` and the CI
    is the point when the means agree; otherwise ``p`` is NaN (no variance to test against: never "significant")
    and the CI is the zero-width ``[ratio, ratio]``. A side with fewer than two
    replicates: the ratio is computed, the CI and p-value are NaN.
    """
    nb = np.asarray(n_baseline, dtype=np.float64)
    nc = np.asarray(n_candidate, dtype=np.float64)
    mb = np.asarray(mean_baseline, dtype=np.float64)
    mc = np.asarray(mean_candidate, dtype=np.float64)
    hib = np.asarray(higher_is_better, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        vb = np.where(nb >= 2, np.asarray(var_baseline, dtype=np.float64), np.nan) / nb
        vc = np.where(nc >= 2, np.asarray(var_candidate, dtype=np.float64), np.nan) / nc
        d = np.where(hib, mc - mb, mb - mc)
        se2 = vb + vc
        se = np.sqrt(se2)
        df = se2 * se2 / (vb * vb / (nb - 1) + vc * vc / (nc - 1))
        tq = stdtrit(df, 1 - (1 - confidence) / 2)  # Student's t quantile
        p = 2 * stdtr(df, -np.abs(d) / se)  # two-sided: 2 P(T_df < -|t|)
        lo = d - tq * se
        hi = d + tq * se
        # Rounding leaves ~1e-16 relative noise in the moments of identical values; a
        # spread below 1e-12 of the log level is no spread (no timer resolves it).
        tiny = 1e-12 * np.fmax(1.0, np.fmax(np.abs(mb), np.abs(mc)))
        zero = se <= tiny
        d = np.where(zero & (np.abs(d) <= tiny), 0.0, d)
        p = np.where(zero, np.where(d == 0, 1.0, np.nan), p)
        lo = np.where(zero, d, lo)
        hi = np.where(zero, d, hi)
        df = np.where(zero, np.nan, df)
        return LogRatioTests(
            ratio=np.exp(d), ci_low=np.exp(lo), ci_high=np.exp(hi), p_value=p, log_ratio=d, se=se, df=df
        )


def compute_comparison(
    baseline: ArrayLike, candidate: ArrayLike, better: str = "lower", *, confidence: float = 0.95
) -> ComparisonResult:
    """Compare two sets of positive replicate values (one per worker process).

    Args:
        baseline: the baseline side's replicate values, e.g. each process's median.
        candidate: the candidate side's.
        better: ``"lower"`` (time, memory) or ``"higher"`` (throughput).
        confidence: the CI's coverage.

    Returns:
        A ``ComparisonResult`` with ``ratio > 1`` meaning the candidate is better:
        baseline/candidate for lower-is-better metrics, candidate/baseline for
        higher-is-better ones. The ratio is the ratio of the geometric means of the
        replicate values, ``exp(mean(log c) - mean(log b))`` (oriented), and its CI
        and p-value are Welch's on the log values (``compute_log_ratio_tests``).

    Why logs: timings are positive and their spread scales with their size, so the
    log makes the noise roughly symmetric and the ratio, not the difference, the
    natural effect; a log-scale interval turns into a ratio interval that is exactly
    inverted by swapping the sides. Why the mean of the log process medians rather than
    their median: the mean has a sampling distribution (Student's t) that gives an
    interval with correct coverage from as few as 3 processes a side, a median of 3–10
    values has none that is useful; the within-process median already discards the
    outlying samples. The point estimate is the centre of its interval, so it always
    lies inside it.

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
    lb, lc = np.log(b), np.log(c)
    r = compute_log_ratio_tests(
        b.size,
        lb.mean(),
        lb.var(ddof=1) if b.size > 1 else np.nan,
        c.size,
        lc.mean(),
        lc.var(ddof=1) if c.size > 1 else np.nan,
        better == "higher",
        confidence=confidence,
    )
    return ComparisonResult(
        ratio=float(r.ratio),
        ci_low=float(r.ci_low),
        ci_high=float(r.ci_high),
        p_value=float(r.p_value),
        log_ratio=float(r.log_ratio),
        se=float(r.se),
        df=float(r.df),
        n_baseline=int(b.size),
        n_candidate=int(c.size),
    )


# ----------------------------------------------------------------- multiple comparisons


def adjust_pvalues(p: ArrayLike, method: str = "holm") -> np.ndarray:
    """P-values adjusted for multiple comparisons; NaN entries stay NaN and do not count.

    Args:
        p: raw p-values in [0, 1] (NaN for comparisons without a test).
        method: ``"holm"`` (Holm 1979: controls the family-wise error rate, valid under
            any dependence) or ``"bh"`` (Benjamini & Hochberg 1995: controls the false
            discovery rate, valid for independent or positively dependent tests).

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
    res[order] = adj
    flat_out = out.ravel()
    flat_out[ok] = res
    return flat_out.reshape(arr.shape)


# ----------------------------------------------------------------------------- verdict


@dataclass(frozen=True)
class Verdict:
    """A comparison's verdict (one of ``VERDICTS``) and a note saying why, or ``""``."""

    verdict: str
    note: str


def compute_verdict(
    ratio: float,
    ci_low: float,
    ci_high: float,
    p_adjusted: float,
    n_baseline: int,
    n_candidate: int,
    *,
    noise: float = 0.01,
    single_band: float = 0.10,
    alpha: float = 0.05,
    min_units: int = MIN_UNITS,
) -> Verdict:
    """Turn a ratio, its CI and its corrected p-value into better / worse / same / inconclusive.

    Args:
        ratio, ci_low, ci_high: the oriented ratio (> 1 is better) and its CI.
        p_adjusted: the p-value after the multiple-comparison correction (NaN: no test).
        n_baseline, n_candidate: worker processes (units) on each side.
        noise: the noise band ``b``: a ratio within ``[1/(1+b), 1+b]`` is no change worth
            reporting (0.01 = ±1%). The band is symmetric on log scale so that swapping
            the sides swaps "better" and "worse" exactly.
        single_band: the wide band used when a side has fewer than ``min_units``
            processes, and the width beyond which an interval is too wide to tell.
        alpha: the significance level for ``p_adjusted``.
        min_units: processes per side needed to estimate between-process variation.

    Returns:
        A ``Verdict``:

        * ``better`` / ``worse``: ``p_adjusted < alpha`` and the whole CI lies above
          ``1 + band`` / below ``1/(1 + band)``, where ``band`` is ``noise`` with at
          least ``min_units`` processes on both sides and ``single_band`` otherwise;
        * ``inconclusive``: no ratio (NaN); or a significant difference whose CI reaches
          into the band (real, but perhaps smaller than noise), which with fewer than
          ``min_units`` processes a side is any significant difference not clearly beyond
          the wide band (it cannot be told from between-process variation); or a
          non-significant one whose CI reaches beyond ``±single_band`` (too noisy to rule
          out a large change);
        * ``no significant difference``: everything else (not significant and the CI
          within ``±single_band``, or, with enough processes, significant and the CI
          within the noise band).

        The note says when the verdict rests on fewer than ``min_units`` processes.
    """
    few = min(n_baseline, n_candidate) < min_units
    band = single_band if few else noise
    notes: list[str] = []
    if few:
        n = min(n_baseline, n_candidate)
        if n <= 1:
            notes.append(
                f"rests on a single process on a side: between-process variation is not measured, "
                f"so better/worse needs a change beyond ±{single_band:.0%}"
            )
        else:
            notes.append(
                f"rests on fewer than {min_units} processes on a side ({n}): "
                f"better/worse needs a change beyond ±{single_band:.0%}"
            )
    if not (np.isfinite(ratio) and np.isfinite(ci_low) and np.isfinite(ci_high)):
        return Verdict(VERDICT_INCONCLUSIVE, "; ".join(["no confidence interval could be computed", *notes]))
    upper = 1.0 + band
    lower = 1.0 / upper
    wide_upper = 1.0 + single_band
    wide_lower = 1.0 / wide_upper
    significant = bool(np.isfinite(p_adjusted) and p_adjusted < alpha)
    if not np.isfinite(p_adjusted) and ci_low == ci_high:
        notes.insert(0, "no variance between replicates: nothing to test against")
    if significant and ci_low > upper:
        return Verdict(VERDICT_BETTER, "; ".join(notes))
    if significant and ci_high < lower:
        return Verdict(VERDICT_WORSE, "; ".join(notes))
    if significant and few:
        notes.insert(0, f"a significant difference, but not clearly beyond ±{band:.0%}")
        return Verdict(VERDICT_INCONCLUSIVE, "; ".join(notes))
    if significant and (ci_low < lower or ci_high > upper):
        notes.insert(0, f"a significant difference whose CI reaches into the ±{band:.0%} noise band")
        return Verdict(VERDICT_INCONCLUSIVE, "; ".join(notes))
    if not significant and (ci_low < wide_lower or ci_high > wide_upper):
        notes.insert(0, f"CI wider than ±{single_band:.0%}: too noisy to tell")
        return Verdict(VERDICT_INCONCLUSIVE, "; ".join(notes))
    if significant:
        notes.insert(0, f"significant, but within the ±{band:.0%} noise band")
    return Verdict(VERDICT_SAME, "; ".join(notes))


# ---------------------------------------------------------------------------- geomean


@dataclass(frozen=True)
class Geomean:
    """The geometric mean of per-case ratios with its CI (NaN with fewer than 2 cases)."""

    ratio: float
    ci_low: float
    ci_high: float
    n_cases: int


def compute_geomean(ratios: ArrayLike, *, confidence: float = 0.95) -> Geomean:
    """Geometric-mean ratio across cases with a Student t-interval over the cases.

    Args:
        ratios: one oriented ratio per case (> 1 better); non-finite or non-positive
            entries are ignored.
        confidence: the CI's coverage.

    Returns:
        ``Geomean(exp(mean(log r)), exp(mean ± t_{K-1} · sd/√K), K)``. The geometric
        mean is the only mean of ratios that does not depend on which side is the
        reference (Fleming & Wallace 1986): swapping the sides inverts it and its CI.

    The interval treats the suite's cases as a sample of the workloads a stack will
    meet, so it answers "how much better is the candidate on workloads like these":
    each log ratio varies by the case's true effect and by its own measurement error,
    and the sample variance of the log ratios estimates both together (the
    random-effects reading of an unweighted mean). A bootstrap over cases would
    estimate the same spread but is too narrow for the 5–20 cases of a typical
    article (it omits the ``K/(K-1)`` and t corrections). Measurement errors shared
    by all cases of one process are not separated out; with few processes a side the
    per-case verdicts carry that caveat.
    """
    r = np.asarray(ratios, dtype=np.float64).ravel()
    r = r[np.isfinite(r) & (r > 0)]
    k = int(r.size)
    if k == 0:
        return Geomean(float("nan"), float("nan"), float("nan"), 0)
    lr = np.log(r)
    m = float(lr.mean())
    if k < 2:
        return Geomean(float(np.exp(m)), float("nan"), float("nan"), k)
    sd = float(lr.std(ddof=1))
    half = float(stdtrit(k - 1, 1 - (1 - confidence) / 2)) * sd / np.sqrt(k)
    return Geomean(float(np.exp(m)), float(np.exp(m - half)), float(np.exp(m + half)), k)


def compute_percentiles(values: np.ndarray, qs: Sequence[float] = (0.5, 0.95, 0.99)) -> list[float]:
    """Sample quantiles (Hyndman & Fan definition 7, numpy's default) of pooled latency samples.

    Descriptive only: the ratio, CI and verdict of a latency case are compare_labels'.
    """
    if values.size == 0:
        return [np.nan for _ in qs]
    return [float(v) for v in np.quantile(values, qs)]
