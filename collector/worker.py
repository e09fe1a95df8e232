"""A worker process: imports the stack's torch and runs cases the parent sends it.

The parent (``collector/runner.py``) talks to it over stdin/stdout, one JSON object per
line; stdout is reserved for that protocol (anything a workload prints goes to stderr).
Commands: ``probe`` (device facts and the fingerprint), ``run`` (one case), ``exit``.
Run as ``python -m collector.worker`` under the interpreter of the stack under test.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
from typing import IO, Any

PROTOCOL_PREFIX = "@@imagebench "


def probe_device(request: str) -> dict[str, Any]:
    """Device facts the parent needs to plan cases; raises ValueError for a bad request."""
    import importlib.util

    import torch

    from collector.workloads import DeviceInfo

    cuda = torch.cuda.is_available()
    if request == "cuda" and not cuda:
        raise ValueError("--device cuda was given but torch.cuda.is_available() is False in this stack")
    use_cuda = cuda and request in ("auto", "cuda")
    extras = {name: importlib.util.find_spec(name) is not None for name in ("torchvision", "transformers", "pynvml", "triton")}
    cpu_count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if use_cuda:
        p = torch.cuda.get_device_properties(0)
        info = DeviceInfo(
            type="cuda",
            name=p.name,
            count=torch.cuda.device_count(),
            capability=(p.major, p.minor),
            total_memory=p.total_memory,
            bf16=bool(torch.cuda.is_bf16_supported()),
            fp16=True,
            tf32=p.major >= 8,
            cpu_count=cpu_count,
            torch_version=torch.__version__,
            extras=extras,
        )
    else:
        import platform

        info = DeviceInfo(
            type="cpu",
            name=platform.processor() or platform.machine(),
            count=0,
            bf16=True,
            fp16=False,
            tf32=False,
            cpu_count=cpu_count,
            torch_version=torch.__version__,
            extras=extras,
        )
    return info.to_json()


def run_case(message: dict[str, Any]) -> dict[str, Any]:
    """Run one case and return its case row and samples (never raises for case errors)."""
    from collector.context import Context, SkipCase
    from collector.schema import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, metric
    from collector.timing import TimingPolicy
    from collector.workloads import DeviceInfo, get

    info = DeviceInfo.from_json(message["device"])
    workload = get(message["workload"])
    params = message["params"]
    ctx = Context(
        info=info,
        suite=message["suite"],
        policy=TimingPolicy(**message["policy"]),
        process=message["process"],
        processes=message["processes"],
        data_dir=message.get("data_dir"),
    )
    started = time.time()
    t0 = time.perf_counter()
    status, error = STATUS_OK, None
    try:
        _seed(message.get("seed", 0))
        workload.run(params, ctx)
        if not ctx.recorded.samples:
            status, error = STATUS_FAILED, "the workload recorded no samples"
    except SkipCase as e:
        status, error = STATUS_SKIPPED, str(e)
    except Exception as e:  # one case's failure is recorded, never fatal to the run
        status, error = STATUS_FAILED, _describe_error(e)
    finally:
        _release_memory()
    duration = time.perf_counter() - t0
    r = ctx.recorded
    if r.notes:
        error = "; ".join(([error] if error else []) + r.notes)
    samples = []
    counters: dict[str, int] = {}
    if status == STATUS_OK:
        for name, value, iterations in r.samples:
            m = metric(name)
            index = counters.get(name, 0)
            counters[name] = index + 1
            samples.append(dict(metric=name, unit=m.unit, better=m.better, index=index, value=value, iterations=iterations))
    return {
        "status": status,
        "error": error,
        "timing": r.timing,
        "started_at": started,
        "duration_s": duration,
        "flops": r.flops,
        "bytes": r.bytes,
        "items": r.items,
        "items_unit": r.items_unit,
        "samples": samples,
    }


def _describe_error(e: BaseException) -> str:
    name = type(e).__name__
    text = str(e).strip()
    if "OutOfMemory" in name or "out of memory" in text.lower():
        return f"out of memory: {text.splitlines()[0] if text else name}"
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return f"{name}: {text}\n{''.join(tb[-6:])}".strip()[:8000]


def _seed(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def _release_memory() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception:
        pass


def serve(stdin: IO[str], proto: IO[str]) -> None:
    """Answer commands until ``exit`` or end of input."""

    def reply(obj: dict[str, Any]) -> None:
        proto.write(PROTOCOL_PREFIX + json.dumps(obj) + "\n")
        proto.flush()

    for line in stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        cmd = message.get("cmd")
        if cmd == "exit":
            return
        if cmd == "probe":
            try:
                from collector.fingerprint import collect_fingerprint

                device = probe_device(message.get("device", "auto"))
                entries = collect_fingerprint(image=message.get("image"), argv=message.get("argv"))
                reply({"event": "probe", "device": device, "fingerprint": [[e.section, e.key, e.value] for e in entries]})
            except Exception as e:
                reply({"event": "error", "error": f"{type(e).__name__}: {e}"})
        elif cmd == "run":
            reply({"event": "start", "case_id": message["case_id"]})
            result = run_case(message)
            reply({"event": "result", "case_id": message["case_id"], **result})
        else:
            reply({"event": "error", "error": f"unknown command {cmd!r}"})


def main() -> None:
    # Keep the protocol on a private copy of stdout; route fd 1 to stderr so that any
    # print from torch, a workload or a library cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, proto)


if __name__ == "__main__":
    main()
