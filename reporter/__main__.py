"""``python -m reporter``: the same command line as the ``reporter`` script."""

import sys
from pathlib import Path


def _missing(e: ModuleNotFoundError) -> int:
    """A Python without the reporter's packages: one line saying what to do, no traceback."""
    venv = Path(__file__).resolve().parent.parent / ".venv"
    how = (f"{venv}/bin/reporter (or `source {venv}/bin/activate` first)" if venv.is_dir()
           else "`make setup` (or `bash scripts/setup.sh`), then .venv/bin/reporter")
    print(f"Error: {sys.executable} has no module {e.name!r}, which the reporter needs: use {how}.", file=sys.stderr)
    return 2


try:
    from reporter.cli import main
except ModuleNotFoundError as e:
    sys.exit(_missing(e))
main()
