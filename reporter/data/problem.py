"""What loading skipped: one ``Problem`` per run, file or upload left out, and why."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """A run (or file, or upload) that was skipped, and why; ``path`` names the file, folder or upload."""

    path: str
    reason: str
