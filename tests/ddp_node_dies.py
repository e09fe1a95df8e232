"""``collector/workloads/_ddp.py`` with a fault: the ranks of group rank 1 die in step N (tests only).

The training step is wrapped so that, on the node the rendezvous made group rank 1, every
rank sends itself SIGKILL inside its N-th step (warm-up included), before the gradients'
all-reduce: the other node's ranks are left waiting on peers that are gone.
"""

from __future__ import annotations

import os
import signal

import collector.workloads._models as models
from collector.workloads import _ddp

DIE_AT_STEP_ENV = "IMAGEBENCH_TEST_DIE_AT_STEP"


def _dying_image_training(*args, **kwargs):
    training = _real(*args, **kwargs)
    die_at = int(os.environ.get(DIE_AT_STEP_ENV, "0"))
    if die_at and os.environ.get("GROUP_RANK") == "1":
        step, count = training.step, [0]

        def step_then_die() -> None:
            count[0] += 1
            if count[0] == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
            step()

        training.step = step_then_die
    return training


_real = models.image_training
models.image_training = _dying_image_training

if __name__ == "__main__":
    _ddp.main()
