"""Data-parallel scaling efficiency with a confidence interval, per node count and device count.

Efficiency at N devices is the throughput at N over N times the throughput on one device
(1.0 is perfect linear scaling). Throughput is items per step over the step time; the
multigpu workload stores the global batch as each case's items, so weak scaling (a fixed
batch per device) and strong scaling are both covered. Pure functions: the article only
formats what they return.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

BETWEEN_UNITS = "between-units"
WITHIN_UNIT = "within-unit"


@dataclass(frozen=True)
class ScalingEfficiency:
    """The scaling efficiency at one (nodes, devices) point.

    Attributes:
        nodes: nodes the case ran on.
        devices: processes (GPUs, or CPU processes) in all, nodes x processes per node.
        efficiency: throughput at ``devices`` / (``devices`` x throughput on one device).
        ci_low, ci_high: its confidence interval (``confidence``, 95% by default).
        throughput, baseline_throughput: items/s at ``devices`` and on one device
            (geometric means over the replicate units).
        units, baseline_units: replicate units (worker processes of runs) on each side.
        basis: ``between-units`` when both sides have two units or more (Welch's t on the
            units' log throughputs: the variation between processes is in the CI), else
            ``within-unit`` (a bootstrap of the steps of the one unit: the CI leaves out
            the variation between processes, which a reader must be told).
        mode, model: the case's mode (``ddp``, ``dp``) and model, when known.
    """

    nodes: int
    devices: int
    efficiency: float
    ci_low: float
    ci_high: float
    throughput: float
    baseline_throughput: float
    units: int
    baseline_units: int
    basis: str
    confidence: float = 0.95
    mode: str = ""
    model: str = ""


def compute_scaling_efficiency(
    baseline: Sequence[Sequence[float]],
    scaled: Sequence[Sequence[float]],
    *,
    devices: int,
    items_baseline: float,
    items_scaled: float,
    nodes: int = 1,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> ScalingEfficiency:
    """Scaling efficiency from step times on one device and on ``devices``.

    Args:
        baseline: per replicate unit (a worker process of a run) on one device, its step
            times in seconds.
        scaled: the same at ``devices`` devices.
        devices: the device count of ``scaled`` (nodes x processes per node).
        items_baseline, items_scaled: items (images) per step on each side: the global batch.
        nodes: the node count of ``scaled``, carried into the result.
        confidence: the CI's level.
        n_resamples, seed: the bootstrap used when a side has a single unit.

    Each unit is summarised by its median step time, so a unit's thousand steps weigh as
    much as another's ten. With two units or more a side, the CI is Welch's t interval on
    the difference of mean log throughputs (Kalibera & Jones 2013: the process, not the
    step, is the unit of replication), back-transformed. With one unit on a side, it is a
    percentile bootstrap of the steps within the units, marked ``within-unit``.

    Raises ``ValueError`` for an empty side, a non-positive time or item count, or
    ``devices`` < 1.
    """
    if devices < 1:
        raise ValueError(f"devices must be at least 1, not {devices}")
    if items_baseline <= 0 or items_scaled <= 0:
        raise ValueError("items per step must be positive")
    base, multi = _checked_units("baseline", baseline), _checked_units("scaled", scaled)
    log_base = np.log(items_baseline / np.array([np.median(a) for a in base]))
    log_multi = np.log(items_scaled / np.array([np.median(a) for a in multi]))
    diff = float(log_multi.mean() - log_base.mean())
    efficiency = math.exp(diff) / devices
    if len(base) >= 2 and len(multi) >= 2:
        from scipy import stats  # here: a second of import that a comparison with no scaling rows never pays

        test = stats.ttest_ind(log_multi, log_base, equal_var=False)
        ci = test.confidence_interval(confidence_level=confidence)
        low, high = math.exp(ci.low) / devices, math.exp(ci.high) / devices
        basis = BETWEEN_UNITS
    else:
        low, high = _bootstrap_within_unit(
            np.concatenate(base), np.concatenate(multi), devices=devices, items_baseline=items_baseline,
            items_scaled=items_scaled, confidence=confidence, n_resamples=n_resamples, seed=seed,
        )
        basis = WITHIN_UNIT
    return ScalingEfficiency(
        nodes=nodes,
        devices=devices,
        efficiency=efficiency,
        ci_low=low,
        ci_high=high,
        throughput=float(math.exp(log_multi.mean())),
        baseline_throughput=float(math.exp(log_base.mean())),
        units=len(multi),
        baseline_units=len(base),
        basis=basis,
        confidence=confidence,
    )


def _checked_units(name: str, units: Sequence[Sequence[float]]) -> list[np.ndarray]:
    """The non-empty units of a side as arrays; ``ValueError`` for none, or a time that is not a positive number."""
    arrays = [np.asarray(u, dtype=float) for u in units if len(u)]
    if not arrays:
        raise ValueError(f"{name} has no step times")
    if any((a <= 0).any() or not np.isfinite(a).all() for a in arrays):
        raise ValueError(f"{name} holds a step time that is not a positive number")
    return arrays


def _bootstrap_within_unit(
    steps_base: np.ndarray,
    steps_multi: np.ndarray,
    *,
    devices: int,
    items_baseline: float,
    items_scaled: float,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """The percentile-bootstrap CI of the efficiency from the steps alone (NaN with fewer than two a side)."""
    if len(steps_base) < 2 or len(steps_multi) < 2:
        return float("nan"), float("nan")

    def statistic(b: np.ndarray, m: np.ndarray, axis: int = -1) -> np.ndarray:
        return (items_scaled / np.median(m, axis=axis)) / (devices * items_baseline / np.median(b, axis=axis))

    from scipy import stats

    boot = stats.bootstrap(
        (steps_base, steps_multi), statistic, n_resamples=n_resamples, confidence_level=confidence,
        method="percentile", vectorized=True, random_state=np.random.default_rng(seed),
    )
    return float(boot.confidence_interval.low), float(boot.confidence_interval.high)


def compute_scaling_table(cases: Any, samples: Any, *, workload: str = "multigpu", metric: str = "time",
                          confidence: float = 0.95) -> list[ScalingEfficiency]:
    """Every (mode, model, nodes, devices) point of ``workload`` in an archive's tables.

    ``cases`` and ``samples`` are ``Archive.cases`` and ``Archive.ok_samples()`` (pandas),
    usually of one label. A case's devices are ``replicas`` x ``nodes`` (``nodes`` absent: 1);
    its baseline is the one-device case of the same mode, model, image size and batch per
    replica. Points without such a baseline are left out. Sorted by mode, model, nodes, devices.
    """
    ok = cases[(cases["workload"].astype(str) == workload) & (cases["status"].astype(str) == "ok")]
    if ok.empty:
        return []
    # The samples of this workload's cases only, split by case once (not the whole table once per case).
    steps = samples[(samples["metric"] == metric) & samples["case_id"].isin(set(ok["case_id"].astype(str)))]
    by_case = dict(iter(steps.groupby(steps["case_id"].astype(str), observed=True, sort=False)))
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for case_id, rows in ok.groupby(ok["case_id"].astype(str), observed=True):
        params = json.loads(str(rows["params"].iloc[0]))
        nodes = int(params.get("nodes", 1))
        devices = int(params.get("replicas", 1)) * nodes
        family = (params.get("mode", ""), params.get("model", ""), params.get("image_size"), params.get("batch_per_replica"),
                  bool(params.get("channels_last", False)))
        case_steps = by_case.get(case_id, steps.iloc[:0])
        units = [g["value"].to_numpy() for _, g in case_steps.groupby([case_steps["run_id"].astype(str), "process"], observed=True)]
        if not units:
            continue
        entry = groups.setdefault(family, {})
        entry[(nodes, devices)] = (units, float(rows["items"].iloc[0]))
    out = []
    for family, points in groups.items():
        if (1, 1) not in points:
            continue
        base_units, base_items = points[(1, 1)]
        for (nodes, devices), (units, items) in sorted(points.items()):
            if (nodes, devices) == (1, 1):
                continue
            e = compute_scaling_efficiency(base_units, units, devices=devices, nodes=nodes, items_baseline=base_items,
                                           items_scaled=items, confidence=confidence)
            out.append(ScalingEfficiency(**{**e.__dict__, "mode": family[0], "model": family[1]}))
    return sorted(out, key=lambda e: (e.mode, e.model, e.nodes, e.devices))
