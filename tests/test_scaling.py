"""Scaling efficiency: fixed inputs against a hand computation and scipy, coverage by simulation,
and the table read from archive-shaped frames."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reporter.model.scaling import BETWEEN_UNITS, WITHIN_UNIT, compute_scaling_efficiency, compute_scaling_table


def test_between_units_matches_welch_on_log_throughput():
    base = [[0.100, 0.101, 0.099], [0.102, 0.103], [0.098]]
    multi = [[0.110, 0.111], [0.112], [0.109, 0.110, 0.111]]
    e = compute_scaling_efficiency(base, multi, devices=4, items_baseline=64, items_scaled=256, nodes=2)
    lb = np.log(64 / np.array([0.100, 0.1025, 0.098]))
    lm = np.log(256 / np.array([0.1105, 0.112, 0.110]))
    assert e.efficiency == pytest.approx(math.exp(lm.mean() - lb.mean()) / 4)
    ci = stats.ttest_ind(lm, lb, equal_var=False).confidence_interval(0.95)
    assert (e.ci_low, e.ci_high) == pytest.approx((math.exp(ci.low) / 4, math.exp(ci.high) / 4))
    assert e.basis == BETWEEN_UNITS and (e.units, e.baseline_units, e.nodes, e.devices) == (3, 3, 2, 4)
    assert e.ci_low < e.efficiency < e.ci_high
    # weak scaling with the same step time is perfect scaling
    same = compute_scaling_efficiency(base, base, devices=8, items_baseline=64, items_scaled=512)
    assert same.efficiency == pytest.approx(1.0)


def test_one_unit_a_side_is_a_within_unit_bootstrap_and_says_so():
    rng = np.random.default_rng(1)
    base = [0.1 * np.exp(rng.normal(0, 0.02, 40))]
    multi = [0.125 * np.exp(rng.normal(0, 0.02, 40))]
    e = compute_scaling_efficiency(base, multi, devices=2, items_baseline=16, items_scaled=32)
    assert e.basis == WITHIN_UNIT
    assert e.efficiency == pytest.approx(np.median(base[0]) / np.median(multi[0]))
    assert e.ci_low < e.efficiency < e.ci_high and e.ci_high - e.ci_low < 0.05
    with pytest.raises(ValueError, match="scaled has no step times"):
        compute_scaling_efficiency(base, [], devices=2, items_baseline=1, items_scaled=2)
    with pytest.raises(ValueError, match="not a positive number"):
        compute_scaling_efficiency(base, [[0.1, -1.0]], devices=2, items_baseline=1, items_scaled=2)


def test_between_units_ci_covers_the_true_efficiency():
    rng = np.random.default_rng(7)
    true, hits, trials = 0.9, 0, 400
    for _ in range(trials):
        # 4 processes a side, each with its own process effect (3%) and 20 noisy steps
        base = [0.1 * math.exp(rng.normal(0, 0.03)) * np.exp(rng.normal(0, 0.01, 20)) for _ in range(4)]
        multi = [0.1 / true * math.exp(rng.normal(0, 0.03)) * np.exp(rng.normal(0, 0.01, 20)) for _ in range(4)]
        e = compute_scaling_efficiency(base, multi, devices=4, items_baseline=8, items_scaled=32)
        hits += e.ci_low <= true <= e.ci_high
    assert 0.92 <= hits / trials <= 0.98


def test_the_table_reads_points_per_node_and_device_count():
    rows, samples = [], []
    rng = np.random.default_rng(3)
    for nodes, replicas, step in ((1, 1, 0.10), (1, 2, 0.105), (2, 2, 0.12)):
        params = dict(mode="ddp", model="cnn-tiny", image_size=32, batch_per_replica=8, replicas=replicas)
        if nodes > 1:
            params["nodes"] = nodes
        case_id = f"multigpu[{nodes}x{replicas}]"
        for run in ("r1", "r2"):
            rows.append(dict(run_id=run, case_id=case_id, workload="multigpu", status="ok", process=0,
                             params=json.dumps(params, sort_keys=True), items=8.0 * replicas * nodes))
            samples += [dict(run_id=run, case_id=case_id, process=0, metric="time", value=v)
                        for v in step * np.exp(rng.normal(0, 0.01, 10))]
    table = compute_scaling_table(pd.DataFrame(rows), pd.DataFrame(samples))
    assert [(e.nodes, e.devices) for e in table] == [(1, 2), (2, 4)]
    assert table[0].efficiency == pytest.approx(0.10 / 0.105, rel=0.02)
    assert table[1].efficiency == pytest.approx(0.10 / 0.12, rel=0.02)
    assert all(e.basis == BETWEEN_UNITS and e.mode == "ddp" for e in table)
