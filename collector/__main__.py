"""``python -m collector``: the same as the ``collector`` command."""

import sys
from pathlib import Path


def _missing(e: ModuleNotFoundError) -> int:
    """A Python without the collector's packages: one line saying what to do, no traceback."""
    venv = Path(__file__).resolve().parent.parent / ".venv"
    how = (f"{venv}/bin/collector (or `source {venv}/bin/activate` first)" if venv.is_dir()
           else "`make setup` (or `bash scripts/setup.sh`), then .venv/bin/collector")
    print(f"Error: {sys.executable} has no module {e.name!r}, which the collector needs: use {how}, "
          f"or inside a stack under test `{sys.executable} -m pip install pyarrow`.", file=sys.stderr)
    return 2


try:
    from collector.cli import main

    code = main()
except ModuleNotFoundError as e:
    code = _missing(e)
sys.exit(code)
