"""Where ``reporter build`` may write: checks on --runs, --site and --public, and the safe swap of public/.

A build replaces only a folder it made itself. The static site is built into a fresh
temporary folder beside the target; when the build succeeds a marker file
(``.imagebench-site``) is written into it and it takes the target's place in one rename
(``renameat2(RENAME_EXCHANGE)`` where the kernel has it, else two renames a moment
apart); only then is the previous site, which carries the marker, deleted. So:

* a failed build leaves the previous site as it was;
* a folder without the marker, with anything in it, is never replaced: the build stops
  and says so (an empty folder is taken);
* the runs archive is never a target: a --site or --public equal to the runs folder,
  inside it, or holding it, is refused, and so is a --public equal to, inside or
  holding --site;
* a target that is a file, a symbolic link, unwritable or on a read-only file system
  is refused before any work, with one line naming the path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from reporter.errors import ReporterError

PUBLIC_MARKER = ".imagebench-site"
MARKER_TEXT = "This folder is a site built by `reporter build`; the next build replaces it whole.\n"
_RENAME_EXCHANGE = 2


def check_targets(runs_dir: Path | str, site_dir: Path | str, public_dir: Path | str | None) -> None:
    """Raise ``ReporterError`` naming the flag and path when --site or --public may not be written."""
    remote = "://" in str(runs_dir)  # an object store: nothing local to protect
    runs = None if remote else _resolved(runs_dir)
    site = _resolved(site_dir)
    if runs is not None:
        _refuse_overlap("--site", site_dir, site, "--runs", runs_dir, runs)
    check_writable_folder("--site", Path(site_dir))
    if public_dir is None:
        return
    public = _resolved(public_dir)
    if runs is not None:
        _refuse_overlap("--public", public_dir, public, "--runs", runs_dir, runs)
    _refuse_overlap("--public", public_dir, public, "--site", site_dir, site)
    check_public(Path(public_dir))


def _resolved(path: Path | str) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


def _refuse_overlap(flag: str, given: Path | str, path: Path, other_flag: str, other_given: Path | str, other: Path) -> None:
    if path == other:
        raise ReporterError(f"{flag} {str(given)!r} is the {other_flag} folder; a build must never write into it")
    if path.is_relative_to(other):
        raise ReporterError(f"{flag} {str(given)!r} lies inside the {other_flag} folder {str(other_given)!r}; pick a folder outside it")
    if other.is_relative_to(path):
        raise ReporterError(f"{flag} {str(given)!r} holds the {other_flag} folder {str(other_given)!r}; pick a folder beside it")


def check_writable_folder(flag: str, folder: Path) -> None:
    """``folder`` is (or can be made) a folder that accepts new files; else one line naming it."""
    if folder.is_symlink() and not folder.exists():
        raise ReporterError(f"{flag} {str(folder)!r} is a symbolic link that does not resolve")
    if folder.exists() and not folder.is_dir():
        raise ReporterError(f"{flag} {str(folder)!r} is a file, not a folder")
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ReporterError(f"{flag} {str(folder)!r}: {str(existing)!r} is a file, not a folder")
    _probe_write(flag, folder, existing)


def _probe_write(flag: str, folder: Path, where: Path) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".imagebench-write-check.", dir=where)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        shown = "" if where == folder else f" (in {str(where)!r})"
        raise ReporterError(f"{flag} {str(folder)!r} is not writable{shown}: {e.strerror or e}") from None


def check_public(public: Path) -> None:
    """Raise ``ReporterError`` unless ``public`` may be replaced by a new build (see the module docstring)."""
    if public.is_symlink():
        raise ReporterError(f"--public {str(public)!r} is a symbolic link; give the folder itself")
    if public.exists() and not public.is_dir():
        raise ReporterError(f"--public {str(public)!r} is a file, not a folder; move it away or pick another --public")
    if public.is_dir() and not (public / PUBLIC_MARKER).is_file():
        try:
            occupied = any(public.iterdir())
        except OSError as e:
            raise ReporterError(f"--public {str(public)!r} cannot be listed: {e.strerror or e}") from None
        if occupied:
            raise ReporterError(
                f"--public {str(public)!r} holds files reporter build did not write (no {PUBLIC_MARKER}); "
                "move them away or pick another --public"
            )
    parent = _resolved(public).parent
    if parent.exists():
        _probe_write("--public", public, parent)
    else:
        check_writable_folder("--public", parent)
    if public.is_dir() and not os.access(public, os.W_OK):
        raise ReporterError(f"--public {str(public)!r} is not writable")


def publish_site(public: Path | str, build: Callable[[Path], None]) -> None:
    """Run ``build(folder)`` into a new folder beside ``public``, then swap it in.

    ``build`` writes the whole site into the folder it is given (MkDocs). If it raises, the
    new folder is deleted and ``public`` is left as it was.
    """
    check_public(Path(public))
    public = _resolved(public)  # a name to swap: "public", never "." or ".."
    parent = public.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{public.name or 'public'}.", suffix=".new", dir=parent))
    except OSError as e:
        raise ReporterError(f"--public {str(public)!r}: cannot create a folder in {str(parent)!r}: {e.strerror or e}") from None
    try:
        os.chmod(staging, 0o755)  # mkdtemp makes 0700; a site is meant to be served
        build(staging)
        (staging / PUBLIC_MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        _swap_in(staging, public)
    except BaseException as e:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(e, OSError):
            raise ReporterError(f"--public {str(public)!r}: cannot write the site: {e.strerror or e}") from None
        raise


def _swap_in(staging: Path, public: Path) -> None:
    """Put ``staging`` where ``public`` is; delete the previous site (it carries the marker)."""
    target = public
    if not target.exists():
        os.rename(staging, target)
        return
    check_public(public)  # still ours: nothing replaced it while the site was built
    if _exchange(staging, target):
        trash = old = staging  # the names traded places: the previous site is at the staging path now
    else:
        trash = Path(tempfile.mkdtemp(prefix=f".{public.name}.", suffix=".old", dir=target.parent))
        old = trash / public.name
        os.rename(target, old)
        os.rename(staging, target)
    if (old / PUBLIC_MARKER).is_file() or not any(old.iterdir()):
        shutil.rmtree(trash, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))
