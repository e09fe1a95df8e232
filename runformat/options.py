"""Checks of command-line values shared by both CLIs: finite, positive numbers and non-empty paths.

Standard library only (the collector runs inside the stack under test); the collector's
argparse types and the reporter's click types (``reporter.options``) both call these, so
``--time-budget nan`` and ``--noise inf`` are refused by the same rule with the same words.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable


def parse_number(text: str, *, integer: bool = False, minimum: float = 0.0, minimum_allowed: bool = False,
                 maximum: float | None = None, maximum_allowed: bool = True) -> float:
    """``text`` as a finite number within bounds (by default: greater than 0), else ``ValueError``.

    The message says what was expected and repeats the value as given: ``must be a finite
    number greater than 0, not 'nan'``.
    """
    bounds = f"{'at least' if minimum_allowed else 'greater than'} {minimum:g}"
    if maximum is not None:
        bounds += f" and {'at most' if maximum_allowed else 'below'} {maximum:g}"
    what = f"a whole number {bounds}" if integer else f"a finite number {bounds}"
    try:
        value = float(int(text, 10)) if integer else float(text)
    except (TypeError, ValueError):
        raise ValueError(f"must be {what}, not {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be {what}, not {text!r}")
    low_ok = value >= minimum if minimum_allowed else value > minimum
    high_ok = maximum is None or (value <= maximum if maximum_allowed else value < maximum)
    if not (low_ok and high_ok):
        raise ValueError(f"must be {what}, not {text!r}")
    return value


def parse_path(text: str) -> str:
    """A path as given, refusing the empty string (which ``pathlib`` would read as ``.``)."""
    if not str(text).strip():
        raise ValueError("must name a folder, not an empty string")
    return text


def positive_float(text: str) -> float:
    """argparse ``type=`` for seconds and other quantities: finite and greater than 0."""
    return _argparse(lambda t: parse_number(t))(text)


def positive_int(text: str) -> int:
    """argparse ``type=`` for counts: a whole number, at least 1."""
    return int(_argparse(lambda t: parse_number(t, integer=True, minimum=1, minimum_allowed=True))(text))


def folder_path(text: str) -> str:
    """argparse ``type=`` for a folder: anything but the empty string."""
    return _argparse(parse_path)(text)


def _argparse(check: Callable[[str], object]) -> Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return check(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return convert
