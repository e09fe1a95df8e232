"""The statistics' validation figures: coverage, A/A false calls, power, and the shipped CPU runs.

    PYTHONPATH=$PWD python benchmarks/stats_validation.py [--articles N] [--runs runs]

Prints (every simulated input is seeded and synthetic, see ``tests/stats_sim.py``):

* 95% CI coverage of a case ratio per design (1–4 runs, 2–6 processes a side) and sample
  noise (normal, heavy-tailed, bimodal), with run effects (for 2+ runs), effects shared by
  every case of a process, and per-case noise differing tenfold; and the same with one run
  a side whose run effects are not seen, with and without a run level borrowed from a
  third label with 3 runs;
* one run a side borrowing from a pool a third of whose runs were recorded with another
  timing method (10% per case): coverage and CI width with and without the method filter;
* a run effect shared by every case (3 runs a side): A/A rows called at run σ 3%, planted
  5% rows called at run σ 1%;
* A/A: the share of rows called better/worse and the geomean CI's coverage of 1.0;
* power at a planted 5% change (3 processes a side, 1% between processes, 2% within),
  with the false discovery proportion;
* every A/A pair of the archive per device: rows called (the false-call rate) and the
  geomean's shift, as the articles quote them;
* the shipped CPU A/A pairs (each CPU label's runs against each other, ``LABEL@RUN``) and
  the CPU 2.13 vs 2.14 comparison's median CI log half-width against the previous model
  (Welch on process medians, runs ignored), which is recomputed here with scipy.

About 1–2 minutes with the default of 200 simulated articles per design.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sst

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from reporter.model.aa import aa_figures  # noqa: E402
from reporter.model.compare import _ranked, compare_labels  # noqa: E402
from reporter.article.config import apply_set_aside, load_config  # noqa: E402
from reporter.data.load import load_archive  # noqa: E402
from stats_sim import Design, analyse, coverage, mc_error, simulate  # noqa: E402

CPU_LABELS = ("torch-2.13.0-cpu", "torch-2.14.1-cpu")


def simulations(n: int) -> None:
    rng = np.random.default_rng(20261202)
    print("95% CI coverage of a case ratio (12 cases an article, 30% with a planted 5% change)")
    print(f"{'runs':>4} {'procs':>5} {'noise':>8} {'coverage':>9} {'±MC':>6}  (MC error counting articles, not rows)")
    for runs, procs in [(1, 2), (1, 3), (1, 6), (2, 2), (2, 3), (3, 3), (4, 2), (4, 6)]:
        for noise in ("normal", "heavy", "bimodal"):
            run = 0.02 if runs > 1 else 0.0
            d = Design(runs=runs, processes=procs, cases=12, run_shared=run, run_case=run / 2, proc_shared=0.01,
                       noise=noise, planted=np.log(1.05), planted_share=0.3)
            art = simulate(rng, d, n)
            c = coverage(analyse(art), art)
            print(f"{runs:>4} {procs:>5} {noise:>8} {c:>9.3f} {mc_error(c, n):>6.3f}")
    print("\nOne run a side with run effects (2% shared, 1% per case): what the note 'run level not covered' means")
    for pool in (0, 3):
        d = Design(runs=1, processes=3, cases=12, run_shared=0.02, run_case=0.01, proc_shared=0.01, pool_runs=pool)
        art = simulate(rng, d, n)
        res = analyse(art)
        geo = np.mean((res.geo_low <= 0) & (0 <= res.geo_high))
        what = f"borrowed from a label with {pool} runs" if pool else "not covered"
        print(f"  run level {what}: coverage {coverage(res, art):.3f}, A/A rows called {res.called.mean():.2%}, "
              f"geomean covers 1.0 in {geo:.1%}")

    print("\nOne run a side, run level borrowed from 6 runs of a third label, 2 of them (a third) recorded with")
    print("another timing method that moves each case's times by 10%")
    d = Design(runs=1, processes=3, cases=12, run_shared=0.02, run_case=0.01, proc_shared=0.01, pool_runs=6,
               pool_foreign=1 / 3, foreign_shift=np.log(1.10), planted=np.log(1.05), planted_share=0.3)
    art = simulate(rng, d, n)
    clean = simulate(rng, Design(**{**d.__dict__, "pool_foreign": 0.0, "pool_runs": 4}), n)
    for what, res, a in (("4 same-method runs only, no foreign run at all", analyse(clean), clean),
                         ("the same-method runs of the mixed pool (the reporter)", analyse(art), art),
                         ("every run of the mixed pool (methods not told apart)", analyse(art, same_method=False), art)):
        width = np.nanmedian(res.ci_high - res.ci_low) / 2
        print(f"  {what}: coverage {coverage(res, a):.3f}, median CI log half-width {width:.3f}")

    print("\nA run effect shared by every case of a run, 3 runs x 3 processes a side, 40 cases")
    for sd, planted in ((0.03, 0.0), (0.01, np.log(1.05)), (0.03, np.log(1.05))):
        d = Design(runs=3, processes=3, cases=40, run_shared=sd, run_case=0.0, proc_shared=0.01, planted=planted,
                   planted_share=0.3 if planted else 0.0)
        art = simulate(rng, d, n)
        res = analyse(art)
        null = art.truth == 0
        line = f"  run σ {sd:.0%}: rows without a change called {res.called[null].mean():.2%}"
        if planted:
            line += f"; planted 5% rows called {res.called[~null].mean():.1%}"
        oracle = known_variance_calls(art, d)
        line += f" (told every variance: {oracle[null].mean():.2%}"
        print(line + (f", {oracle[~null].mean():.1%})" if planted else ")"))

    print("\nA/A: 2 runs x 3 processes a side, run effects 2% shared + 1% per case, process effects 1% shared")
    d = Design(runs=2, processes=3, cases=30, run_shared=0.02, run_case=0.01, proc_shared=0.01)
    art = simulate(rng, d, 3 * n)
    res = analyse(art)
    geo = np.mean((res.geo_low <= 0) & (0 <= res.geo_high))
    print(f"  rows called better/worse: {res.called.mean():.2%} of {res.called.size} "
          f"(articles with any call: {(res.called.sum(axis=1) > 0).mean():.1%})")
    print(f"  geomean CI covers 1.0: {geo:.1%} of {3 * n} articles (±{mc_error(geo, 3 * n):.1%})")

    print("\nPower: planted 5% in 20% of 100 cases, 1 run x 3 processes a side, 1% between processes, 2% within")
    d = Design(runs=1, processes=3, cases=100, proc_shared=0.0, proc_case=(0.01, 0.01), within=0.02,
               planted=np.log(1.05), planted_share=0.2)
    art = simulate(rng, d, max(n // 4, 20))
    res = analyse(art)
    planted = art.truth > 0
    fdp = (res.called & ~planted).sum() / max(res.called.sum(), 1)
    print(f"  planted rows called: {res.called[planted].mean():.1%}; false discovery proportion: {fdp:.2%}")


def known_variance_calls(art, d: Design, noise: float = 0.01, alpha: float = 0.05) -> np.ndarray:
    """Rows called by a test told every variance of the simulation: a ceiling for any method on
    these data. Each case's ratio is the difference of the sides' mean log medians; its
    variance is what the design's shared run and process effects, the case's own process
    effect (its drawn SD) and a median's sampling add; z test, Benjamini-Hochberg over the
    article's rows, and the 95% interval beyond the noise band, as a verdict asks."""
    n, K, _, R, P = art.y.shape
    est = art.y[:, :, 0].mean(axis=(2, 3)) - art.y[:, :, 1].mean(axis=(2, 3))  # > 0: the candidate faster
    median_var = (np.pi / 2) * d.within**2 / d.samples  # a median of normal samples
    var = (2 * (d.run_shared**2 + d.run_case**2) / R + 2 * d.proc_shared**2 / (R * P)
           + 2 * (art.case_sd**2 + median_var) / (R * P))
    se = np.sqrt(var)
    p = 2 * sst.norm.sf(np.abs(est) / se)
    band, half = np.log1p(noise), 1.959964 * se
    beyond = (est - half > band) | (est + half < -band)
    q = np.stack([sst.false_discovery_control(row) for row in p])
    return (q < alpha) & beyond


def previous_model_half_widths(archive, baseline: str, candidate: str) -> np.ndarray:
    """The previous reporter's CIs: Welch's t on log process medians, runs ignored."""
    ub, uc = _ranked(archive.select(baseline)), _ranked(archive.select(candidate))
    out = []
    for (case, metric), gb in ub.groupby(["case_id", "metric"]):
        gc = uc[(uc["case_id"] == case) & (uc["metric"] == metric)]
        if len(gb) < 2 or len(gc) < 2 or not (np.all(gb["median"] > 0) and np.all(gc["median"] > 0)):
            continue
        lb, lc = np.log(gb["median"].to_numpy()), np.log(gc["median"].to_numpy())
        if lb.var() == 0 and lc.var() == 0:
            out.append((case, metric, 0.0))
            continue
        ci = sst.ttest_ind(lc, lb, equal_var=False).confidence_interval(0.95)
        out.append((case, metric, (ci.high - ci.low) / 2))
    return out


def aa_by_device(archive) -> None:
    """Every A/A pair of the archive (reporter.model.aa), per device: the figures articles quote."""
    print("\nA/A pairs of the archive per device (the same stack recorded twice, one timing method)")
    for device, f in aa_figures(archive, max_pairs=10**6).items():
        print(f"  {device}: {f.pairs} pairs, {f.rows_called} of {f.rows_tested} timed rows called "
              f"({f.false_call_rate:.2%}); geomean shift median {f.median_shift:.2%}, largest {f.largest_shift:.2%}; "
              f"pairs shifted beyond ±3%: {f.share_at_least(1.03):.0%}")


def shipped(runs_dir: str) -> None:
    # The runs the site's config sets aside are left out, as every page leaves them out.
    archive, _, _ = apply_set_aside(load_archive(runs_dir), load_config(ROOT / "imagebench.toml", explicit=False))
    aa_by_device(archive)
    print("\nShipped CPU A/A pairs (one run against another of the same label)")
    for label in CPU_LABELS:
        ids = sorted(archive.runs.loc[archive.runs["label"].astype(str) == label, "run_id"].astype(str))
        for x, y in itertools.combinations(ids, 2):
            c = compare_labels(archive, f"{label}@{x}", f"{label}@{y}")
            called = int(c.rows["verdict"].isin(["better", "worse"]).sum())
            g = c.geomean
            print(f"  {label} {x} vs {y}: {called} of {len(c.rows)} rows called; geomean {g.ratio:.3f} "
                  f"[{g.ci_low:.3f}, {g.ci_high:.3f}] covers 1.0: {g.ci_low <= 1 <= g.ci_high} (run level {g.run_level})")
    b, c_ = CPU_LABELS
    t0 = time.perf_counter()
    c = compare_labels(archive, b, c_)
    elapsed = time.perf_counter() - t0
    rows = c.rows
    now = dict(zip(zip(rows["case_id"], rows["metric"]), np.log(rows["ci_high"] / rows["ci_low"]) / 2))
    before = {(cs, m): h for cs, m, h in previous_model_half_widths(archive, b, c_)}
    both = [k for k in before if k in now and np.isfinite(now[k])]
    old_all = np.median(list(before.values()))
    old = np.median([before[k] for k in both])
    new = np.median([now[k] for k in both])
    print(f"\nShipped CPU {b} vs {c_} ({c.analysis} analysis, {elapsed:.1f} s):")
    print(f"  previous model: median CI log half-width {old_all:.3f} over its {len(before)} rows")
    print(f"  over the {len(both)} rows with a CI in both: previous {old:.3f}, now {new:.3f} "
          f"({1 - new / old:.0%} narrower)")
    called = rows[rows["verdict"].isin(["better", "worse"])]
    for r in called.itertuples():
        print(f"  called {r.verdict}: {r.case_id} ({r.metric}) {r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]")
    print(f"  rows called: {len(called)}; geomean {c.geomean.ratio:.3f} "
          f"[{c.geomean.ci_low:.3f}, {c.geomean.ci_high:.3f}]; median row MDE {c.mde:.1%}")
    if c.advice:
        a = c.advice
        print(f"  noisiest family {a.family}: median MDE {a.mde:.1%}; to resolve ±2%: "
              f"{a.processes or 'no number of'} processes, {a.runs or 'no number of'} runs a side")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=200, help="simulated articles per design (default 200)")
    parser.add_argument("--runs", default=str(ROOT / "runs"), help="the archive with the shipped CPU runs")
    args = parser.parse_args()
    t0 = time.perf_counter()
    simulations(args.articles)
    shipped(args.runs)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
