"""One writer per run folder: a lock file holding the owner's process id.

``collector run`` and ``--resume`` hold ``<run folder>/.imagebench.lock`` while they write.
The lock is an ``flock`` on that file, so the kernel drops it when the owner dies however
it dies (SIGKILL included): a lock file whose lock is free is stale, and is taken over;
the pid written in it says who held it. Readers ignore the file (it is hidden), and the
owner removes it when it is done.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".imagebench.lock"


class LockHeld(Exception):
    """Another live process holds the run's lock; the message names it and the lock file."""


class RunLock:
    """The lock of one run folder; ``acquire`` then ``release``."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> str | None:
        """Take the lock; return a note when a stale lock was taken over, raise ``LockHeld`` when it is held."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_pid(fd)
                os.close(fd)
                who = f"process {owner}" if owner else "another process"
                raise LockHeld(f"run {self.path.parent} is being written by {who} (lock file {self.path}); "
                               "wait for it to finish, or stop it first") from None
            except OSError:
                os.close(fd)
                raise
            # The previous owner may have removed the file between our open and our lock:
            # then we hold a lock on a file nobody else can see; start again.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        stale = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        self._fd = fd
        if stale and stale != os.getpid():
            return f"took over a stale lock of process {stale}, which no longer holds it ({self.path})"
        return None

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.unlink(self.path)  # before unlocking, so a waiter never locks a removed file for long
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
