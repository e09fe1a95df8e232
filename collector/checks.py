"""One line of the doctor's table, and its statuses: shared by the doctor and its separate checks."""

from __future__ import annotations

from dataclasses import dataclass

OK, INFO, WARN = "ok", "info", "warn"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table."""

    name: str
    status: str  # ok, info or warn
    found: str
    fix: str = ""
