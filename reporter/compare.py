"""Per-label summaries and label-against-label comparisons of an archive (tables in, tables out).

This module turns an ``Archive`` into the numbers pages and the CLI show: it groups
samples with pandas and hands arrays to the pure functions of ``reporter.stats``. It
never prints. The unit of replication is the worker process: one unit is one
``(run_id, process)`` pair, summarised by the median of its samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from collector.schema import BETTER_HIGHER, BETTER_LOWER
from reporter.errors import ReporterError
from reporter.load import Archive, Problem
from reporter.stats import (
    MIN_UNITS,
    VERDICTS,
    Geomean,
    adjust_pvalues,
    compute_geomean,
    compute_grouped_summaries,
    compute_log_ratio_tests,
    compute_verdict,
)

# The metric the suite-level geometric mean is taken over: one ratio per case, so a
# case's wall time and memory do not count it twice. Other metrics when none is "time".
GEOMEAN_METRIC = "time"

SUMMARY_COLUMNS = (
    "label", "case_id", "workload", "params", "metric", "unit", "better", "median", "ci_low", "ci_high",
    "mean", "q1", "q3", "iqr", "cv", "n_samples", "n_processes", "n_runs",
)
WORK_COLUMNS = ("flops", "bytes", "items", "items_unit")
SIDES = ("baseline", "candidate")


@dataclass
class Comparison:
    """A candidate selection compared with a baseline selection.

    ``rows``: one row per (case, metric) measured on both sides, sorted by workload and
    case, with the columns listed in ``compare_labels``. ``geomean``: the geometric mean
    of the ``geomean_metric`` ratios with its CI. ``unmatched``: (case_id, metric, side)
    for what only one side measured (side is the one that has it). ``counts``: verdict
    -> number of rows. ``problems``: runs skipped while loading.
    """

    baseline: str
    candidate: str
    rows: pd.DataFrame
    geomean: Geomean
    geomean_metric: str | None
    unmatched: list[tuple[str, str, str]]
    counts: dict[str, int]
    noise: float
    single_band: float
    correction: str
    problems: list[Problem] = field(default_factory=list)


def compute_summaries(archive: Archive, *, confidence: float = 0.95) -> pd.DataFrame:
    """Median with CI, mean, quartiles, CV and counts per (label, case, metric).

    Only samples of attempts recorded ``ok`` count (``Archive.ok_samples``). The CI is
    ``reporter.stats.compute_grouped_summaries``' (Woodruff's, one cluster per worker
    process). Columns: ``SUMMARY_COLUMNS``; sorted by label, case and metric.
    """
    s = archive.ok_samples()
    if s.empty:
        return pd.DataFrame({c: [] for c in SUMMARY_COLUMNS})
    keys = ["label", "case_id", "metric"]
    codes, groups = _group(s, keys)
    stats = compute_grouped_summaries(
        s["value"].to_numpy(np.float64), codes, _unit_codes(s), n_groups=len(groups), confidence=confidence
    )
    n_runs = _count_distinct(codes, s["run_id"].cat.codes.to_numpy(np.int64), len(groups))
    first = s.groupby(codes, sort=True)[["unit", "better"]].first()
    out = groups.assign(
        unit=first["unit"].astype(str).to_numpy(),
        better=first["better"].astype(str).to_numpy(),
        median=stats.median,
        ci_low=stats.ci_low,
        ci_high=stats.ci_high,
        mean=stats.mean,
        q1=stats.q1,
        q3=stats.q3,
        iqr=stats.iqr,
        cv=stats.cv,
        n_samples=stats.n_samples,
        n_processes=stats.n_units,
        n_runs=n_runs,
    )
    out = _with_case_info(out, archive.cases)
    return out[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def compare_labels(
    archive: Archive,
    baseline: str,
    candidate: str,
    noise: float = 0.01,
    single_band: float = 0.10,
    correction: str = "holm",
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> Comparison:
    """Compare ``candidate`` with ``baseline``; each is ``LABEL`` or ``LABEL@RUN_ID``.

    Every (case, metric) with ``better`` lower or higher that both sides measured gets a
    row. Per side, each worker process (``(run_id, process)``) is reduced to the median
    of its samples; with at least 2 processes on both sides the ratio, its CI and the
    p-value are Welch's on the log process medians (``reporter.stats.compute_comparison``),
    so the process, not the sample, is the unit of replication. With a single process
    on a side there is no between-process variation to measure; the test then runs on
    the log samples (a within-process interval, too narrow by whatever the processes
    would have differed) and the verdict needs the wide ``single_band`` and says so.
    P-values are corrected across all rows (``correction``: ``holm`` or ``bh``);
    verdicts are ``reporter.stats.compute_verdict``'s.

    Values that are zero or negative (counts, utilisation) have no log: when every
    value on both sides is the same the row is ``no significant difference`` with ratio
    1, otherwise ``inconclusive`` without a ratio.

    ``rows`` columns: case_id, workload, params, metric, unit, better,
    baseline_median, candidate_median, baseline_ci_low, baseline_ci_high,
    candidate_ci_low, candidate_ci_high (the pooled medians and their CIs, as in
    ``compute_summaries``), baseline_gmean, candidate_gmean (geometric means of the
    process medians, whose ratio is ``ratio``), ratio, ci_low, ci_high, p_value,
    p_adjusted, verdict, note, level (``process`` or ``sample``: what the test treated
    as replicates), n_baseline_units, n_candidate_units, n_baseline_samples,
    n_candidate_samples, and flops, bytes, items, items_unit where recorded.

    Raises ``ReporterError`` for an unknown label or run, a selector that picks the
    same runs on both sides, a bad option value, or no (case, metric) on both sides.
    """
    if correction not in ("holm", "bh"):
        raise ReporterError(f"correction must be 'holm' or 'bh', not {correction!r}")
    for name, value in (("noise", noise), ("single_band", single_band)):
        if not (np.isfinite(value) and 0 <= value < 1):
            raise ReporterError(f"{name} must be a fraction in [0, 1), not {value!r}")
    sides = {"baseline": archive.select(baseline), "candidate": archive.select(candidate)}
    b_ids = set(sides["baseline"].runs["run_id"].astype(str))
    c_ids = set(sides["candidate"].runs["run_id"].astype(str))
    if b_ids & c_ids:
        raise ReporterError(
            f"baseline {baseline!r} and candidate {candidate!r} share run(s) {', '.join(sorted(b_ids & c_ids))}; "
            "compare two labels, or two runs with LABEL@RUN_ID"
        )
    stats = {name: _side_stats(side, confidence) for name, side in sides.items()}
    merged = stats["baseline"].merge(
        stats["candidate"], how="outer", left_index=True, right_index=True, suffixes=("_b", "_c")
    )
    in_b = merged["n_units_b"].notna()
    in_c = merged["n_units_c"].notna()
    unmatched = [(c, m, "baseline") for c, m in merged.index[in_b & ~in_c]]
    unmatched += [(c, m, "candidate") for c, m in merged.index[~in_b & in_c]]
    m = merged[in_b & in_c].copy()
    if m.empty:
        raise ReporterError(
            f"no case measured on both {baseline!r} and {candidate!r}"
            + (f" ({len(unmatched)} case/metric pair(s) on one side only)" if unmatched else "")
        )
    rows = _compare_rows(m, confidence, alpha, noise, single_band, correction)
    rows = _with_case_info(rows, pd.concat([sides["baseline"].cases, sides["candidate"].cases]), work=True)
    rows = rows.sort_values(["workload", "case_id", "metric"], kind="stable").reset_index(drop=True)
    metric = GEOMEAN_METRIC if (rows["metric"] == GEOMEAN_METRIC).any() else None
    chosen = rows[rows["metric"] == metric] if metric else rows
    geomean = compute_geomean(chosen["ratio"].to_numpy(np.float64), confidence=confidence)
    counts = Counter(rows["verdict"])
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        rows=rows,
        geomean=geomean,
        geomean_metric=metric,
        unmatched=sorted(unmatched),
        counts={v: counts.get(v, 0) for v in VERDICTS},
        noise=noise,
        single_band=single_band,
        correction=correction,
        problems=list(archive.problems),
    )


def _compare_rows(
    m: pd.DataFrame, confidence: float, alpha: float, noise: float, single_band: float, correction: str
) -> pd.DataFrame:
    """The statistics of every matched (case, metric): one vectorised Welch pass, then verdicts."""
    nub = m["n_units_b"].to_numpy(np.int64)
    nuc = m["n_units_c"].to_numpy(np.int64)
    by_unit = (nub >= 2) & (nuc >= 2)

    def pick(column: str, side: str) -> np.ndarray:
        return np.where(by_unit, m[f"unit_{column}_{side}"], m[f"sample_{column}_{side}"]).astype(np.float64)

    higher = (m["better_b"].astype(str) == BETTER_HIGHER).to_numpy()
    tests = compute_log_ratio_tests(
        pick("n", "b"), pick("mean", "b"), pick("var", "b"),
        pick("n", "c"), pick("mean", "c"), pick("var", "c"),
        higher, confidence=confidence,
    )
    ratio, lo, hi, p = tests.ratio.copy(), tests.ci_low.copy(), tests.ci_high.copy(), tests.p_value.copy()
    # No log for zero or negative values: identical constants are "the same", the rest has no ratio.
    nonpos = (np.where(by_unit, m["unit_min_b"], m["min_b"]) <= 0) | (np.where(by_unit, m["unit_min_c"], m["min_c"]) <= 0)
    same = (m["min_b"] == m["max_b"]) & (m["min_c"] == m["max_c"]) & (m["min_b"] == m["min_c"])
    same = same.to_numpy()
    for arr, value_same in ((ratio, 1.0), (lo, 1.0), (hi, 1.0), (p, 1.0)):
        arr[nonpos] = np.where(same[nonpos], value_same, np.nan)
    p_adj = adjust_pvalues(p, correction)
    verdicts, notes = [], []
    for i in range(len(m)):
        v = compute_verdict(
            ratio[i], lo[i], hi[i], p_adj[i], int(nub[i]), int(nuc[i]),
            noise=noise, single_band=single_band, alpha=alpha, min_units=MIN_UNITS,
        )
        note = v.note
        if nonpos[i] and not same[i]:
            note = "zero or negative values: no ratio is defined" + (f"; {note}" if note else "")
        elif not by_unit[i]:
            note = "within-process test on samples" + (f"; {note}" if note else "")
        verdicts.append(v.verdict)
        notes.append(note)
    idx = m.index.to_frame(index=False)
    return pd.DataFrame(
        {
            "case_id": idx["case_id"].astype(str).to_numpy(),
            "metric": idx["metric"].astype(str).to_numpy(),
            "unit": m["unit_b"].astype(str).to_numpy(),
            "better": m["better_b"].astype(str).to_numpy(),
            "baseline_median": m["median_b"].to_numpy(),
            "candidate_median": m["median_c"].to_numpy(),
            "baseline_ci_low": m["ci_low_b"].to_numpy(),
            "baseline_ci_high": m["ci_high_b"].to_numpy(),
            "candidate_ci_low": m["ci_low_c"].to_numpy(),
            "candidate_ci_high": m["ci_high_c"].to_numpy(),
            "baseline_gmean": np.exp(m["unit_mean_b"].to_numpy()),
            "candidate_gmean": np.exp(m["unit_mean_c"].to_numpy()),
            "ratio": ratio,
            "ci_low": lo,
            "ci_high": hi,
            "p_value": p,
            "p_adjusted": p_adj,
            "verdict": verdicts,
            "note": notes,
            "level": np.where(by_unit, "process", "sample"),
            "n_baseline_units": nub,
            "n_candidate_units": nuc,
            "n_baseline_samples": m["n_samples_b"].to_numpy(np.int64),
            "n_candidate_samples": m["n_samples_c"].to_numpy(np.int64),
        }
    )


def _side_stats(side: Archive, confidence: float) -> pd.DataFrame:
    """Per (case_id, metric) of one side: pooled summary, process-level and sample-level log moments."""
    s = side.ok_samples()
    s = s[s["better"].isin([BETTER_LOWER, BETTER_HIGHER])]
    index = pd.MultiIndex.from_arrays([[], []], names=["case_id", "metric"])
    if s.empty:
        return pd.DataFrame({"n_units": pd.Series([], dtype=float)}, index=index)
    codes, groups = _group(s, ["case_id", "metric"])
    g = len(groups)
    values = s["value"].to_numpy(np.float64)
    units = _unit_codes(s)
    summary = compute_grouped_summaries(values, codes, units, n_groups=g, confidence=confidence)

    # Each worker process's median, then log moments of those per group.
    unit_med = pd.DataFrame({"g": codes, "u": units, "v": values}).groupby(["g", "u"], sort=False)["v"].median()
    ug = unit_med.index.get_level_values("g").to_numpy()
    um = unit_med.to_numpy()
    unit_n, unit_mean, unit_var, unit_min, _ = _log_moments(um, ug, g)
    sample_n, sample_mean, sample_var, vmin, vmax = _log_moments(values, codes, g)
    first = s.groupby(codes, sort=True)[["unit", "better"]].first()
    out = pd.DataFrame(
        {
            "unit": first["unit"].astype(str).to_numpy(),
            "better": first["better"].astype(str).to_numpy(),
            "median": summary.median,
            "ci_low": summary.ci_low,
            "ci_high": summary.ci_high,
            "n_samples": summary.n_samples,
            "n_units": summary.n_units,
            "unit_n": unit_n,
            "unit_mean": unit_mean,
            "unit_var": unit_var,
            "unit_min": unit_min,
            "sample_n": sample_n,
            "sample_mean": sample_mean,
            "sample_var": sample_var,
            "min": vmin,
            "max": vmax,
        },
        index=pd.MultiIndex.from_frame(groups.astype(str)),
    )
    return out


def _log_moments(values: np.ndarray, groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, ...]:
    """Count, mean and sample variance (ddof=1) of log(values), min and max of values, per group.

    Mean and variance are NaN where undefined (a value <= 0, or one value).

    A group of identical values gets exactly ``log(value)`` and variance 0, not the
    rounding residue of the sums, so identical sides compare as identical.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
        n = np.bincount(groups, minlength=n_groups).astype(np.float64)
        mean = np.bincount(groups, weights=logs, minlength=n_groups) / n
        dev = logs - mean[groups]
        var = np.bincount(groups, weights=dev * dev, minlength=n_groups) / (n - 1)
    lo = np.full(n_groups, np.inf)
    hi = np.full(n_groups, -np.inf)
    np.minimum.at(lo, groups, values)
    np.maximum.at(hi, groups, values)
    constant = (lo == hi) & (lo > 0)
    with np.errstate(divide="ignore"):
        mean = np.where(constant, np.log(np.where(constant, lo, 1.0)), mean)
    var = np.where(constant, 0.0, var)
    return n, mean, np.where(n > 1, var, np.nan), lo, hi


def _group(df: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Integer group codes in sorted key order, and the key values of each code."""
    grouped = df.groupby(keys, observed=True, sort=True)
    codes = grouped.ngroup().to_numpy(np.int64)
    groups = grouped.size().reset_index()[keys]
    for k in keys:
        groups[k] = groups[k].astype(str)
    return codes, groups


def _unit_codes(s: pd.DataFrame) -> np.ndarray:
    """One integer per worker process: (run_id, process)."""
    process = s["process"].to_numpy(np.int64)
    span = int(process.max()) + 1 if len(process) else 1
    return s["run_id"].cat.codes.to_numpy(np.int64) * span + process


def _count_distinct(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    span = int(values.max()) + 1 if len(values) else 1
    pairs = np.unique(groups * span + values)
    return np.bincount(pairs // span, minlength=n_groups)


def _with_case_info(df: pd.DataFrame, cases: pd.DataFrame, *, work: bool = False) -> pd.DataFrame:
    """Add workload and params (and the work per iteration) of each case_id from cases.parquet."""
    columns = ["workload", "params"] + (list(WORK_COLUMNS) if work else [])
    if cases.empty:
        info = pd.DataFrame(columns=["case_id", *columns])
    else:
        info = cases[["case_id", *columns]].copy()
        for c in ("case_id", "workload", "params", "items_unit"):
            if c in info:
                info[c] = info[c].astype(object).where(info[c].notna(), None)
        info["case_id"] = info["case_id"].astype(str)
        # The first non-null value per case: a failed attempt may lack the work columns.
        info = info.groupby("case_id", sort=False).first().reset_index()
    out = df.drop(columns=[c for c in columns if c in df]).merge(info, on="case_id", how="left")
    out["workload"] = out["workload"].where(out["workload"].notna(), out["case_id"].str.split("[", n=1).str[0])
    out["params"] = out["params"].where(out["params"].notna(), "{}")
    return out
