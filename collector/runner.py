"""Running a suite: the interface the CLI and other callers use.

The work is done by the modules of ``collector/run/``, one job each (see its
``__init__``); the stacks the workers run in are ``collector/stacks/``. The parent never
imports torch: the host needs Python and pyarrow, the stacks under test need torch.
"""

from __future__ import annotations

from collector.run.execute import execute
from collector.run.plan import matches, plan_cases
from collector.run.probe import check_stacks, probe
from collector.run.record import environment_rows, summarize
from collector.run.signals import Interrupted
from collector.run.state import Planned, RunError, RunOptions, Task
from collector.stacks import Stack, StackError, parse_stack

__all__ = [
    "Interrupted", "Planned", "RunError", "RunOptions", "Stack", "StackError", "Task", "check_stacks",
    "environment_rows", "execute", "matches", "parse_stack", "plan_cases", "probe", "summarize",
]
