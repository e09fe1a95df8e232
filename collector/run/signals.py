"""Signals: SIGINT and SIGTERM become ``Interrupted`` while a run is recorded, then nothing cuts its bookkeeping.

``execute`` catches ``Interrupted``, kills the worker in flight, records its case as
``interrupted``, writes what finished and marks the run interrupted; the CLI exits 130 or
143. A second signal during that bookkeeping is ignored, so it cannot cut it short.
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``Interrupted``; the handlers before are restored after."""
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def ignore_signals() -> None:
    """From now until ``interruptible`` ends: SIGINT and SIGTERM do nothing (the run is being closed)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
