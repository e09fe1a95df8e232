"""Every published comparison of the shipped runs, and the whole archive's summaries, are what
the reporter computes (the model of statistics round 3, from the committed runs): the JSON of each
matches ``tests/data/shipped_comparisons.json`` (written by ``make_shipped_comparisons.py``),
floats to a relative 1e-9."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))

from make_shipped_comparisons import shipped_comparisons  # noqa: E402


def _same(expected, actual, where: str) -> None:
    if isinstance(expected, float) or isinstance(actual, float):
        assert isinstance(expected, (int, float)) and isinstance(actual, (int, float)), f"{where}: {expected!r} != {actual!r}"
        assert math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-300), f"{where}: {expected!r} != {actual!r}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and expected.keys() == actual.keys(), f"{where}: keys differ"
        for k in expected:
            _same(expected[k], actual[k], f"{where}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(expected) == len(actual), f"{where}: lengths differ"
        for i, (e, a) in enumerate(zip(expected, actual)):
            _same(e, a, f"{where}[{i}]")
    else:
        assert expected == actual, f"{where}: {expected!r} != {actual!r}"


@pytest.fixture(scope="module")
def now() -> dict:
    return json.loads(json.dumps(shipped_comparisons(), allow_nan=False))


def test_every_shipped_comparison_is_unchanged(now: dict) -> None:
    before = json.loads((DATA / "shipped_comparisons.json").read_text())
    assert len(before) >= 6  # five comparisons with runs, and the summaries
    assert before.keys() == now.keys()
    for key in before:
        _same(before[key], now[key], key)


def test_no_interval_contradicts_its_verdict(now: dict) -> None:
    """Over every shipped comparison: a call's interval lies beyond 1 on its side, an equivalent
    row's inside the ±2% band, and a row the corrected test did not call holds 1 in its interval
    (the intervals shown at the adjusted level where the 95% one would not)."""
    band = 1.02
    checked = 0
    for key, comparison in now.items():
        if key == "summaries":
            continue
        for r in comparison["records"]:
            lo, hi, v = r["ci_low"], r["ci_high"], r["verdict"]
            if lo is None or hi is None:
                continue
            checked += 1
            where = f"{key}: {r['case']} {r['metric']} {v} [{lo}, {hi}]"
            if v == "better":
                assert lo > 1, where
            elif v == "worse":
                assert hi < 1, where
            elif v == "equivalent":
                assert lo >= 1 / band - 1e-12 and hi <= band + 1e-12, where
            if r["p_adjusted"] is not None and v in ("equivalent", "inconclusive") and r["p_adjusted"] >= 0.05:
                assert lo <= 1 <= hi, where
            if r["p_adjusted"] is not None and r["p_adjusted"] < 0.05:
                assert not (lo <= 1 <= hi), where
    assert checked > 500


def test_replicate_advice_stays_within_its_bounds(now: dict) -> None:
    for key, comparison in now.items():
        if key == "summaries":
            continue
        advice = comparison["advice"]
        if advice:
            assert advice["processes"] is None or 2 <= advice["processes"] <= 30, key
            assert advice["runs"] is None or 2 <= advice["runs"] <= 20, key
        for r in comparison["records"]:
            assert r["processes_needed"] is None or r["processes_needed"] <= 30, (key, r["case"])
