"""How a run times its cases: the ``TimingPolicy`` a run records (``run.policy`` in its
fingerprint, as JSON of the fields below) and the policy of each suite.

The collector times by it (``collector.timing``); the reporter shows it in an article's
method, reading a run's recorded policy and, for runs recorded before policies were, its
suite's policy from ``SUITE_POLICIES``. Imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TimingPolicy:
    """How long to warm up, how long a block must be, and when to stop.

    Attributes:
        warmup_s: warm up at most this much host time...
        min_warmup: ...and at least this many calls (the first call may compile); in
            between, stop as soon as the last calls take the same time (``is_steady``).
        min_block_s: calibrate k so that one block of k iterations lasts at least this
            long: long against the timer's resolution and the launch overhead.
        min_samples: never stop before this many blocks.
        max_samples: never take more than this many blocks.
        target_rel_ci: stop once the 95% CI of the median, as a fraction of the median
            (upper minus lower over median), is at most this.
        budget_s: stop once this much host time has passed in the measurement loop
            (after min_samples, which always complete).
        fixed_k: use exactly this many iterations per block (1 for per-request latency).
        max_k: never put more than this many iterations in a block.
    """

    warmup_s: float = 0.05
    min_warmup: int = 2
    min_block_s: float = 0.002
    min_samples: int = 10
    max_samples: int = 200
    target_rel_ci: float = 0.02
    budget_s: float = 2.0
    fixed_k: int | None = None
    max_k: int = 1_000_000

    def scaled(self, **changes: Any) -> "TimingPolicy":
        """A copy with some fields changed."""
        return TimingPolicy(**{**self.__dict__, **changes})


# The GPU suites' policy. The process, not the sample, is the unit of replication: the
# reporter's CI of a case comes from the spread between worker processes, and on an H200
# a process's median is far tighter than that spread after ten blocks. Re-cut with this
# stop rule (``python benchmarks/stop_rule.py``), the recorded H200 runs kept the A/A
# CI half-widths of the microbenchmarks where they were (0.0316 against 0.0324, 0.0677
# against 0.0672); the end-to-end rows widened by 2-5% (0.0473 against 0.0461, 0.0490
# against 0.0477). On an H100 the standard suite then spent 315.8 s inside cases against
# 353.0 s (together with the round's start-up changes; README). Before: at least 15
# blocks, at most 1.5 s (1.0 s in full).
STANDARD_POLICY = TimingPolicy(
    warmup_s=0.1, min_warmup=3, min_block_s=0.01, min_samples=10, max_samples=200, target_rel_ci=0.01, budget_s=1.0
)

# Each suite's policy, by suite name (the suites themselves, what they run, are the
# collector's: ``collector.suites``).
SUITE_POLICIES: dict[str, TimingPolicy] = {
    "smoke": TimingPolicy(warmup_s=0.0, min_warmup=1, min_block_s=0.0005, min_samples=3, max_samples=5, budget_s=0.2),
    "cpu": TimingPolicy(warmup_s=0.02, min_warmup=1, min_block_s=0.002, min_samples=5, max_samples=40, target_rel_ci=0.03, budget_s=0.25),
    "quick": TimingPolicy(warmup_s=0.05, min_warmup=2, min_block_s=0.005, min_samples=10, max_samples=100, target_rel_ci=0.02, budget_s=0.6),
    "standard": STANDARD_POLICY,
    "full": STANDARD_POLICY,
}
