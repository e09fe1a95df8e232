"""``python -m reporter``: the same command line as the ``reporter`` script."""

from reporter.cli import main

main()
