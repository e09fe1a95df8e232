"""Test-only workload: a multi-node DDP case in which one node dies mid-step.

Registered only through ``IMAGEBENCH_EXTRA_WORKLOADS=tests.fleet_faults``. Its case runs the
real multigpu DDP path (torchrun, c10d rendezvous, gloo) with ``tests/ddp_node_dies.py`` in
place of the training script: every rank of the node that the rendezvous made group rank 1
kills itself with SIGKILL in the middle of a timed step, as a node that loses power would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from collector.workloads import DeviceInfo, Workload

DIE_AT_STEP_ENV = "IMAGEBENCH_TEST_DIE_AT_STEP"
SCRIPT = Path(__file__).with_name("ddp_node_dies.py")


def cases(suite: str, device: DeviceInfo) -> list[dict[str, Any]]:
    from collector.workloads.multigpu import torchrun_settings

    s = torchrun_settings()
    return [dict(mode="ddp", model="cnn-tiny", image_size=32, batch_per_replica=8, replicas=s.nproc_per_node or 1,
                 nodes=s.nnodes, die_at_step=4)]


def run(params: Mapping[str, Any], ctx: Any) -> None:
    from collector.workloads.multigpu import run_ddp

    os.environ[DIE_AT_STEP_ENV] = str(params["die_at_step"])  # inherited by torchrun and its ranks
    try:
        run_ddp(params, ctx, script=SCRIPT, workload="ddp_node_dies")
    finally:
        os.environ.pop(DIE_AT_STEP_ENV, None)


WORKLOADS = [Workload(
    name="ddp_node_dies",
    family="multigpu",
    title="test: a node dies mid-step",
    method="Test only: the node of group rank 1 is killed during a DDP step.",
    cases=cases,
    run=run,
    timeout_s=300.0,
    max_processes=1,
)]
