"""How well the trend pages' change-point method finds steps, on series with recorded noise.

Simulates series of versions (default 6 versions, 3 runs each) whose noise comes from the
recorded CPU runs: per case, the spread of worker processes within a run and of runs
within a label, measured on the labels given (default: the CPU labels with three runs,
torch-2.13.0-cpu and torch-2.14.1-cpu, and the interleaved series torch-2.10.0 ...
torch-2.14.1; a case of a label with one run draws its run-to-run spread from the former). Each simulated version is summarised
by the model's own interval (``reporter.model.stats.compute_location_cis``) and turned
into a series point the way the pages do (``changepoints.point_of_summary``), so the
figures include every approximation the pages make.

Prints, per method: the share of flat series with a step reported, and the share of
series with one planted step (±5% by default, at a random version) found at the right
version with the right sign, and how often such a series had another, false step.

    python benchmarks/changepoints.py [--runs runs] [--series 2000] [--steps 0.05] [--since 20261207T1200]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
from scipy.special import stdtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporter.article.config import apply_set_aside, load_config, restrict  # noqa: E402
from reporter.data.load import load_archive  # noqa: E402
from reporter.model.changepoints import ALPHA, POOLED_ALPHA, compute_steps, point_of_summary, se_of_interval  # noqa: E402
from reporter.model.compare import compute_run_summaries  # noqa: E402
from reporter.model.stats import compute_location_cis  # noqa: E402

NOISE_LABELS = ("torch-2.13.0-cpu", "torch-2.14.1-cpu", "torch-2.10.0", "torch-2.11.0", "torch-2.12.1",
                "torch-2.13.0", "torch-2.14.1")


def measure_noise(root: str, labels: tuple[str, ...], metric: str = "time",
                  since: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (label, case): the within-run SD of log process medians, the run-to-run SD, processes per run.

    Run-to-run SD only where a label has two or more runs of the case: the SD of the run
    estimates less their within-run share (method of moments, at least zero). Cases of
    one-run labels draw it from the cases that have it.
    """
    # The runs the site's config sets aside are left out, as the trend pages leave them out.
    archive, _, _ = apply_set_aside(load_archive(root), load_config(Path(__file__).resolve().parents[1] / "imagebench.toml",
                                                                    explicit=False))
    runs = archive.runs[archive.runs["label"].astype(str).isin(labels)]
    if since is not None:  # run ids begin with their start time, 20261207T120000Z-...
        runs = runs[runs["run_id"].astype(str) >= since]
    per_run = compute_run_summaries(restrict(archive, frozenset(runs["run_id"].astype(str))))
    rows = []
    for run_id, s in per_run.items():
        s = s[(s["metric"] == metric) & (s["n_processes"] >= 2)]
        s = s[(s["ci_low"] > 0) & (s["ci_high"] > s["ci_low"])]
        label = str(runs.loc[runs["run_id"].astype(str) == run_id, "label"].iloc[0])
        for r in s.itertuples():
            se = se_of_interval(np.log(r.ci_low), np.log(r.ci_high), r.n_processes - 1)
            rows.append((label, str(r.case_id), float(np.log(r.estimate)), se, int(r.n_processes)))
    import pandas as pd

    df = pd.DataFrame(rows, columns=["label", "case", "y", "se", "p"])
    within, between, procs = [], [], []
    for _, g in df.groupby(["label", "case"]):
        within.append(float(np.sqrt(np.mean(g["se"] ** 2 * g["p"]))))
        procs.append(int(g["p"].median()))
        if len(g) >= 2:
            between.append(float(np.sqrt(max(g["y"].var(ddof=1) - np.mean(g["se"] ** 2), 0.0))))
        else:
            between.append(np.nan)
    return np.array(within), np.array(between), np.array(procs)


def simulate_points(rng: np.random.Generator, n_series: int, n_versions: int, n_runs: int, within: np.ndarray,
                    between: np.ndarray, procs: np.ndarray, step: float) -> tuple[list, np.ndarray]:
    """Series points (log estimate, se, df per version) and the planted step's index (0: none)."""
    have_between = between[np.isfinite(between)]
    pick = rng.integers(0, within.size, n_series)
    sd_w = within[pick]
    sd_b = np.where(np.isfinite(between[pick]), between[pick], rng.choice(have_between, n_series))
    p = np.maximum(procs[pick], 2)
    planted = rng.integers(1, n_versions, n_series) if step else np.zeros(n_series, int)
    sign = rng.choice([-1.0, 1.0], n_series)
    values, groups, run_ids = [], [], []
    for i in range(n_series):
        level = np.where(np.arange(n_versions) >= planted[i], sign[i] * np.log1p(step), 0.0) if step else np.zeros(n_versions)
        for v in range(n_versions):
            g = i * n_versions + v
            for r in range(n_runs):
                run_effect = rng.normal(0, sd_b[i])
                values.append(level[v] + run_effect + rng.normal(0, sd_w[i], p[i]))
                groups.append(np.full(p[i], g))
                run_ids.append(np.full(p[i], g * n_runs + r))
    loc = compute_location_cis(np.concatenate(values), np.concatenate(groups), np.concatenate(run_ids),
                               n_groups=n_series * n_versions)
    series = []
    for i in range(n_series):
        pts = []
        for v in range(n_versions):
            g = i * n_versions + v
            pts.append(point_of_summary(np.exp(loc.estimate[g]), np.exp(loc.ci_low[g]), np.exp(loc.ci_high[g]),
                                        int(p[i] * n_runs), n_runs, bool(loc.runs_covered[g])))
        series.append(pts)
    return series, planted * sign.astype(int)


def steps_binseg(pts: list, alpha: float, seed: int) -> list[tuple[int, float]]:
    y, s, d = (np.array(c) for c in zip(*pts))
    return [(st.index, st.size) for st in compute_steps(y, s, d, alpha=alpha, seed=seed, draws=2000)]


def steps_binseg_pooled(pts: list, alpha: float, seed: int) -> list[tuple[int, float]]:
    """The pages' method: pooled spread, at the pages' level for it (POOLED_ALPHA) unless --alpha is given."""
    y, s, d = (np.array(c) for c in zip(*pts))
    level = POOLED_ALPHA if alpha == ALPHA else alpha
    return [(st.index, st.size) for st in compute_steps(y, s, d, alpha=level, seed=seed, draws=2000, pooled=True)]


def steps_bic(pts: list, alpha: float, seed: int) -> list[tuple[int, float]]:
    """Optimal partition of the weighted chi-square with a BIC penalty per step (exhaustive)."""
    y, s, _ = (np.array(c) for c in zip(*pts))
    w, n = 1.0 / s**2, len(y)
    best, best_cuts = np.inf, ()
    for k in range(n):
        for cuts in itertools.combinations(range(1, n), k):
            b = (0, *cuts, n)
            cost = sum(float(np.sum(w[a:c] * (y[a:c] - np.sum(w[a:c] * y[a:c]) / np.sum(w[a:c])) ** 2)) for a, c in zip(b, b[1:]))
            cost += k * 2 * np.log(n)
            if cost < best:
                best, best_cuts = cost, cuts
    b = (0, *best_cuts, n)
    means = [np.sum(w[a:c] * y[a:c]) / np.sum(w[a:c]) for a, c in zip(b, b[1:])]
    return [(c, means[i + 1] - means[i]) for i, c in enumerate(best_cuts)]


def steps_neighbours(pts: list, alpha: float, seed: int) -> list[tuple[int, float]]:
    """A step wherever two neighbouring versions differ (Welch t on the two points)."""
    out = []
    for i in range(1, len(pts)):
        (y0, s0, d0), (y1, s1, d1) = pts[i - 1], pts[i]
        v = s0**2 + s1**2
        dof = v**2 / (s0**4 / d0 + s1**4 / d1)
        if 2 * stdtr(dof, -abs(y1 - y0) / np.sqrt(v)) <= alpha:
            out.append((i, y1 - y0))
    return out


METHODS = {
    "weighted binary segmentation, bootstrap test, each point's own error": steps_binseg,
    "the same, the run-to-run spread pooled over the series (the pages' method)": steps_binseg_pooled,
    "optimal partition, weighted chi-square + BIC penalty": steps_bic,
    "neighbouring versions, Welch t each": steps_neighbours,
}


def ceiling(planted: list, truth: np.ndarray, alpha: float) -> float:
    """Share of planted steps a test told the step's version would find: no method that must
    also find where the step is does better. The points before and after the true version are
    pooled with inverse-variance weights and their difference tested (normal, two-sided)."""
    found = 0
    for pts, t in zip(planted, truth):
        y, s, _ = (np.array(c) for c in zip(*pts))
        k, w = abs(int(t)), 1.0 / s**2
        before, after = np.sum(w[:k] * y[:k]) / np.sum(w[:k]), np.sum(w[k:] * y[k:]) / np.sum(w[k:])
        z = (after - before) / np.sqrt(1.0 / np.sum(w[:k]) + 1.0 / np.sum(w[k:]))
        found += bool(2 * stdtr(1e6, -abs(z)) <= alpha and np.sign(z) == np.sign(t))
    return found / len(planted)


def rates(method, flat: list, planted: list, truth: np.ndarray, alpha: float | None) -> tuple[float, float, float]:
    """Share of flat series with a step; of planted steps found at their version; of planted series with another."""
    false_flat = sum(bool(method(p, alpha, i)) for i, p in enumerate(flat))
    found = extra = 0
    for i, (p, t) in enumerate(zip(planted, truth)):
        steps = method(p, alpha, i)
        found += any(k == abs(t) and np.sign(size) == np.sign(t) for k, size in steps)
        extra += any(k != abs(t) for k, _ in steps)
    n = len(flat)
    return false_flat / n, found / len(planted), extra / len(planted)


SOURCES = {
    "the three-run CPU labels (torch-2.13.0-cpu, torch-2.14.1-cpu)": ("torch-2.13.0-cpu", "torch-2.14.1-cpu"),
    "the interleaved series (torch-2.10.0 ... torch-2.14.1, three runs a release)":
        ("torch-2.10.0", "torch-2.11.0", "torch-2.12.1", "torch-2.13.0", "torch-2.14.1"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="runs")
    ap.add_argument("--series", type=int, default=1000, help="simulated series per condition")
    ap.add_argument("--versions", type=int, default=6)
    ap.add_argument("--n-runs", type=int, default=3)
    ap.add_argument("--steps", type=float, nargs="*", default=[0.05, 0.10, 0.20, 0.50])
    ap.add_argument("--alpha", type=float, default=ALPHA,
                    help="the level of every method's test (default 0.05; the pages' method then uses its own, 0.04)")
    ap.add_argument("--quietest", type=float, default=0.25,
                    help="also simulate with the quietest share of the recorded noise profiles")
    ap.add_argument("--scale", type=float, nargs="*", default=[0.05, 0.1, 0.25],
                    help="also simulate the three-run labels' profiles with their SDs times these factors")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--since", help="also simulate with the noise of the series' runs started at or after this "
                                    "time (a run id prefix such as 20261207T1200)")
    args = ap.parse_args()
    series_labels = SOURCES["the interleaved series (torch-2.10.0 ... torch-2.14.1, three runs a release)"]
    sources = dict(SOURCES)
    if args.since:
        sources[f"the interleaved series' runs since {args.since}"] = (series_labels, args.since)

    three_run = measure_noise(args.runs, SOURCES[next(iter(SOURCES))])
    rng = np.random.default_rng(args.seed)
    print(f"{args.versions} versions, {args.n_runs} runs each, {args.series} series per condition; "
          f"a planted step at a random version, up or down; alpha {args.alpha}")
    for k, (name, labels) in enumerate(sources.items()):
        labels, since = labels if isinstance(labels[0], tuple) else (labels, None)
        within, between, procs = measure_noise(args.runs, labels, since=since) if k else three_run
        missing = ~np.isfinite(between)
        if k and missing.any():  # cases of one-run labels: run-to-run spread drawn from the three-run labels
            between[missing] = rng.choice(three_run[1][np.isfinite(three_run[1])], int(missing.sum()))
        ok = np.isfinite(between)
        print(f"\nnoise of {name}: {within.size} time rows; within-run SD of log process medians median "
              f"{np.median(within):.3f} (quartiles {np.quantile(within, 0.25):.3f}-{np.quantile(within, 0.75):.3f}), "
              f"run-to-run SD median {np.median(between[ok]):.3f} (quartiles {np.quantile(between[ok], 0.25):.3f}-"
              f"{np.quantile(between[ok], 0.75):.3f}), {int(np.median(procs))} processes a run")
        profiles = {"all profiles": (within, between, procs)}
        if args.quietest:
            cut = np.quantile(within, args.quietest)
            idx = np.flatnonzero(within <= cut)
            profiles[f"quietest {args.quietest:.0%} (within-run SD <= {cut:.3f})"] = (within[idx], between[idx], procs[idx])
        if not k:
            for f in args.scale:
                profiles[f"SDs x {f:g}"] = (within * f, between * f, procs)
        for pname, noise in profiles.items():
            flat, _ = simulate_points(rng, args.series, args.versions, args.n_runs, *noise, 0.0)
            for step in args.steps:
                planted, truth = simulate_points(rng, args.series, args.versions, args.n_runs, *noise, step)
                print(f"  {pname}, step {step:.0%}, the ceiling (a test told the step's version): "
                      f"{ceiling(planted, truth, args.alpha):.1%} of planted steps found")
                for mname, method in METHODS.items():
                    if step != args.steps[0] and method is not steps_binseg_pooled:
                        continue
                    f, found, extra = rates(method, flat, planted, truth, args.alpha)
                    print(f"  {pname}, step {step:.0%}, {mname}: flat series with a step {f:.1%}; planted steps "
                          f"found at the right version {found:.1%}; planted series with another step {extra:.1%}")


if __name__ == "__main__":
    main()
