"""Per-label summaries and label-against-label comparisons of an archive (tables in, tables out).

This module arranges an ``Archive``'s samples into the arrays of ``reporter.model.stats`` and
puts the results back into tables; it never prints. The unit of replication is the
worker process: one unit is one ``(run_id, process)`` pair, summarised by the median of
its samples; units sit in runs. See ``compare_labels`` for the model and the columns.

The contract of ``compare_labels`` (what pages and the CLI build on):

``Comparison.rows``, one row per (case, metric) measured on both sides, columns:

* ``case_id``, ``workload``, ``family`` (``cases.family`` as recorded, else the workload
  registry's, else ``other``), ``params``, ``metric``, ``unit``, ``better``;
* ``baseline_value``, ``candidate_value``: the per-side estimates the ratio is computed
  from (geometric means over runs of the run's geometric mean of process medians), so
  ``ratio`` is exactly ``baseline_value / candidate_value`` for lower-is-better metrics
  and ``candidate_value / baseline_value`` for higher-is-better ones, and the two never
  disagree in direction; ``baseline_ci_low`` ... ``candidate_ci_high``: the 95% CIs of
  the sides' locations (``reporter.model.location``: the intervals the label's run pages and
  trends show; NaN with one unit on the side or no variance);
* ``baseline_median``, ``candidate_median``: pooled sample medians (details only);
* ``ratio``, ``ci_low``, ``ci_high`` (> 1: the candidate is better), ``p_value``,
  ``p_adjusted`` (Benjamini–Hochberg over the article's tested rows by default);
* ``verdict`` (a ``runformat.vocabulary.Verdict`` value), ``notes`` (a tuple of
  ``runformat.vocabulary.Note``: codes and numbers, whose text the present stage writes,
  ``reporter.present.notes``), ``analysis`` (an ``Analysis`` value);
* ``mde``: the smallest relative change the row could detect at 80% power, a fraction
  (``reporter.model.stats.compute_mde``); ``processes_needed``: processes per side (rounds when
  paired) for the MDE to reach ±2% at the current number of runs, or, for a row with too
  few units, at least the 2 it needs for a verdict (NaN: more processes cannot get there;
  more runs are needed);
* ``n_baseline_units``, ``n_candidate_units`` (processes), ``n_baseline_runs``,
  ``n_candidate_runs``, ``n_baseline_samples``, ``n_candidate_samples``;
* ``flops``, ``bytes``, ``items``, ``items_unit`` where recorded.

``Comparison.geomean`` (overall) and ``geomeans`` (per family): ``reporter.model.stats.Geomean``
of the ``geomean_metric`` rows that were tested, with the CI over replicate units.
``analysis`` is ``paired`` when the sides are one interleaved recording, else
``hierarchical``; ``run_level_covered`` says whether every tested row's CI holds a
run-to-run component (replicated, or borrowed from other runs on the same device);
``mde`` is the median of the tested rows' MDEs (what a typical row could detect);
``advice`` names the noisiest family (largest median MDE) and the processes / runs per
side that would resolve ±2% there.

``reporter compare --format json`` serialises this (``reporter.present.tables``).
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import stdtr, stdtrit

from runformat.schema import BETTER_HIGHER, BETTER_LOWER
from runformat.vocabulary import Analysis, Note, NoteCode, Verdict
from reporter.errors import ReporterError
from reporter.data.load import Archive, Problem, _rows_of
from reporter.data.cache import Rows, label_key
from reporter.model.location import locate, locate_groups
from reporter.model.stats import (
    MIN_UNITS,
    EQUIVALENCE,
    MAX_PROCESSES,
    MAX_RUNS,
    RESOLVE,
    VERDICTS,
    Geomean,
    HierarchicalTests,
    OneWay,
    adjust_pvalues,
    compute_pooled_summaries,
    compute_hierarchical_tests,
    compute_mde,
    compute_oneway,
    compute_processes_needed,
    compute_run_variance,
    compute_runs_needed,
    compute_verdict,
    compute_display_level,
    moderated_oneway,
    sort_values_within_groups,
)

# The metric the suite-level geometric mean is taken over: one ratio per case, so a
# case's wall time and memory do not count it twice. Other metrics when none is "time".
GEOMEAN_METRIC = "time"
OTHER_FAMILY = "other"
# Two runs of an interleaved recording of schema 1 (no interleave_group) started this
# close together.
PAIR_WINDOW_S = 60.0
# At most this many runs lend run-to-run variance to a one-run side (those nearest in time).
MAX_LENDER_RUNS = 16

SUMMARY_COLUMNS = (
    "label", "case_id", "workload", "params", "metric", "unit", "better", "median", "ci_low", "ci_high",
    "mean", "q1", "q3", "iqr", "cv", "n_samples", "n_processes", "n_runs", "estimate", "runs_covered",
)
WORK_COLUMNS = ("flops", "bytes", "items", "items_unit")
SIDES = ("baseline", "candidate")
# Units of measured quantities (times, rates, utilisation): two equal values are a coincidence.
MEASURED_UNITS = ("s", "items/s", "%")



# The metrics an article counts (its headline, verdict box, reports index and home page):
# every row of these, and a peak-memory row when it is called better or worse.
COUNTED_METRICS = ("time", "latency", "throughput", "compile_time", "max_batch", "tasks_ok")


def counted(metric: str, verdict: Any) -> bool:
    """Whether a row of ``metric`` with ``verdict`` (a Verdict or its value) is one the article counts."""
    value = getattr(verdict, "value", verdict)
    return metric in COUNTED_METRICS or (metric == "peak_allocated" and value in ("better", "worse"))

@dataclass(frozen=True)
class Advice:
    """What it would take to resolve ±``target`` in the noisiest family of an article.

    ``processes``: processes per side at the current runs, at most ``MAX_PROCESSES`` (None:
    no count up to it resolves ``target``); ``runs``: runs per side at the current processes
    per run, at most ``MAX_RUNS`` (None likewise); ``mde``: the family's median MDE now;
    ``paired``: the sides are already one interleaved recording.
    """

    family: str
    mde: float
    processes: int | None
    runs: int | None
    target: float = RESOLVE
    paired: bool = False

    @property
    def resolvable(self) -> bool:
        """Whether more processes or runs, within the bounds, would resolve ``target``."""
        return self.processes is not None or self.runs is not None


@dataclass
class Comparison:
    """A candidate selection compared with a baseline selection (see the module docstring)."""

    baseline: str
    candidate: str
    rows: pd.DataFrame
    geomean: Geomean
    geomeans: dict[str, Geomean]
    geomean_metric: str | None
    unmatched: list[tuple[str, str, str]]
    counts: dict[str, int]
    noise: float
    single_band: float
    correction: str
    alpha: float = 0.05
    analysis: str = Analysis.HIERARCHICAL.value
    run_level_covered: bool = False
    mde: float = float("nan")
    advice: Advice | None = None
    problems: list[Problem] = field(default_factory=list)
    # The devices whose other runs were looked up to borrow run-level variance from (a side
    # with one run of a row); empty when the comparison read nothing but its two sides.
    borrowed_on: tuple[str, ...] = ()
    # The equivalence band of the verdicts (``compute_verdict``).
    equivalence: float = EQUIVALENCE


# ------------------------------------------------------------------------ units


def _units(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, case, metric, process): the median of its samples and their spread.

    Columns: label, run_id, case_id, metric, process, unit, better, median, n, vmin,
    vmax, spread (the within-process sampling variance of the log median,
    ``(π/2)(1.4826·MAD)²/n`` of the log samples; NaN with fewer than 3 samples).
    """
    return _unit_summaries(samples)[0]


def _unit_summaries(samples: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``_units(samples)``, each sample's row in it, and each unit's first sample (its row in ``samples``).

    One sort of the samples by (run, case, metric, process, value) gives every unit's
    median, extremes and count; a second, within units, the median absolute deviation.
    """
    if samples.empty:
        empty = pd.DataFrame(columns=["label", "run_id", "case_id", "metric", "process", "unit", "better", "median",
                                      "n", "vmin", "vmax", "spread"])
        return empty, np.zeros(0, np.int64), np.zeros(0, np.int64)
    run = samples["run_id"].cat.codes.to_numpy(np.int64)
    case = samples["case_id"].cat.codes.to_numpy(np.int64)
    met = samples["metric"].cat.codes.to_numpy(np.int64)
    proc = samples["process"].to_numpy(np.int64)
    nc, nm, npr = case.max() + 1, met.max() + 1, proc.max() + 1
    key = run * nc  # in place from here: 5M samples make every temporary 40 MB
    key += case
    key *= nm
    key += met
    key *= npr
    key += proc
    del run, case, met
    values = samples["value"].to_numpy(np.float64)
    # The values sorted within units; ``order`` sorts the samples by unit (None: stored so).
    order, v = sort_values_within_groups(key, values)
    k = key if order is None else key[order]
    del key
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    size = k.size
    del k
    n = np.diff(np.r_[starts, size])
    med = 0.5 * (v[starts + (n - 1) // 2] + v[starts + n // 2])
    vmin, vmax = v[starts], v[starts + n - 1]
    group = np.repeat(np.arange(starts.size), n)
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = np.log(np.where(v > 0, v, np.nan))
        del v
        dev -= np.log(np.where(med > 0, med, np.nan))[group]
        np.abs(dev, out=dev)
    dev[~np.isfinite(dev)] = np.inf
    d2 = sort_values_within_groups(group, dev)[1]
    del dev
    mad = 0.5 * (d2[starts + (n - 1) // 2] + d2[starts + n // 2])
    del d2
    spread = np.where((n >= 3) & np.isfinite(mad), (np.pi / 2) * (1.4826 * mad) ** 2 / n, np.nan)
    # A unit's first sample as stored: every text column is the same across a unit's samples.
    first = starts if order is None else order[starts]
    unit_of = np.empty(size, np.int64)
    if order is None:
        unit_of[:] = group
    else:
        unit_of[order] = group
    del order, group
    units = pd.DataFrame(
        {
            "label": _strings_at(samples["label"], first),
            "run_id": _strings_at(samples["run_id"], first),
            "case_id": _strings_at(samples["case_id"], first),
            "metric": _strings_at(samples["metric"], first),
            "process": proc[first],
            "unit": _strings_at(samples["unit"], first),
            "better": _strings_at(samples["better"], first),
            "median": med,
            "n": n,
            "vmin": vmin,
            "vmax": vmax,
            "spread": spread,
        }
    )
    return units, unit_of, first


def _ranked(archive: Archive) -> pd.DataFrame:
    """The units of ``archive``'s ranked metrics (better lower/higher) with their round."""
    u = _cached_units(archive)
    if u is None:
        s = archive.ok_samples()
        u = _units(s[s["better"].isin([BETTER_LOWER, BETTER_HIGHER])])
    else:
        u = u[u["better"].isin([BETTER_LOWER, BETTER_HIGHER])].reset_index(drop=True)
    if u.empty:
        u["round"] = pd.Series(dtype=np.int64)
        return u
    c = archive.cases
    rounds = pd.DataFrame(
        {
            "run_id": c["run_id"].astype(str).to_numpy(),
            "case_id": c["case_id"].astype(str).to_numpy(),
            "process": c["process"].to_numpy(np.int64),
            "round": c["round"].to_numpy(),
        }
    ).drop_duplicates(["run_id", "case_id", "process"])
    u = u.merge(rounds, on=["run_id", "case_id", "process"], how="left")
    # Schema 1, or a run without --interleave: the round is the process index, as it ran.
    u["round"] = pd.to_numeric(u["round"], errors="coerce").fillna(u["process"]).astype(np.int64)
    return u


def _summary_store(archive: Archive) -> Any:
    """The archive's summaries cache when every run has a key in it, else None."""
    if archive.summaries is None or not len(archive.runs):
        return None
    ids = archive.runs["run_id"].astype(str)
    return archive.summaries if all(r in archive.run_keys for r in ids) else None


def _restricted(archive: Archive, run_ids: set[str]) -> Archive:
    runs = archive.runs[archive.runs["run_id"].astype(str).isin(run_ids)].reset_index(drop=True)
    return replace(archive, runs=runs, environment=_rows_of(archive.environment, run_ids),
                   cases=_rows_of(archive.cases, run_ids), samples=archive.lazy_rows(run_ids))


def _cached_units(archive: Archive) -> pd.DataFrame | None:
    """``_units`` of every ok sample of ``archive``, run by run from the summaries cache
    (computed and stored for the runs it lacks); None when the archive has no cache.

    Each run's units are sorted by case, metric and process, and the runs follow
    ``archive.runs``: the same rows in the same order whichever runs were cached.
    """
    store = _summary_store(archive)
    if store is None:
        return None
    ids = archive.runs["run_id"].astype(str).tolist()
    keys = [archive.run_keys[r] for r in ids]
    have = store.get("units", keys)
    missing = {r for r, k in zip(ids, keys) if k not in have}
    if missing:
        have.update(_store_units(store, archive, _units(_restricted(archive, missing).ok_samples()), missing))
    parts = [have[k]() if callable(have[k]) else have[k] for k in keys]
    return pd.concat(parts, ignore_index=True) if parts else None


def _store_units(store: Any, archive: Archive, fresh: pd.DataFrame, run_ids: set[str]) -> dict[str, pd.DataFrame]:
    """Keep ``fresh`` (``_units`` of every ok sample of ``run_ids``) in ``store``, run by run; the entries by key."""
    # Sorted by (run_id, case_id, metric, process) as text, stably (each text column by its rank
    # among its distinct values), and kept as one table: each run's entry is a slice of it.
    ranks = []
    for c in ("process", "metric", "case_id", "run_id"):
        if c == "process":
            ranks.append(fresh[c].to_numpy(np.int64))
            continue
        codes, uniques = pd.factorize(fresh[c])  # text already: no string is made per row
        rank = np.empty(len(uniques), np.int64)
        rank[np.argsort(np.asarray(uniques, dtype=object), kind="stable")] = np.arange(len(uniques))
        ranks.append(rank[codes])
    fresh = fresh.iloc[np.lexsort(ranks)].reset_index(drop=True)
    fresh["run_id"] = fresh["run_id"].astype(str)
    ids = fresh["run_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(ids)]
    spans = {str(ids[a]): (int(a), int(b - a)) for a, b in zip(starts, ends)}
    # In the table's order, so that the cache writes the runs' consecutive slices as one piece.
    new = {archive.run_keys[r]: (Rows(fresh, *spans.get(r, (0, 0))), [archive.run_keys[r]])
           for r in sorted(run_ids, key=lambda r: spans.get(r, (-1, 0))[0])}
    store.put("units", new)
    return {k: v[0] for k, v in new.items()}


# ------------------------------------------------------------------ summaries


def compute_summaries(archive: Archive, *, confidence: float = 0.95) -> pd.DataFrame:
    """Median, a hierarchical 95% CI, mean, quartiles, CV and counts per (label, case, metric).

    Only samples of attempts recorded ``ok`` count (``Archive.ok_samples``). ``median``,
    ``mean``, ``q1``, ``q3``, ``iqr`` and ``cv`` describe the pooled samples.
    ``estimate`` is the label's location as comparisons use it: the geometric mean over
    runs of the run's geometric mean of process medians; ``ci_low``/``ci_high`` are its
    95% CI from ``reporter.model.location`` (processes within runs, runs when there are
    two or more: ``runs_covered``). With a single process there is no
    between-process variation to build an interval from: the CI is NaN. Values that are
    zero or negative have no log: a constant gives the zero-width interval at its value,
    anything else NaN. Columns: ``SUMMARY_COLUMNS``; sorted by label, case and metric.
    """
    store = _summary_store(archive)
    if store is None:
        out = _pooled_summaries(archive, confidence)
    else:
        run_ids = archive.runs.groupby("label", observed=True)["run_id"].agg(lambda r: list(r.astype(str)))
        keys = {str(label): label_key([archive.run_keys[r] for r in ids], confidence) for label, ids in run_ids.items()}
        have = store.get("labels", list(keys.values()))
        missing = {label for label, k in keys.items() if k not in have}
        if missing:
            ids = {r for label in missing for r in run_ids[label]}
            unit_keys = {archive.run_keys[r]: r for r in ids}
            unstored = {r for k, r in unit_keys.items() if k not in store.get("units", list(unit_keys))}
            # Labels are independent: a few at a time, so that only their samples are in memory at once.
            attempts = archive.cases.groupby("label", observed=True).size()
            fresh_parts = []
            # Each chunk's per-run units (computed on the way, for comparisons to come) are kept as
            # they come, and written with the labels' summaries once, when the chunks are done.
            with store.deferred():
                for chunk in _chunks(sorted(missing), {str(k): int(v) for k, v in attempts.items()}, SUMMARY_CHUNK_ATTEMPTS):
                    chunk_ids = {r for label in chunk for r in run_ids[label]}
                    units: list[pd.DataFrame] = []
                    fresh_parts.append(_pooled_summaries(_restricted(archive, chunk_ids), confidence, units_out=units))
                    todo = unstored & chunk_ids
                    if units and todo:
                        _store_units(store, archive, units[0][units[0]["run_id"].astype(str).isin(todo)], todo)
                    del units
                fresh = pd.concat(fresh_parts, ignore_index=True)
                new = {keys[label]: (fresh[fresh["label"].astype(str) == label].reset_index(drop=True),
                                     [archive.run_keys[r] for r in run_ids[label]]) for label in missing}
                store.put("labels", new)
            have.update({k: v[0] for k, v in new.items()})
        out = pd.concat([have[keys[label]] for label in sorted(keys)], ignore_index=True)
    if out.empty:
        return pd.DataFrame({c: [] for c in SUMMARY_COLUMNS})
    out = out.sort_values(["label", "case_id", "metric"], kind="stable")
    out = _with_case_info(out, archive.cases)
    return out[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def compute_run_summaries(archive: Archive, *, confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """``compute_summaries(restrict(archive, {run}))`` of every run of ``archive``, by run id, in one pass.

    Every run is summarised as a label of its own: one sort of all the runs' samples (a
    few runs' worth of attempts at a time, as ``compute_summaries`` does labels) instead
    of one per run, and, with the summaries cache, the runs' entries read and written
    together, under the keys ``compute_summaries`` of the one run uses. The figures are
    the same: every statistic is computed within its (run, case, metric) group.
    """
    ids = archive.runs["run_id"].astype(str).tolist()
    label_of = dict(zip(ids, archive.runs["label"].astype(str)))
    store = _summary_store(archive)
    keys = {r: label_key([archive.run_keys[r]], confidence) for r in ids} if store is not None else {}
    have = store.get("labels", list(keys.values())) if store is not None else {}
    frames = {r: have[keys[r]] for r in ids if keys.get(r) in have}
    missing = [r for r in ids if r not in frames]
    if missing:
        attempts = archive.cases.groupby("run_id", observed=True).size()
        sizes = {str(k): int(v) for k, v in attempts.items()}
        unit_keys = {archive.run_keys[r]: r for r in missing} if store is not None else {}
        unstored = {r for k, r in unit_keys.items() if k not in store.get("units", list(unit_keys))} if unit_keys else set()
        fresh_parts = []
        # As compute_summaries does labels: each chunk's units stored as they come, everything written once.
        with store.deferred() if store is not None else nullcontext():
            for chunk in _chunks(missing, sizes, SUMMARY_CHUNK_ATTEMPTS):
                units: list[pd.DataFrame] = []
                fresh_parts.append(_pooled_summaries(_runs_as_labels(_restricted(archive, set(chunk))), confidence,
                                                     units_out=units))
                todo = unstored & set(chunk)
                if units and todo:  # the units' label is the run's own again
                    u = units[0][units[0]["run_id"].astype(str).isin(todo)]
                    _store_units(store, archive, u.assign(label=u["run_id"].astype(str).map(label_of)), todo)
                del units
            fresh = pd.concat(fresh_parts, ignore_index=True)
            run_col = fresh["label"].astype(str)
            fresh["label"] = run_col.map(label_of)
            by_run = {str(r): g.reset_index(drop=True) for r, g in fresh.groupby(run_col, sort=False)}
            empty = fresh.iloc[0:0]
            new = {r: by_run.get(r, empty) for r in missing}
            if store is not None:
                store.put("labels", {keys[r]: (new[r], [archive.run_keys[r]]) for r in missing})
        frames.update(new)
    # Each run's rows in compute_summaries' order, then every run's case information at once.
    parts = [frames[r].sort_values(["label", "case_id", "metric"], kind="stable").assign(run_id=r)
             for r in ids if not frames[r].empty]
    out = {r: pd.DataFrame({c: [] for c in SUMMARY_COLUMNS}) for r in ids}
    if parts:
        every = _with_case_info(pd.concat(parts, ignore_index=True), archive.cases, by_run=True)
        for r, g in every.groupby("run_id", sort=False):
            out[str(r)] = g[list(SUMMARY_COLUMNS)].reset_index(drop=True)
    return out


def _runs_as_labels(archive: Archive) -> Archive:
    """``archive`` with each sample's label replaced by its run id (the same codes and categories)."""
    s = archive.samples
    return replace(archive, samples=s.assign(label=s["run_id"]))


# Labels summarised together hold at most about this many attempts (a few million samples):
# an archive of any size is summarised in bounded memory.
SUMMARY_CHUNK_ATTEMPTS = 100_000


def _chunks(labels: list[str], attempts: dict[str, int], limit: int) -> list[list[str]]:
    """``labels`` in order, in consecutive groups of at most ``limit`` attempts (a larger label alone)."""
    out: list[list[str]] = []
    size = 0
    for label in labels:
        n = attempts.get(label, 0)
        if not out or (size + n > limit and out[-1]):
            out.append([])
            size = 0
        out[-1].append(label)
        size += n
    return out


def _pooled_summaries(archive: Archive, confidence: float, units_out: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """``compute_summaries`` without the case information, from the samples; ``units_out``
    receives ``_units`` of the same samples, computed on the way."""
    s = archive.ok_samples()
    if s.empty:
        return pd.DataFrame({c: [] for c in SUMMARY_COLUMNS if c not in ("workload", "params")})
    keys = ["label", "case_id", "metric"]
    # Everything per unit first (one sort), then the groups as combinations of the units'
    # category codes, in category order (the order a sorted groupby on them gives).
    u, unit_of, first = _unit_summaries(s)
    if units_out is not None:
        units_out.append(u)
    parts = [s[k].cat.codes.to_numpy(np.int64)[first] for k in keys]
    combined = (parts[0] * (int(parts[1].max()) + 1) + parts[1]) * (int(parts[2].max()) + 1) + parts[2]
    distinct, u_code = np.unique(combined, return_inverse=True)
    u_code = u_code.astype(np.int64).ravel()
    n_groups = distinct.size
    group_first = first[np.unique(u_code, return_index=True)[1]]
    groups = pd.DataFrame({k: _strings_at(s[k], group_first) for k in keys})
    stats = compute_pooled_summaries(s["value"].to_numpy(np.float64), u_code[unit_of], n_groups=n_groups)
    n_units = np.bincount(u_code, minlength=n_groups)
    run_codes = s["run_id"].cat.codes.to_numpy(np.int64)[first]
    n_runs = _count_distinct(u_code, run_codes, n_groups)

    loc = locate_groups(u, u_code, n_groups, confidence=confidence)
    positive = loc["positive"].to_numpy()
    const = (stats.n_samples > 0) & (stats.q1 == stats.q3) & np.isclose(stats.cv, 0.0)
    with np.errstate(over="ignore"):
        estimate = np.where(positive, np.exp(loc["estimate"]), np.where(const, stats.median, np.nan))
        lo = np.where(positive, np.exp(loc["ci_low"]), np.where(const, stats.median, np.nan))
        hi = np.where(positive, np.exp(loc["ci_high"]), np.where(const, stats.median, np.nan))
    out = groups.assign(
        unit=_strings_at(s["unit"], group_first),
        better=_strings_at(s["better"], group_first),
        median=stats.median,
        ci_low=lo,
        ci_high=hi,
        mean=stats.mean,
        q1=stats.q1,
        q3=stats.q3,
        iqr=stats.iqr,
        cv=stats.cv,
        n_samples=stats.n_samples,
        n_processes=n_units,
        n_runs=n_runs,
        estimate=estimate,
        runs_covered=loc["runs_covered"].to_numpy(),
    )
    return out


# ----------------------------------------------------------------- comparison


def compare_labels(
    archive: Archive,
    baseline: str,
    candidate: str,
    noise: float = 0.01,
    single_band: float = 0.10,
    correction: str = "bh",
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    moderate: bool = True,
    equivalence: float | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline``; each is ``LABEL`` or ``LABEL@RUN_ID``.

    Every (case, metric) with ``better`` lower or higher that both sides measured gets a
    row (columns: the module docstring). The model, per row:

    1. Each worker process is reduced to the log of its median (``_units``).
    2. *Paired* when the two sides are one interleaved recording (schema 2: the runs of
       the two sides share ``interleave_group`` one to one; schema 1: every run says
       ``interleaved`` = True and each baseline run started within a minute of one
       candidate run). Processes are paired by round (``cases.round``, else the process
       index, as it ran) and the per-round log differences are the replicates, grouped by
       run pair. Otherwise *hierarchical*: the log medians of each side, grouped by run.
    3. ``reporter.model.stats.compute_oneway`` gives the within-run and between-run mean
       squares; with ``moderate`` each is squeezed across the article's rows
       (``squeeze_variances``, with the within-process sampling variance as the trend's
       covariate).
    4. ``compute_hierarchical_tests``: the run-level component is in the CI when a side
       has two or more runs (or the recording has two run pairs); with one run a side it
       is borrowed from the runs of labels in ``archive`` recorded on the same device
       that have two or more runs of the case (``NoteCode.RUN_LEVEL_BORROWED``), and
       otherwise the row says it is not covered (``RUN_LEVEL_NOT_COVERED``).
    5. ``adjust_pvalues`` (``correction``, Benjamini–Hochberg by default) over the tested
       rows; ``compute_verdict`` with the ``noise`` band.

    Rows with fewer than two processes on a side (two rounds when paired) get the
    estimate and ``Verdict.TOO_FEW``, never better/worse. Rows where every sample of each
    side has one value (counts, sizes) are deterministic: ``changed`` or ``unchanged``,
    no CI; a time, rate or utilisation (``MEASURED_UNITS``) only when each side has two
    or more samples, so a single cold compile a side is too few, not ``changed``. Rows with zero or negative values that vary have no ratio: ``inconclusive``.
    ``single_band`` flags a row with no significant difference whose CI still reaches
    beyond ±``single_band`` (``NoteCode.TOO_NOISY``).

    Raises ``ReporterError`` for an unknown label or run, a selector that picks the
    same runs on both sides, a bad option value, or no (case, metric) on both sides.
    """
    equivalence = _checked_options(noise, single_band, correction, alpha, equivalence)
    sides = _selected_sides(archive, baseline, candidate)
    ub, uc = _ranked(sides["baseline"]), _ranked(sides["candidate"])
    keys, unmatched = _matched_keys(ub, uc, baseline, candidate)
    pairs = _run_pairs(archive, sides["baseline"], sides["candidate"])
    lenders = _Lenders(archive, sides)
    rows = _compare_rows(
        lenders, sides, ub, uc, keys, pairs, noise=noise, single_band=single_band, correction=correction,
        alpha=alpha, confidence=confidence, moderate=moderate, equivalence=equivalence,
    )
    metric, geomean, geomeans = _geomeans(lenders, sides, ub, uc, rows, pairs, noise=noise, alpha=alpha,
                                          confidence=confidence, equivalence=equivalence)
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        rows=rows.drop(columns=["_run_level", "_runs_needed"]),
        geomean=geomean,
        geomeans=geomeans,
        geomean_metric=metric,
        unmatched=unmatched,
        noise=noise,
        single_band=single_band,
        correction=correction,
        alpha=alpha,
        analysis=(Analysis.PAIRED if pairs else Analysis.HIERARCHICAL).value,
        **_overall(rows, paired=bool(pairs)),
        problems=list(archive.problems),
        borrowed_on=tuple(sorted(lenders.devices)) if lenders.used else (),
        equivalence=equivalence,
    )


def _overall(rows: pd.DataFrame, *, paired: bool) -> dict[str, Any]:
    """The comparison's figures over its rows: the count of each verdict and, over the tested rows,
    whether every CI holds run-to-run variation, the median MDE and the replicate advice."""
    tested = rows["analysis"].isin([Analysis.PAIRED.value, Analysis.HIERARCHICAL.value]) & rows["p_value"].notna()
    counts = Counter(rows["verdict"])
    return {
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "run_level_covered": bool(tested.any() and rows.loc[tested, "_run_level"].isin(["replicated", "borrowed"]).all()),
        "mde": float(np.nanmedian(rows.loc[tested, "mde"])) if tested.any() else float("nan"),
        "advice": _advice(rows[tested], paired=paired),
    }


def _checked_options(noise: float, single_band: float, correction: str, alpha: float, equivalence: float | None) -> float:
    """The equivalence band (by default the larger of ``EQUIVALENCE`` and ``noise``); ``ReporterError``
    for an option out of its range."""
    if correction not in ("holm", "bh"):
        raise ReporterError(f"correction must be 'holm' or 'bh', not {correction!r}")
    equivalence = max(EQUIVALENCE, noise) if equivalence is None else equivalence
    for name, value in (("noise", noise), ("single_band", single_band), ("equivalence", equivalence)):
        if not (np.isfinite(value) and 0 <= value < 1):
            raise ReporterError(f"{name} must be a fraction in [0, 1), not {value!r}")
    if not (0 < alpha < 1):
        raise ReporterError(f"alpha must lie in (0, 1), not {alpha!r}")
    return equivalence


def _selected_sides(archive: Archive, baseline: str, candidate: str) -> dict[str, Archive]:
    """The runs each selector picks; ``ReporterError`` where the two share a run."""
    sides = {"baseline": archive.select(baseline), "candidate": archive.select(candidate)}
    b_ids = set(sides["baseline"].runs["run_id"].astype(str))
    c_ids = set(sides["candidate"].runs["run_id"].astype(str))
    if b_ids & c_ids:
        raise ReporterError(
            f"baseline {baseline!r} and candidate {candidate!r} share run(s) {', '.join(sorted(b_ids & c_ids))}; "
            "compare two labels, or two runs with LABEL@RUN_ID"
        )
    return sides


def _matched_keys(
    ub: pd.DataFrame, uc: pd.DataFrame, baseline: str, candidate: str
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The (case, metric) pairs both sides measured, sorted, and (case, metric, side) of those only one
    side did; ``ReporterError`` when none is on both."""
    kb = set(zip(ub["case_id"].tolist(), ub["metric"].tolist()))
    kc = set(zip(uc["case_id"].tolist(), uc["metric"].tolist()))
    unmatched = sorted([(c, m, "baseline") for c, m in kb - kc] + [(c, m, "candidate") for c, m in kc - kb])
    keys = sorted(kb & kc)
    if not keys:
        raise ReporterError(
            f"no case measured on both {baseline!r} and {candidate!r}"
            + (f" ({len(unmatched)} case/metric pair(s) on one side only)" if unmatched else "")
        )
    return keys, unmatched


def _run_pairs(archive: Archive, b: Archive, c: Archive) -> list[tuple[str, str]] | None:
    """The (baseline run, candidate run) pairs of one interleaved recording, or None."""
    b_runs = b.runs["run_id"].astype(str).tolist()
    c_runs = c.runs["run_id"].astype(str).tolist()
    if len(b_runs) != len(c_runs) or not b_runs:
        return None
    env = archive.environment
    run = env[env["section"].astype(str) == "run"]
    info = {
        (str(r), str(k)): str(v)
        for r, k, v in zip(run["run_id"], run["key"], run["value"])
        if str(k) in ("interleave_group", "interleaved")
    }
    group = {r: info.get((r, "interleave_group"), "") for r in b_runs + c_runs}
    if all(group.values()):
        by_group = {group[r]: r for r in c_runs}
        pairs = [(r, by_group.get(group[r], "")) for r in b_runs]
        if all(p for _, p in pairs) and len({p for _, p in pairs}) == len(c_runs):
            return pairs
        return None
    if not all(info.get((r, "interleaved")) == "True" for r in b_runs + c_runs):
        return None
    start = dict(zip(archive.runs["run_id"].astype(str), archive.runs["started_at"]))
    pairs = []
    free = set(c_runs)
    for r in b_runs:
        best = min(free, key=lambda x: abs((start[x] - start[r]).total_seconds()), default=None)
        if best is None or abs((start[best] - start[r]).total_seconds()) > PAIR_WINDOW_S:
            return None
        pairs.append((r, best))
        free.discard(best)
    return pairs


def _device_names(side: Archive) -> set[str]:
    return {str(x) for x in side.runs["device_name"].dropna()}


def run_methods(archive: Archive, *, policy: bool = True) -> dict[str, str]:
    """Per run id: the measurement method it was recorded with (``policy=False``: the
    collector's timing method alone, without the suite's policy).

    Two runs share a method when they share the collector's timing method (the run entry
    ``timing_method``; runs recorded before it existed are one method, ``legacy``) and the
    suite's timing policy. Runs of one label recorded by different timers differ by the
    method as well as by chance, so the run-to-run variance borrowed for a one-run side is
    estimated within methods only. Numbered methods are not told apart by the collector's
    commit: most commits leave the timing alone, and splitting by them left one-run CPU pairs
    with nothing to borrow. Runs of the unnumbered (legacy) timer are, with ``policy``: two
    H200 collectors of that timer moved the time geomean of one stack by 9.6%.
    """
    env = archive.environment
    if env.empty:
        return {}
    keys = {("run", "timing_method"): "timing", ("run", "policy"): "policy", ("run", "git_commit"): "commit"}
    section, key = env["section"].astype(str), env["key"].astype(str)
    wanted = np.zeros(len(env), dtype=bool)
    for sec, k in keys:
        wanted |= ((section == sec) & (key == k)).to_numpy()
    rows = env[wanted]
    found: dict[str, dict[str, str]] = {}
    for run_id, sec, k, value in zip(rows["run_id"].astype(str), rows["section"].astype(str),
                                     rows["key"].astype(str), rows["value"].astype(str)):
        found.setdefault(run_id, {})[keys[(sec, k)]] = value
    out = {}
    for run_id in archive.runs["run_id"].astype(str):
        f = found.get(run_id, {})
        method = f"timing={f.get('timing') or 'legacy'}"
        if policy and not f.get("timing"):
            # An unnumbered (legacy) timer is known only by the code that ran it: its runs
            # lend to each other only within one collector commit.
            method += f";commit={f.get('commit', '')}"
        out[run_id] = f"{method};policy={f.get('policy', '')}" if policy else method
    return out


def timing_methods(archive: Archive) -> dict[str, str]:
    """Per run id, the collector's timing method alone (``run_methods(policy=False)``), as a
    reader sees it: ``4``, or ``legacy`` for runs recorded before methods were numbered."""
    return {r: m.removeprefix("timing=") for r, m in run_methods(archive, policy=False).items()}


def _borrow_pool(archive: Archive, sides: dict[str, Archive]) -> pd.DataFrame:
    """Units of every (label, method) with two or more runs on the compared sides' devices,
    among the runs recorded with a method of the compared runs (``run_methods``).

    The ``label`` column of the result names the label and the method, so variance is
    pooled only between runs measured the same way. Runs recorded nearest in time to the
    compared runs come first: at most ``MAX_LENDER_RUNS`` of them lend, so a device's
    archive that grows over months lends what its machines do now.
    """
    devices = _device_names(sides["baseline"]) | _device_names(sides["candidate"])
    runs = archive.runs
    same = runs[runs["device_name"].astype(str).isin(devices)] if devices else runs.iloc[0:0]
    if same.empty:
        return pd.DataFrame()
    methods = run_methods(archive)
    # Only runs measured the way the compared runs were measured say how far such runs move.
    compared = {methods.get(r, "") for side in sides.values() for r in side.runs["run_id"].astype(str)}
    same = same[same["run_id"].astype(str).map(methods).fillna("").isin(compared)]
    group = same["label"].astype(str) + "\x1f" + same["run_id"].astype(str).map(methods).fillna("")
    per_group = same.groupby(group)["run_id"].nunique()
    keep = same[group.isin(set(per_group[per_group >= 2].index))]
    keep = _nearest_runs(keep, sides, group)
    if keep.empty:
        return pd.DataFrame()
    ids = set(keep["run_id"].astype(str))
    if len(ids) == len(archive.runs):  # every run of the archive: no copy of its samples
        sub = archive
    else:
        sub = replace(archive, runs=keep.reset_index(drop=True), environment=_rows_of(archive.environment, ids),
                      cases=_rows_of(archive.cases, ids), samples=archive.lazy_rows(ids))
    pool = _ranked(sub)
    if pool.empty:
        return pool
    run_ids = pool["run_id"].astype(str)
    pool["label"] = pool["label"].astype(str) + "\x1f" + run_ids.map(methods).fillna("")
    return pool


def _nearest_runs(runs: pd.DataFrame, sides: dict[str, Archive], group: pd.Series) -> pd.DataFrame:
    """The ``MAX_LENDER_RUNS`` runs of ``runs`` nearest in start time to the compared runs, in
    groups (``group``: label and method) that keep two runs or more."""
    if runs.empty:
        return runs
    starts = pd.concat([s.runs["started_at"] for s in sides.values()])
    centre = starts.dropna().median() if starts.notna().any() else None
    if centre is not None and runs["started_at"].notna().all():
        runs = runs.assign(_gap=(runs["started_at"] - centre).abs()).sort_values(["_gap", "run_id"], kind="stable")
        runs = runs.head(MAX_LENDER_RUNS).drop(columns="_gap")
    g = group.reindex(runs.index)
    sizes = runs.groupby(g)["run_id"].transform("nunique")
    return runs[sizes >= 2]


class _Lenders:
    """The runs a comparison may borrow run-level variance from: ``_borrow_pool``, read once, on first use."""

    def __init__(self, archive: Archive, sides: dict[str, Archive]) -> None:
        self.archive, self.sides = archive, sides
        self.devices = _device_names(sides["baseline"]) | _device_names(sides["candidate"])
        self._pool: pd.DataFrame | None = None

    @property
    def used(self) -> bool:
        return self._pool is not None

    def pool(self) -> pd.DataFrame:
        if self._pool is None:
            self._pool = _borrow_pool(self.archive, self.sides)
        return self._pool


def _pool_run_variance(
    pool: pd.DataFrame, code_of: dict[tuple[str, str], int], n_rows: int, x: np.ndarray, moderate: bool, sign: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[str, ...]]]:
    """Per row: the run-level variance borrowed from ``pool``, its df, the runs it rests on and their labels."""
    nan = np.full(n_rows, np.nan)
    none: list[tuple[str, ...]] = [() for _ in range(n_rows)]
    if pool.empty:
        return nan, nan, np.zeros(n_rows), none
    code = np.array([code_of.get(k, -1) for k in zip(pool["case_id"].tolist(), pool["metric"].tolist())], dtype=np.int64)
    keep = (code >= 0) & (pool["median"].to_numpy() > 0)
    p = pool[keep]
    code = code[keep]
    if p.empty:
        return nan, nan, np.zeros(n_rows), none
    label = pd.factorize(p["label"])[0]
    units = _codes(p["run_id"], p["process"])
    # Each lender run's shared effect is its median over the rows: a run in which only some
    # rows moved (the short kernels of an older timer, 1.6x slower) would move the mean of
    # every row, and that variance, added back to every row, widened the CIs of the H200 A/A
    # article from 0.03 to 0.21. The compared runs keep the mean: the processes of the H200
    # reference A/A are slow on several rows together, and the mean is what absorbs it.
    ow, within, between, _, _ = moderated_oneway(
        np.log(p["median"].to_numpy(np.float64)), code, label, pd.factorize(p["run_id"])[0], units,
        sign=sign, n_rows=n_rows, n_sides=int(label.max()) + 1, x=x, moderate=moderate, robust=True,
    )
    var, df = compute_run_variance(ow, within, between)
    n_runs = np.where(ow.df_between > 0, np.sum(np.where(ow.n_groups >= 2, ow.n_groups, 0), axis=1), 0)
    lent = pd.DataFrame({"row": code, "label": p["label"].astype(str).str.partition("\x1f")[0].to_numpy(),
                         "group": label, "run": p["run_id"].astype(str).to_numpy()})
    runs_per = lent.groupby(["row", "group"])["run"].transform("nunique")
    lent = lent[runs_per >= 2].drop_duplicates(["row", "label"])
    labels = list(none)
    for row, names in lent.groupby("row")["label"]:
        labels[int(row)] = tuple(sorted(names))
    return var, df, n_runs, labels


@dataclass(frozen=True)
class _RowFacts:
    """The rows before any model: per side (``b``, ``c``) the samples, extremes, units, runs and
    pooled median of each row; each row's ``unit`` and ``better`` (``info``) and whether higher is
    better; which rows are ``deterministic`` (one value a side), have a ``nonpositive`` value that
    varies (no ratio), or are ``testable``."""

    b: pd.DataFrame
    c: pd.DataFrame
    info: pd.DataFrame
    higher: np.ndarray
    deterministic: np.ndarray
    nonpositive: np.ndarray
    testable: np.ndarray


@dataclass(frozen=True)
class _Layout:
    """The units that enter the rows' tests, as ``_moderated`` takes them: ``arrays`` (values, rows,
    sides, runs, units) of both sides; ``spread`` and ``spread_rows``, the units' sampling variances
    for the trend covariate; ``paired``, the per-round differences (values, rows, run pairs, rounds)
    of an interleaved recording, else None."""

    arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    spread: np.ndarray
    spread_rows: np.ndarray
    paired: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None


@dataclass(frozen=True)
class _Fit:
    """The rows' model: the two-sided layout ``ind`` (its side means are the sides' estimates); the
    layout the test ran on (``test_ow``: the paired differences, or ``ind``) with its within-run mean square ``within``; the ``tests``; the prior df
    and variance of the within-run part (to plan rows with too few units); the runs lent to each row
    and their labels."""

    ind: OneWay
    test_ow: OneWay
    within: tuple[np.ndarray, np.ndarray]
    tests: HierarchicalTests
    prior_df: float
    prior: np.ndarray | None
    lent_runs: np.ndarray
    lender_labels: list[tuple[str, ...]]


@dataclass(frozen=True)
class _Calls:
    """The rows' tests after correction: which were ``tested`` and which have ``too_few`` units; the
    ratio, its CI as shown (at ``level``, above the nominal one where ``adjusted``), p and corrected
    p; and the planning figures: ``mde``, ``processes_needed`` and ``runs_needed``."""

    tested: np.ndarray
    too_few: np.ndarray
    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p: np.ndarray
    p_adjusted: np.ndarray
    level: np.ndarray
    adjusted: np.ndarray
    mde: np.ndarray
    processes_needed: np.ndarray
    runs_needed: np.ndarray


@dataclass(frozen=True)
class _Shown:
    """Per row, what it says: verdict, analysis and notes, and the ratio, CI and side values shown
    (the model's, or a deterministic row's values)."""

    verdicts: list[str]
    analyses: list[str]
    notes: list[tuple[Note, ...]]
    ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    baseline_value: np.ndarray
    candidate_value: np.ndarray


def _compare_rows(
    lenders: _Lenders,
    sides: dict[str, Archive],
    ub: pd.DataFrame,
    uc: pd.DataFrame,
    keys: list[tuple[str, str]],
    pairs: list[tuple[str, str]] | None,
    *,
    noise: float,
    single_band: float,
    correction: str,
    alpha: float,
    confidence: float,
    moderate: bool,
    equivalence: float,
) -> pd.DataFrame:
    """The rows of the comparison: the statistics of every matched (case, metric), with its case's
    workload, family, params and work, sorted by workload, case and metric."""
    code_of = {k: i for i, k in enumerate(keys)}
    located = {"baseline": locate(ub, confidence=confidence), "candidate": locate(uc, confidence=confidence)}
    for u in (ub, uc):
        u["row"] = [code_of.get(k, -1) for k in zip(u["case_id"].tolist(), u["metric"].tolist())]
    ub, uc = ub[ub["row"] >= 0], uc[uc["row"] >= 0]
    facts = _row_facts(sides, ub, uc, keys)
    if pairs:
        layout = _paired_layout(ub, uc, pairs, facts.testable)
    else:
        layout = _independent_layout(ub, uc, facts.testable)
    fit = _fit_rows(layout, facts, lenders, code_of, moderate=moderate, confidence=confidence)
    side_ci = _side_cis(fit, located, keys, facts.testable)
    calls = _corrected_calls(fit, facts.testable, paired=bool(pairs), noise=noise, correction=correction, alpha=alpha,
                             confidence=confidence)
    shown = _shown(facts, fit, calls, (side_ci["baseline"][0], side_ci["candidate"][0]), paired=bool(pairs),
                   noise=noise, single_band=single_band, alpha=alpha, equivalence=equivalence)
    rows = _with_case_info(_rows_frame(keys, facts, fit, side_ci, calls, shown),
                           pd.concat([sides["baseline"].cases, sides["candidate"].cases]), work=True)
    return rows.sort_values(["workload", "case_id", "metric"], kind="stable").reset_index(drop=True)


def _row_facts(sides: dict[str, Archive], ub: pd.DataFrame, uc: pd.DataFrame, keys: list[tuple[str, str]]) -> _RowFacts:
    """Raw facts per side (samples, extremes, pooled median, runs) and what kind of row each is."""
    n = len(keys)
    info = pd.concat([ub, uc]).groupby("row")[["unit", "better"]].first().reindex(range(n))
    facts = {}
    for name, u, side in (("b", ub, sides["baseline"]), ("c", uc, sides["candidate"])):
        g = u.groupby("row")
        facts[name] = pd.DataFrame(
            {
                "n_samples": g["n"].sum(),
                "vmin": g["vmin"].min(),
                "vmax": g["vmax"].max(),
                "umin": g["median"].min(),
                "n_units": g.size(),
                "n_runs": g["run_id"].nunique(),
            }
        ).reindex(range(n))
        facts[name]["median"] = _pooled_medians(side, keys)
    fb, fc = facts["b"], facts["c"]
    # A time, rate or utilisation recorded once on a side (one process, one sample: a cold
    # compile) is one draw of a measurement, not a fixed quantity: tested like the others
    # (and then too few), never called changed on two draws.
    single_draw = (info["unit"].isin(MEASURED_UNITS) & ((fb["n_samples"] < 2) | (fc["n_samples"] < 2))).to_numpy()
    deterministic = ((fb["vmin"] == fb["vmax"]) & (fc["vmin"] == fc["vmax"])).to_numpy() & ~single_draw
    nonpositive = ((fb["umin"] <= 0) | (fc["umin"] <= 0) | (fb["vmin"] <= 0) | (fc["vmin"] <= 0)).to_numpy() & ~deterministic
    return _RowFacts(b=fb, c=fc, info=info, higher=(info["better"] == BETTER_HIGHER).to_numpy(),
                     deterministic=deterministic, nonpositive=nonpositive, testable=~deterministic & ~nonpositive)


def _paired_layout(ub: pd.DataFrame, uc: pd.DataFrame, pairs: list[tuple[str, str]], testable: np.ndarray) -> _Layout:
    """The units of an interleaved recording that have a partner in their round, and their differences."""
    pair_of_b = {b: i for i, (b, _) in enumerate(pairs)}
    pair_of_c = {c: i for i, (_, c) in enumerate(pairs)}
    left = ub.assign(pair=ub["run_id"].map(pair_of_b))
    right = uc.assign(pair=uc["run_id"].map(pair_of_c))
    both = left.merge(right, on=["row", "pair", "round"], suffixes=("_b", "_c"))
    both = both[testable[both["row"].to_numpy()]]
    rows_arr = both["row"].to_numpy(np.int64)
    yb = np.log(both["median_b"].to_numpy(np.float64))
    yc = np.log(both["median_c"].to_numpy(np.float64))
    grp = both["pair"].to_numpy(np.int64)
    rnd = _codes(both["pair"], both["round"])
    arrays = (np.r_[yb, yc], np.r_[rows_arr, rows_arr], np.r_[np.zeros_like(rows_arr), np.ones_like(rows_arr)],
              np.r_[grp, grp], np.r_[rnd, rnd + rnd.max() + 1] if rnd.size else np.r_[rnd, rnd])
    return _Layout(arrays=arrays, spread=np.r_[both["spread_b"].to_numpy(), both["spread_c"].to_numpy()],
                   spread_rows=np.r_[rows_arr, rows_arr], paired=(yc - yb, rows_arr, grp, rnd))


def _independent_layout(ub: pd.DataFrame, uc: pd.DataFrame, testable: np.ndarray) -> _Layout:
    """Every unit of the testable rows: the log medians of each side, grouped by run."""
    parts = []
    for s, u in ((0, ub), (1, uc)):
        u = u[testable[u["row"].to_numpy()]]
        parts.append((u["row"].to_numpy(np.int64), np.full(len(u), s), pd.factorize(u["run_id"])[0],
                      np.log(u["median"].to_numpy(np.float64)), u["spread"].to_numpy(),
                      _codes(u["run_id"], u["process"])))
    rows_arr = np.r_[parts[0][0], parts[1][0]]
    arrays = (np.r_[parts[0][3], parts[1][3]], rows_arr, np.r_[parts[0][1], parts[1][1]],
              np.r_[parts[0][2], parts[1][2]], np.r_[parts[0][5], parts[1][5] + len(parts[0][5])])
    return _Layout(arrays=arrays, spread=np.r_[parts[0][4], parts[1][4]], spread_rows=rows_arr, paired=None)


def _fit_rows(
    layout: _Layout, facts: _RowFacts, lenders: _Lenders, code_of: dict[tuple[str, str], int], *, moderate: bool,
    confidence: float,
) -> _Fit:
    """The moderated one-way layouts and the hierarchical tests, borrowing run-level variance for
    one-run sides (``_pool_run_variance``) where the sides are not paired."""
    n, higher, testable = len(code_of), facts.higher, facts.testable
    sign = np.where(higher, 1.0, -1.0)
    x = _covariate(layout.spread, layout.spread_rows, n)
    ind, w_ind, b_ind, d0_ind, prior_ind = moderated_oneway(*layout.arrays, sign=sign, n_rows=n, n_sides=2, x=x, moderate=moderate)
    lent_runs = np.zeros(n)
    lender_labels: list[tuple[str, ...]] = [() for _ in range(n)]
    if layout.paired is not None:
        diff, rows_arr, grp, rnd = layout.paired
        d, w_t, b_t, d0, prior = moderated_oneway(diff, rows_arr, np.zeros_like(rows_arr), grp, rnd, sign=sign, n_rows=n,
                                            n_sides=1, x=x, moderate=moderate)
        tests = compute_hierarchical_tests(d, higher_is_better=higher, paired=True, within=w_t, between=b_t,
                                           confidence=confidence)
        test_ow = d
    else:
        borrowed = None
        if (testable & (ind.df_between == 0)).any():
            var, dfv, lent_runs, lender_labels = _pool_run_variance(lenders.pool(), code_of, n, x, moderate, sign)
            borrowed = (var, dfv)
        tests = compute_hierarchical_tests(ind, higher_is_better=higher, paired=False, within=w_ind, between=b_ind,
                                           borrowed=borrowed, confidence=confidence)
        w_t, test_ow, d0, prior = w_ind, ind, d0_ind, prior_ind
    return _Fit(ind=ind, test_ow=test_ow, within=w_t, tests=tests,
                prior_df=d0, prior=prior, lent_runs=lent_runs, lender_labels=lender_labels)


def _side_cis(fit: _Fit, located: dict[str, pd.DataFrame], keys: list[tuple[str, str]],
              testable: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per side: its estimate and the CI of its location (``reporter.model.location``: the interval
    its run pages and trends show), NaN with too few units or where the row has no ratio."""
    side_ci = {}
    index = pd.MultiIndex.from_tuples(keys)
    with np.errstate(invalid="ignore", over="ignore"):
        for s, name in ((0, "baseline"), (1, "candidate")):
            loc = located[name].set_index(["case_id", "metric"])[["ci_low", "ci_high"]].reindex(index)
            ok = testable & (fit.ind.n_units[:, s] >= MIN_UNITS)
            side_ci[name] = (np.exp(fit.ind.mean[:, s]), np.where(ok, loc["ci_low"].to_numpy(np.float64), np.nan),
                             np.where(ok, loc["ci_high"].to_numpy(np.float64), np.nan))
    return side_ci


def _corrected_calls(
    fit: _Fit, testable: np.ndarray, *, paired: bool, noise: float, correction: str, alpha: float, confidence: float
) -> _Calls:
    """The corrected p-values, the CI at the level at which it agrees with the corrected test, and
    the replicates that would resolve ±2%."""
    tests, test_ow, n = fit.tests, fit.test_ow, len(testable)
    enough = (test_ow.n_units[:, 0] >= MIN_UNITS) & ((test_ow.n_units[:, 1] >= MIN_UNITS) if not paired else True)
    tested = testable & enough & np.isfinite(tests.p_value)
    too_few = testable & ~enough
    ratio = np.exp(tests.estimate)
    lo, hi = np.exp(tests.ci_low), np.exp(tests.ci_high)
    p = np.where(tested, tests.p_value, np.nan)
    p_adj = adjust_pvalues(p, correction)
    # The CI shown beside a verdict is at the level at which it agrees with the corrected test.
    level_shown = compute_display_level(p, p_adj, correction=correction, alpha=alpha, confidence=confidence)
    adjusted = tested & (level_shown > confidence)
    if adjusted.any():
        with np.errstate(invalid="ignore"):
            half = stdtrit(tests.df, 1 - (1 - np.where(adjusted, level_shown, confidence)) / 2) * tests.se
        lo = np.where(adjusted, np.exp(tests.estimate - half), lo)
        hi = np.where(adjusted, np.exp(tests.estimate + half), hi)
    mde = np.where(tested, compute_mde(tests.se, tests.df, noise=noise, alpha=alpha), np.nan)
    runs_now = np.minimum(test_ow.n_groups[:, 0], test_ow.n_groups[:, -1])
    needed = compute_processes_needed(fit.within[0], tests.run_var, tests.df, runs=runs_now, paired=paired, noise=noise,
                                      alpha=alpha)
    per_run = np.maximum(np.floor(np.minimum(test_ow.n_units[:, 0], test_ow.n_units[:, -1]) / np.maximum(runs_now, 1)), 1)
    runs_needed = compute_runs_needed(fit.within[0], tests.run_var, tests.df, processes_per_run=per_run, paired=paired,
                                      noise=noise, alpha=alpha)
    if too_few.any():
        d0 = fit.prior_df
        df_plan = np.full(n, d0 if d0 and np.isfinite(d0) else 1e6)
        from_prior = compute_processes_needed(fit.prior if fit.prior is not None else np.full(n, np.nan), tests.run_var,
                                              df_plan, runs=np.ones(n), paired=paired, noise=noise, alpha=alpha)
        needed = np.where(too_few, np.fmax(np.nan_to_num(from_prior, nan=MIN_UNITS), MIN_UNITS), needed)
    return _Calls(tested=tested, too_few=too_few, ratio=ratio, ci_low=lo, ci_high=hi, p=p, p_adjusted=p_adj,
                  level=level_shown, adjusted=adjusted, mde=mde, processes_needed=np.where(tested | too_few, needed, np.nan),
                  runs_needed=runs_needed)


def _shown(
    facts: _RowFacts, fit: _Fit, calls: _Calls, values: tuple[np.ndarray, np.ndarray], *, paired: bool, noise: float,
    single_band: float, alpha: float, equivalence: float,
) -> _Shown:
    """Per row: its verdict, analysis and notes, and the ratio, CI and side values it shows."""
    verdicts: list[str] = []
    analyses: list[str] = []
    notes: list[tuple[Note, ...]] = []
    ratio_out, lo_out, hi_out = calls.ratio.copy(), calls.ci_low.copy(), calls.ci_high.copy()
    bval, cval = values[0].copy(), values[1].copy()
    units = fit.test_ow.n_units
    for i in range(len(facts.higher)):
        rn: list[Note] = []
        if facts.deterministic[i]:
            vb, vc = float(facts.b["vmin"].iat[i]), float(facts.c["vmin"].iat[i])
            verdict, analysis, ratio_out[i] = _fixed_call(vb, vc, higher=bool(facts.higher[i]), notes=rn)
            bval[i], cval[i] = vb, vc
            lo_out[i] = hi_out[i] = np.nan
        elif facts.nonpositive[i]:
            verdict, analysis = Verdict.NO_RATIO, Analysis.ESTIMATE
            rn.append(Note.of(NoteCode.NONPOSITIVE))
            ratio_out[i] = lo_out[i] = hi_out[i] = np.nan
            bval[i], cval[i] = float(facts.b["median"].iat[i]), float(facts.c["median"].iat[i])
        elif calls.too_few[i]:
            verdict, analysis = Verdict.TOO_FEW, Analysis.ESTIMATE
            rn.append(Note.of(NoteCode.TOO_FEW_UNITS, n_baseline=int(units[i, 0]), n_candidate=int(units[i, -1]),
                              needed=int(calls.processes_needed[i])))
            lo_out[i] = hi_out[i] = np.nan
        else:
            verdict = compute_verdict(calls.ratio[i], calls.ci_low[i], calls.ci_high[i], calls.p_adjusted[i], noise=noise,
                                      equivalence=equivalence, alpha=alpha)
            analysis = Analysis.PAIRED if paired else Analysis.HIERARCHICAL
            rn += _tested_notes(i, verdict, facts, fit, calls, paired=paired, noise=noise, single_band=single_band,
                                alpha=alpha)
        verdicts.append(verdict.value)
        analyses.append(analysis.value)
        notes.append(tuple(rn))
    return _Shown(verdicts=verdicts, analyses=analyses, notes=notes, ratio=ratio_out, ci_low=lo_out, ci_high=hi_out,
                  baseline_value=bval, candidate_value=cval)


def _fixed_call(vb: float, vc: float, *, higher: bool, notes: list[Note]) -> tuple[Verdict, Analysis, float]:
    """A deterministic row (one value a side): changed or unchanged, and the ratio of its values
    (1 for two equal values that have none)."""
    same = vb == vc
    if not same:
        notes.append(Note.of(NoteCode.VALUE_CHANGED, baseline=vb, candidate=vc))
    if vb > 0 and vc > 0:
        ratio = vc / vb if higher else vb / vc
    else:
        ratio = 1.0 if same else np.nan
    return (Verdict.UNCHANGED if same else Verdict.CHANGED), Analysis.DETERMINISTIC, ratio


def _tested_notes(
    i: int, verdict: Verdict, facts: _RowFacts, fit: _Fit, calls: _Calls, *, paired: bool, noise: float,
    single_band: float, alpha: float,
) -> list[Note]:
    """The notes of tested row ``i``: its pairing, where its run-level variation comes from, an
    adjusted interval, and a significant change within the noise band or a CI too wide to tell."""
    out: list[Note] = []
    if paired:
        out.append(Note.of(NoteCode.PAIRED_ROUNDS, n_pairs=int(fit.test_ow.n_units[i, 0])))
    level = fit.tests.run_level[i]
    if level == "none":
        out.append(Note.of(NoteCode.RUN_LEVEL_NOT_COVERED, n_baseline_runs=int(facts.b["n_runs"].iat[i]),
                           n_candidate_runs=int(facts.c["n_runs"].iat[i])))
    elif level == "borrowed":
        out.append(Note.of(NoteCode.RUN_LEVEL_BORROWED, runs=int(fit.lent_runs[i])))
    if calls.adjusted[i]:
        out.append(Note.of(NoteCode.ADJUSTED_INTERVAL, level=round(float(calls.level[i]), 4)))
    p_adj, lo, hi = calls.p_adjusted[i], calls.ci_low[i], calls.ci_high[i]
    significant = np.isfinite(p_adj) and p_adj < alpha
    if not verdict.is_call and significant:
        out.append(Note.of(NoteCode.WITHIN_NOISE, noise=noise))
    elif verdict == Verdict.INCONCLUSIVE and (lo < 1 / (1 + single_band) or hi > 1 + single_band):
        out.append(Note.of(NoteCode.TOO_NOISY, band=single_band))
    return out


def _rows_frame(
    keys: list[tuple[str, str]], facts: _RowFacts, fit: _Fit, side_ci: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    calls: _Calls, shown: _Shown,
) -> pd.DataFrame:
    """The rows as the table of the module docstring (plus ``_run_level`` and ``_runs_needed`` for the summary)."""
    idx = pd.DataFrame(keys, columns=["case_id", "metric"])
    fb, fc, tested, tests = facts.b, facts.c, calls.tested, fit.tests
    borrowed = tested & (tests.run_level == "borrowed")
    return pd.DataFrame(
        {
            "case_id": idx["case_id"].to_numpy(),
            "metric": idx["metric"].to_numpy(),
            "unit": facts.info["unit"].astype(str).to_numpy(),
            "better": facts.info["better"].astype(str).to_numpy(),
            "baseline_value": shown.baseline_value,
            "candidate_value": shown.candidate_value,
            "baseline_ci_low": side_ci["baseline"][1],
            "baseline_ci_high": side_ci["baseline"][2],
            "candidate_ci_low": side_ci["candidate"][1],
            "candidate_ci_high": side_ci["candidate"][2],
            "baseline_median": fb["median"].to_numpy(),
            "candidate_median": fc["median"].to_numpy(),
            "ratio": shown.ratio,
            "ci_low": shown.ci_low,
            "ci_high": shown.ci_high,
            "ci_level": np.where(tested, calls.level, np.nan),
            "p_value": calls.p,
            "p_adjusted": calls.p_adjusted,
            "verdict": shown.verdicts,
            "notes": shown.notes,
            "analysis": shown.analyses,
            "mde": calls.mde,
            "processes_needed": calls.processes_needed,
            "n_baseline_units": fb["n_units"].fillna(0).to_numpy(np.int64),
            "n_candidate_units": fc["n_units"].fillna(0).to_numpy(np.int64),
            "n_baseline_runs": fb["n_runs"].fillna(0).to_numpy(np.int64),
            "n_candidate_runs": fc["n_runs"].fillna(0).to_numpy(np.int64),
            "n_baseline_samples": fb["n_samples"].fillna(0).to_numpy(np.int64),
            "n_candidate_samples": fc["n_samples"].fillna(0).to_numpy(np.int64),
            "lender_labels": [", ".join(x) if borrowed[i] else "" for i, x in enumerate(fit.lender_labels)],
            "lender_runs": np.where(borrowed, fit.lent_runs, 0).astype(np.int64),
            "run_sd": np.where(tested & (tests.run_level != "none"), np.sqrt(np.nan_to_num(tests.run_var)), np.nan),
            "_run_level": np.where(tested, tests.run_level, ""),
            "_runs_needed": np.where(tested, calls.runs_needed, np.nan),
        }
    )


def _covariate(spread: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Per row: the log of the mean within-process sampling variance of a unit's log median."""
    ok = np.isfinite(spread)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(rows[ok], weights=spread[ok], minlength=n) / np.bincount(rows[ok], minlength=n)
        x = np.log(mean)
    return np.where(np.isfinite(x), x, np.nan)


def _pooled_medians(side: Archive, keys: list[tuple[str, str]]) -> np.ndarray:
    store = _summary_store(side)
    if store is not None and side.selector is not None and "@" not in side.selector:
        ids = side.runs["run_id"].astype(str)
        have = store.get("labels", [label_key([side.run_keys[r] for r in ids], 0.95)])
        if have:  # the label's pooled medians, as compute_summaries stored them
            summary = next(iter(have.values()))
            med = summary.set_index(["case_id", "metric"])["median"]
            return med.reindex(pd.MultiIndex.from_tuples(keys)).to_numpy(np.float64)
    s = side.ok_samples()
    med = s.groupby([s["case_id"].astype(str), s["metric"].astype(str)])["value"].median()
    return med.reindex(pd.MultiIndex.from_tuples(keys)).to_numpy(np.float64)


# -------------------------------------------------------------------- geomean


def _geomeans(
    lenders: _Lenders,
    sides: dict[str, Archive],
    ub: pd.DataFrame,
    uc: pd.DataFrame,
    rows: pd.DataFrame,
    pairs: list[tuple[str, str]] | None,
    *,
    noise: float,
    alpha: float,
    confidence: float,
    equivalence: float,
) -> tuple[str | None, Geomean, dict[str, Geomean]]:
    """The metric of the geomeans, and the overall and per-family geomeans, each with a CI over replicate units.

    Over the tested rows of ``GEOMEAN_METRIC`` (all tested rows when no row has it: the metric is None). Each unit's score is
    the mean over those rows of its oriented log value minus its side's row mean, so an
    effect shared by all cases of a process (or run) stays in the score; the scores go
    through the same one-way model as a row (no moderation: one quantity). The estimate is
    the mean of the rows' log ratios, so the geomean is the geometric mean of the ratios
    shown. Run-level variation with one run a side is borrowed as for rows.
    """
    metric = GEOMEAN_METRIC if (rows["metric"] == GEOMEAN_METRIC).any() else None
    chosen = rows[rows["analysis"].isin([Analysis.PAIRED.value, Analysis.HIERARCHICAL.value])]
    if metric is not None:
        chosen = chosen[chosen["metric"] == metric]
    out: dict[str, Geomean] = {}
    families = sorted(set(chosen["family"]))
    overall = _geomean_of(lenders, sides, ub, uc, chosen, "all", pairs, noise=noise, alpha=alpha, confidence=confidence,
                          equivalence=equivalence)
    for fam in families:
        out[fam] = _geomean_of(lenders, sides, ub, uc, chosen[chosen["family"] == fam], fam, pairs,
                               noise=noise, alpha=alpha, confidence=confidence, equivalence=equivalence)
    return metric, overall, out


def _scores(units: pd.DataFrame, rows: pd.DataFrame, unit_keys: list[str]) -> pd.DataFrame:
    """Each unit's mean over ``rows`` of its oriented log value minus the row's mean on its side.

    As ``groupby(...).mean()`` computes it (NaN skipped, units with a missing key left
    out, units in key order), by codes and ``np.bincount``: a geomean scores every unit
    of both sides, and of the borrowing pool, once per family.
    """
    def keys(df: pd.DataFrame) -> pd.MultiIndex:
        return pd.MultiIndex.from_arrays([df["case_id"].astype(str), df["metric"].astype(str)])

    pos = keys(rows).get_indexer(keys(units)).astype(np.int64)  # rows are one per (case, metric)
    keep = pos >= 0
    u = units[keep]
    if u.empty:
        return u.copy().assign(score=[])
    pos = pos[keep]
    sign = np.where(rows["better"].to_numpy() == BETTER_HIGHER, 1.0, -1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = np.log(u["median"].to_numpy(np.float64)) * sign[pos]
    side_codes, _ = pd.factorize(u["side"], sort=True)
    o = o - _nanmean_by(side_codes * len(rows) + pos, o)[side_codes * len(rows) + pos]
    codes = []
    for k in unit_keys:
        c, _ = pd.factorize(u[k], sort=True)  # -1: a missing key, which groupby leaves out
        codes.append(c.astype(np.int64))
    present = np.all(np.stack(codes) >= 0, axis=0)
    combined = np.zeros(int(present.sum()), np.int64)
    for c in codes:
        combined = combined * (int(c.max(initial=0)) + 1) + c[present]
    distinct, first, group = np.unique(combined, return_index=True, return_inverse=True)
    group = group.ravel()
    at = np.flatnonzero(present)[first]
    out = pd.DataFrame({k: u[k].to_numpy()[at] for k in unit_keys})
    out["score"] = _nanmean_by(group, o[present], distinct.size)
    return out


def _nanmean_by(group: np.ndarray, values: np.ndarray, n: int | None = None) -> np.ndarray:
    """Per group code, the mean of its non-NaN values (NaN when it has none), as pandas' group mean."""
    valid = ~np.isnan(values)
    size = int(n if n is not None else group.max(initial=-1) + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.bincount(group, weights=np.where(valid, values, 0.0), minlength=size)
                / np.bincount(group, weights=valid.astype(np.float64), minlength=size))


def _geomean_of(
    lenders: _Lenders,
    sides: dict[str, Archive],
    ub: pd.DataFrame,
    uc: pd.DataFrame,
    chosen: pd.DataFrame,
    family: str,
    pairs: list[tuple[str, str]] | None,
    *,
    noise: float,
    alpha: float,
    confidence: float,
    equivalence: float,
) -> Geomean:
    k = len(chosen)
    if k == 0:
        return Geomean(float("nan"), float("nan"), float("nan"), 0, family=family)
    log_ratio = float(np.mean(np.log(chosen["ratio"].to_numpy(np.float64))))
    units = pd.concat([ub.assign(side=0), uc.assign(side=1)], ignore_index=True)
    if pairs:
        pair_of = {r: i for i, pr in enumerate(pairs) for r in pr}
        units["pair"] = units["run_id"].map(pair_of)
        # Only rounds measured on both sides, as for the rows.
        both = units.groupby(["case_id", "metric", "pair", "round"])["side"].transform("nunique") == 2
        sc = _scores(units[both], chosen, ["side", "pair", "round"])
        wide = sc.pivot_table(index=["pair", "round"], columns="side", values="score").dropna()
        d = (wide[1] - wide[0]).to_numpy()
        groups = wide.index.get_level_values("pair").to_numpy(np.int64)
        ow = compute_oneway(d, np.zeros(d.size, np.int64), np.zeros(d.size, np.int64), groups, n_rows=1, n_sides=1)
        t = compute_hierarchical_tests(ow, higher_is_better=[True], paired=True, confidence=confidence)
        n_units = int(d.size)
        analysis = Analysis.PAIRED
    else:
        sc = _scores(units, chosen, ["side", "run_id", "process"])
        side = sc["side"].to_numpy(np.int64)
        ow = compute_oneway(sc["score"].to_numpy(np.float64), np.zeros(len(sc), np.int64), side,
                            pd.factorize(sc["run_id"])[0], n_rows=1)
        borrowed = None
        if ow.df_between[0] == 0:
            borrowed = _pool_geomean_variance(lenders.pool(), chosen)
        t = compute_hierarchical_tests(ow, higher_is_better=[True], paired=False, borrowed=borrowed, confidence=confidence)
        n_units = int(min(np.sum(side == 0), np.sum(side == 1)))
        analysis = Analysis.HIERARCHICAL
    se, df = float(t.se[0]), float(t.df[0])
    if not (np.isfinite(se) and se > 0 and np.isfinite(df)):
        return Geomean(float(np.exp(log_ratio)), float("nan"), float("nan"), k, family=family, n_units=n_units,
                       verdict=Verdict.TOO_FEW.value, analysis=Analysis.ESTIMATE.value)
    tq = float(stdtrit(df, 1 - (1 - confidence) / 2))
    lo, hi = np.exp(log_ratio - tq * se), np.exp(log_ratio + tq * se)
    p = float(2 * stdtr(df, -abs(log_ratio) / se))
    ratio = float(np.exp(log_ratio))
    verdict = compute_verdict(ratio, lo, hi, p, noise=noise, equivalence=equivalence, alpha=alpha)
    return Geomean(
        ratio, float(lo), float(hi), k, family=family, n_units=n_units, verdict=verdict.value, analysis=analysis.value,
        mde=float(compute_mde([se], [df], noise=noise, alpha=alpha)[0]), p_value=p, run_level=str(t.run_level[0]),
    )


def _pool_geomean_variance(pool: pd.DataFrame, chosen: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """The run-level variance of a geomean score, from labels with several runs on the same device (``pool``)."""
    if pool.empty:
        return None
    pool = pool[pool["median"] > 0].assign(side=lambda d: pd.factorize(d["label"])[0])
    sc = _scores(pool, chosen, ["side", "run_id", "process"])
    if sc.empty:
        return None
    side = sc["side"].to_numpy(np.int64)
    ow = compute_oneway(sc["score"].to_numpy(np.float64), np.zeros(len(sc), np.int64), side,
                        pd.factorize(sc["run_id"])[0], n_rows=1, n_sides=int(side.max()) + 1)
    var, df = compute_run_variance(ow, (ow.ms_within, ow.df_within), (ow.ms_between, ow.df_between))
    return (var, df) if np.isfinite(var[0]) else None


def _advice(tested: pd.DataFrame, *, paired: bool) -> Advice | None:
    """The noisiest family (largest median MDE) and what would resolve ±2% there, within the bounds."""
    if tested.empty or not np.isfinite(tested["mde"]).any():
        return None
    by = tested.groupby("family")["mde"].median()
    family = str(by.idxmax())
    rows = tested[tested["family"] == family]

    def whole(values: pd.Series) -> int | None:
        v = values.to_numpy(np.float64)
        if np.isnan(v).mean() > 0.5:
            return None  # most rows cannot get there this way
        m = float(np.nanmedian(v)) if np.isfinite(v).any() else math.nan
        return int(math.ceil(m)) if math.isfinite(m) else None

    return Advice(family=family, mde=float(by.max()), processes=whole(rows["processes_needed"]), runs=whole(rows["_runs_needed"]),
                  paired=paired)


# -------------------------------------------------------------------- helpers


def _codes(*columns: pd.Series) -> np.ndarray:
    """One integer code per distinct combination of the columns' values."""
    if not len(columns[0]):
        return np.zeros(0, np.int64)
    return pd.MultiIndex.from_arrays([np.asarray(c) for c in columns]).factorize()[0].astype(np.int64)


# The dtype pandas gives a column of Python strings (``str``, Arrow-backed, in pandas 3).
_STRING_DTYPE = pd.Series(np.array(["x"])).dtype


def _strings_at(column: pd.Series, rows: np.ndarray) -> Any:
    """``column.to_numpy()[rows].astype(str)`` as a frame column, from a categorical's codes
    without turning every row into an object first (5M samples: seconds saved per call);
    an Arrow take where pandas keeps strings in Arrow."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()[rows]
        if not len(codes) or codes.min() >= 0:
            names = np.asarray(column.cat.categories, dtype=object).astype(str)
            if isinstance(_STRING_DTYPE, pd.StringDtype) and _STRING_DTYPE.storage == "pyarrow":
                return pd.array(pa.array(names, pa.string()).take(pa.array(codes)), dtype=_STRING_DTYPE)
            return names[codes]
    return column.to_numpy()[rows].astype(str)


def _count_distinct(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    span = int(values.max()) + 1 if len(values) else 1
    pairs = np.unique(groups * span + values)
    return np.bincount(pairs // span, minlength=n_groups)


def _registry_families() -> dict[str, str]:
    from runformat.workloads import WORKLOADS

    return {name: w.family for name, w in WORKLOADS.items()}


def _with_case_info(df: pd.DataFrame, cases: pd.DataFrame, *, work: bool = False, by_run: bool = False) -> pd.DataFrame:
    """Add workload, family and params (and the work per iteration) of each case_id from cases.parquet
    (``by_run``: of each (run_id, case_id), from that run's cases; ``df["run_id"]`` holds strings)."""
    columns = ["workload", "params", "family"] + (list(WORK_COLUMNS) if work else [])
    on = ["run_id", "case_id"] if by_run else ["case_id"]
    if cases.empty:
        info = pd.DataFrame(columns=[*on, *columns])
    else:
        # The first non-null value per case (a failed attempt may lack the work columns), then
        # the few rows left as plain strings.
        info = cases[[*on, *columns]].groupby(on, observed=True, sort=False).first().reset_index()
        for c in ("case_id", "workload", "params", "items_unit", "family"):
            if c in info:
                info[c] = info[c].astype(object).where(info[c].notna(), None)
        for c in on:
            info[c] = info[c].astype(str)
    out = df.drop(columns=[c for c in columns if c in df]).merge(info, on=on, how="left")
    out["workload"] = out["workload"].where(out["workload"].notna(), out["case_id"].str.split("[", n=1).str[0])
    out["params"] = out["params"].where(out["params"].notna(), "{}")
    families = _registry_families()
    fallback = out["workload"].map(lambda w: families.get(w, OTHER_FAMILY))
    out["family"] = out["family"].where(out["family"].notna(), fallback).astype(str)
    if not work:
        out = out.drop(columns=["family"])
    return out
