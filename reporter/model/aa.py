"""A/A figures: what the archive's repeats of one stack say about run-to-run noise on a device.

An A/A pair is two complete runs of one label, next to each other in time, on one device
model, recorded by one measurement method (``run_methods``): the same stack measured twice
the same way, so every difference between them is noise. Compared as an article compares
two runs (``compare_labels``), each pair gives the share of its rows called better or worse
(a measured false-call rate) and the time geomean's shift (the run-to-run effect shared by
every case). An article on the device quotes them: a shift shared by all its cases is read
against how often A/A pairs on that device shift as much.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from runformat.vocabulary import Verdict
from reporter.data.load import Archive
from reporter.errors import ReporterError
from reporter.model.compare import compare_labels, run_methods

# The newest pairs of a device that are compared: each costs one comparison.
MAX_PAIRS = 8


@dataclass(frozen=True)
class AAFigure:
    """The A/A pairs of one device: rows tested and called, and each pair's geomean shift (log)."""

    device: str
    rows_tested: int
    rows_called: int
    shifts: tuple[float, ...]  # |log geomean ratio| of each pair, newest last

    @property
    def pairs(self) -> int:
        return len(self.shifts)

    @property
    def false_call_rate(self) -> float:
        return self.rows_called / self.rows_tested if self.rows_tested else math.nan

    @property
    def median_shift(self) -> float:
        """The median absolute geomean shift, as a fraction (0.009: 0.9%)."""
        return math.expm1(float(np.median(self.shifts))) if self.shifts else math.nan

    @property
    def largest_shift(self) -> float:
        return math.expm1(max(self.shifts)) if self.shifts else math.nan

    def share_at_least(self, ratio: float) -> float:
        """The share of pairs whose geomean moved at least as far from 1 as ``ratio``, either way."""
        if not self.shifts or not ratio > 0:
            return math.nan
        return float(np.mean(np.asarray(self.shifts) >= abs(math.log(ratio)) - 1e-12))


def aa_pairs(archive: Archive) -> list[tuple[str, str, str, str]]:
    """(label, device, run A, run B) for neighbouring complete runs of one label, device model and method."""
    methods = run_methods(archive)
    runs = archive.runs.sort_values("started_at", kind="stable")
    if "status" in runs:
        runs = runs[runs["status"].astype(str) == "complete"]
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for label, device, run_id in zip(runs["label"].astype(str), runs["device_name"].astype(str), runs["run_id"].astype(str)):
        groups[(label, device, methods.get(run_id, ""))].append(run_id)
    out = []
    for (label, device, _), ids in sorted(groups.items()):
        out.extend((label, device, a, b) for a, b in zip(ids, ids[1:]))
    return out


def aa_figures(archive: Archive, devices: set[str] | None = None, *, max_pairs: int = MAX_PAIRS,
               metric: str = "time") -> dict[str, AAFigure]:
    """Per device (those in ``devices``, default all), the figures of its ``max_pairs`` newest A/A pairs."""
    start = dict(zip(archive.runs["run_id"].astype(str), archive.runs["started_at"]))
    by_device: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for label, device, a, b in aa_pairs(archive):
        if devices is None or device in devices:
            by_device[device].append((label, a, b))
    out = {}
    # Every pair's units are kept in memory and written to the summaries cache once, at the end.
    with archive.writes_deferred():
        for device, pairs in sorted(by_device.items()):
            newest = sorted(pairs, key=lambda p: (start[p[2]], p[2]))[-max_pairs:]
            figure = _device_figure(archive, device, newest, metric)
            if figure is not None:
                out[device] = figure
    return out


def _device_figure(archive: Archive, device: str, pairs: list[tuple[str, str, str]], metric: str) -> AAFigure | None:
    """The figure of ``device``'s A/A ``pairs`` (label, run A, run B), or None when no pair compares."""
    tested = called = 0
    shifts = []
    for label, a, b in pairs:
        try:
            c = compare_labels(archive, f"{label}@{a}", f"{label}@{b}")
        except ReporterError:  # no case in common: not a pair to learn from
            continue
        rows = c.rows[c.rows["metric"] == metric]
        ok = rows["p_value"].notna()
        tested += int(ok.sum())
        called += int(rows.loc[ok, "verdict"].isin([Verdict.BETTER.value, Verdict.WORSE.value]).sum())
        if math.isfinite(c.geomean.ratio) and c.geomean.ratio > 0:
            shifts.append(abs(math.log(c.geomean.ratio)))
    return AAFigure(device, tested, called, tuple(shifts)) if shifts else None
