"""Every published comparison of the shipped runs, and the whole archive's summaries, are what
the reporter computed before its loading and summaries were made columnar: the JSON of each
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
