"""A vectorised simulator of benchmark articles, and the reporter's statistics run on its arrays.

Every number here is synthetic (seeded draws with a known truth), for the coverage,
false-call and power checks of ``tests/test_stats_simulation.py`` and the full figures of
``benchmarks/stats_validation.py``. ``analyse`` applies exactly the sequence of
``reporter.model.compare._compare_rows`` (one-way layout by run, moderation with the
within-process covariate, hierarchical tests, Benjamini–Hochberg, verdicts) and the
per-unit geomean of ``reporter.model.compare._geomean_of``, to many articles at once.

The model of one article: ``K`` cases, two sides, ``R`` runs a side, ``P`` processes a run,
``S`` samples a process. A log sample is the case's level + the side's true effect + a
run effect (shared by every case of the run, plus a per-case part) + a process effect
(shared by every case of the process, plus a per-case part, whose size differs between
cases by a factor of ten) + within-process noise (normal, Student t with 3 df, or a
bimodal mixture: 30% of samples in a second mode 8% slower).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from reporter.model.stats import (
    moderated_components,
    adjust_pvalues,
    compute_hierarchical_tests,
    compute_oneway,
    compute_run_variance,
    compute_verdict,
)


@dataclass(frozen=True)
class Design:
    runs: int = 1
    processes: int = 3
    samples: int = 15
    cases: int = 40
    run_shared: float = 0.0  # SD (log) of a run effect shared by all cases of the run
    run_case: float = 0.0  # SD of a run effect specific to a case
    proc_shared: float = 0.01  # SD of a process effect shared by all cases of the process
    proc_case: tuple[float, float] = (0.005, 0.05)  # per-case SD, log-uniform between these
    within: float = 0.02  # SD of the within-process noise
    noise: str = "normal"  # normal, heavy, bimodal
    planted: float = 0.0  # true log ratio of the planted cases (> 0: the candidate is faster)
    planted_share: float = 0.0  # share of cases with the planted change
    pool_runs: int = 0  # runs of a third label on the same machine, to borrow the run level from
    pool_foreign: float = 0.0  # share of those runs recorded with another timing method ...
    foreign_shift: float = 0.0  # ... which moves each case's times by this much (log; per case, sign drawn)


@dataclass
class Articles:
    """Simulated unit medians: ``y[a, k, side, r, p]`` (log), the within-process covariate,
    the true log ratio per case and the borrow pool ``pool[a, k, r, p]``."""

    y: np.ndarray
    spread: np.ndarray
    truth: np.ndarray
    pool: np.ndarray | None
    pool_foreign: np.ndarray | None = None  # per pool run: recorded with another timing method
    case_sd: np.ndarray | None = None  # (a, k): the SD of each case's own process effect, as drawn


def _noise(rng: np.random.Generator, shape: tuple[int, ...], kind: str, sd: float) -> np.ndarray:
    if kind == "normal":
        return sd * rng.standard_normal(shape)
    if kind == "heavy":
        return sd * rng.standard_t(3, shape) / np.sqrt(3.0)
    if kind == "bimodal":
        return sd * rng.standard_normal(shape) + np.log(1.08) * (rng.random(shape) < 0.3)
    raise ValueError(kind)


def _units(rng: np.random.Generator, d: Design, n: int, sides: int, runs: int, case_sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log medians and their within-process sampling-variance proxy, shape (n, K, sides, runs, P)."""
    K, P, S = d.cases, d.processes, d.samples
    shape = (n, K, sides, runs, P)
    run = d.run_shared * rng.standard_normal((n, 1, sides, runs, 1)) + d.run_case * rng.standard_normal((n, K, sides, runs, 1))
    proc = d.proc_shared * rng.standard_normal((n, 1, sides, runs, P)) + case_sd[:, :, None, None, None] * rng.standard_normal(shape)
    samples = _noise(rng, (*shape, S), d.noise, d.within)
    med = np.median(samples, axis=-1)
    mad = np.median(np.abs(samples - med[..., None]), axis=-1)
    spread = (np.pi / 2) * (1.4826 * mad) ** 2 / S
    return run + proc + med, spread


def simulate(rng: np.random.Generator, d: Design, n_articles: int) -> Articles:
    K = d.cases
    lo, hi = np.log(d.proc_case)
    case_sd = np.exp(rng.uniform(lo, hi, (n_articles, K)))
    y, spread = _units(rng, d, n_articles, 2, d.runs, case_sd)
    truth = np.where(rng.random((n_articles, K)) < d.planted_share, d.planted, 0.0)
    y[:, :, 1] -= truth[:, :, None, None]  # times: the candidate is faster by the planted ratio
    pool = _units(rng, d, n_articles, 1, d.pool_runs, case_sd)[0][:, :, 0] if d.pool_runs >= 2 else None
    foreign = None
    if pool is not None and d.pool_foreign > 0:
        # The last runs of the pool were recorded with another method: each case moves by
        # ±foreign_shift (a timer change moves short and long kernels differently).
        foreign = np.arange(d.pool_runs) >= d.pool_runs - round(d.pool_runs * d.pool_foreign)
        sign = np.where(rng.random((n_articles, K)) < 0.5, -1.0, 1.0)
        pool = pool + (d.foreign_shift * sign)[:, :, None, None] * foreign[None, None, :, None]
    return Articles(y=y, spread=spread, truth=truth, pool=pool, pool_foreign=foreign, case_sd=case_sd)


@dataclass
class Results:
    """Per row (article, case): ratio, CI, p, adjusted p, verdict; per article: the geomean."""

    log_ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_adjusted: np.ndarray
    called: np.ndarray
    geo: np.ndarray
    geo_low: np.ndarray
    geo_high: np.ndarray


def analyse(art: Articles, *, noise: float = 0.01, alpha: float = 0.05, moderate: bool = True,
            same_method: bool = True) -> Results:
    """The reporter's statistics on every simulated article (time metrics: lower is better).

    ``same_method``: borrow only from the pool's runs of the compared runs' timing method,
    as ``reporter.model.compare._borrow_pool`` does (False: from every run of the pool).
    """
    if same_method and art.pool is not None and art.pool_foreign is not None:
        keep = ~art.pool_foreign
        art = Articles(art.y, art.spread, art.truth, art.pool[:, :, keep] if keep.sum() >= 2 else None)
    n, K, _, R, P = art.y.shape
    shape = (n, K)
    out = {k: np.full(shape, np.nan) for k in ("est", "lo", "hi", "padj")}
    called = np.zeros(shape, bool)
    geo = np.full((3, n), np.nan)
    rows = np.broadcast_to(np.arange(K)[:, None, None, None], (K, 2, R, P)).ravel()
    sides = np.broadcast_to(np.arange(2)[None, :, None, None], (K, 2, R, P)).ravel()
    groups = np.broadcast_to(np.arange(R)[None, None, :, None], (K, 2, R, P)).ravel()
    lower = np.zeros(K, bool)
    for a in range(n):
        ow = compute_oneway(art.y[a].ravel(), rows, sides, groups, n_rows=K)
        x = np.log(art.spread[a].mean(axis=(1, 2, 3)))
        within, between = None, None
        if moderate:
            # Effects shared by every case of a unit are one realisation for all rows: take
            # them out before borrowing strength, and add their own variance back.
            o = art.y[a]
            z = (o - o.mean(axis=(2, 3), keepdims=True)).mean(axis=0)  # (side, R, P)
            spec = compute_oneway((o - z[None]).ravel(), rows, sides, groups, n_rows=K)
            zs = np.broadcast_to(np.arange(2)[:, None, None], (2, R, P)).ravel()
            zg = np.broadcast_to(np.arange(R)[None, :, None], (2, R, P)).ravel()
            sh = compute_oneway(z.ravel(), np.zeros(zs.size, int), zs, zg, n_rows=1)
            within, between = moderated_components(spec, sh, x)
        borrowed = None
        if R == 1 and art.pool is not None:
            Rp = art.pool.shape[2]
            pr = np.broadcast_to(np.arange(K)[:, None, None], (K, Rp, P)).ravel()
            pg = np.broadcast_to(np.arange(Rp)[None, :, None], (K, Rp, P)).ravel()
            q = art.pool[a]
            qz = np.median(q - q.mean(axis=(1, 2), keepdims=True), axis=0)  # (Rp, P): the lenders' robust shared effect
            pow_ = compute_oneway((q - qz[None]).ravel(), pr, np.zeros_like(pr), pg, n_rows=K, n_sides=1)
            qsh = compute_oneway(qz.ravel(), np.zeros(qz.size, int), np.zeros(qz.size, int), np.repeat(np.arange(Rp), P),
                                 n_rows=1, n_sides=1)
            borrowed = compute_run_variance(pow_, *moderated_components(pow_, qsh, x))
        t = compute_hierarchical_tests(ow, higher_is_better=lower, paired=False, within=within, between=between,
                                       borrowed=borrowed)
        padj = adjust_pvalues(t.p_value, "bh")
        out["est"][a], out["lo"][a], out["hi"][a], out["padj"][a] = t.estimate, t.ci_low, t.ci_high, padj
        called[a] = [compute_verdict(np.exp(e), np.exp(lo_), np.exp(hi_), p, noise=noise, alpha=alpha).is_call
                     for e, lo_, hi_, p in zip(t.estimate, t.ci_low, t.ci_high, padj)]
        # The per-unit geomean: each unit's mean residual over the cases.
        o = -art.y[a]  # oriented: lower is better
        resid = o - o.mean(axis=(2, 3), keepdims=True)
        score = resid.mean(axis=0)  # (side, R, P)
        gs = np.broadcast_to(np.arange(2)[:, None, None], (2, R, P)).ravel()
        gg = np.broadcast_to(np.arange(R)[None, :, None], (2, R, P)).ravel()
        gow = compute_oneway(score.ravel(), np.zeros(gs.size, int), gs, gg, n_rows=1)
        gborrow = None
        if R == 1 and art.pool is not None:
            pres = art.pool[a] - art.pool[a].mean(axis=(1, 2), keepdims=True)
            ps = pres.mean(axis=0).ravel()
            Rp = art.pool.shape[2]
            pg = np.repeat(np.arange(Rp), P)
            pow_ = compute_oneway(ps, np.zeros(ps.size, int), np.zeros(ps.size, int), pg, n_rows=1, n_sides=1)
            gborrow = compute_run_variance(pow_, (pow_.ms_within, pow_.df_within), (pow_.ms_between, pow_.df_between))
        gt = compute_hierarchical_tests(gow, higher_is_better=[True], paired=False, borrowed=gborrow)
        m = float(np.mean(t.estimate))
        tq = stdtrit(gt.df[0], 0.975)
        geo[:, a] = (m, m - tq * gt.se[0], m + tq * gt.se[0])
    return Results(out["est"], out["lo"], out["hi"], out["padj"], called, geo[0], geo[1], geo[2])


def coverage(res: Results, art: Articles) -> float:
    ok = np.isfinite(res.ci_low)
    covered = (res.ci_low <= art.truth) & (art.truth <= res.ci_high)
    return float(covered[ok].mean())


def geomean_truth(art: Articles) -> np.ndarray:
    return art.truth.mean(axis=1)


def mc_error(p: float, n: int) -> float:
    """The Monte Carlo standard error of a proportion ``p`` from ``n`` independent trials."""
    return float(np.sqrt(p * (1 - p) / n))


