"""The lines the collector's processes exchange, and the variables it hands its workers.

Standard library only: the parent (which never imports torch), a worker inside the stack
under test and a workload's child process all import it, and it imports none of them.
A worker answers on stdout with ``PROTOCOL_PREFIX`` + one JSON object a line; a child of
a workload prints one ``RESULT_PREFIX`` line (``print_result``).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Mapping

PROTOCOL_PREFIX = "@@imagebench "
RESULT_PREFIX = "@@imagebench-child "
PARENT_PID_ENV = "IMAGEBENCH_PARENT_PID"  # the worker dies with this process (a host interpreter only)
PRELOAD_ENV = "IMAGEBENCH_PRELOAD"  # packages a worker imports before it says it is ready
FORK_SERVER_ENV = "IMAGEBENCH_FORK_SERVER"  # "1": start the fork server the worker's cases fork from


def print_result(result: Mapping[str, Any]) -> None:
    """What a child calls once to hand its result to ``_procs.run_child``."""
    sys.stdout.write(RESULT_PREFIX + json.dumps(dict(result)) + "\n")
    sys.stdout.flush()
