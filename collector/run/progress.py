"""Progress of a run on stderr: a rich bar when rich is installed, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Progress on stderr: a rich bar when rich is installed, plain lines otherwise."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self._bar: Any = None
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            console = Console(stderr=True)
            self._bar = Bar(
                TextColumn("[bold]{task.description}", justify="left"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            )
            self._task = self._bar.add_task("starting", total=total)
            self._bar.start()
        except ImportError:
            self._bar = None

    def update(self, description: str, advance: int = 0) -> None:
        self.done += advance
        if self._bar is not None:
            self._bar.update(self._task, description=description[:70], advance=advance)
        elif advance:
            elapsed = time.monotonic() - self.start
            print(f"[{self.done}/{self.total} {elapsed:6.1f}s] {description}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
