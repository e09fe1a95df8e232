"""A worker process: imports the stack's torch and runs cases the parent sends it.

The parent (``collector/run/worker_ipc.py``) talks to it over stdin/stdout, one JSON object
per line; stdout is reserved for that protocol (anything a workload prints goes to stderr).
Commands: ``probe`` (device facts and the fingerprint), ``run`` (one case), ``exit``.
Run as ``python -m collector.worker`` under the interpreter of the stack under test, on
the host or inside a container (``collector/stacks/``).

On start the worker imports torch and answers ``ready`` before the first command, so a
case's timeout never includes the import. Started by a host interpreter, it dies with its
parent (Linux ``PR_SET_PDEATHSIG``): a killed collector leaves no worker running a case;
inside a container it ends when its input does (the container runtime closes it when the
collector's end of the pipe goes), and the collector removes the container. Fatal signals
(segfault, abort) dump the Python stack to stderr through ``faulthandler``, and
``SIGUSR1`` dumps it on request (the parent asks before killing a case that hangs), so
the parent can record where a case died.
"""

from __future__ import annotations

import faulthandler
import gc
import json
import math
import os
import re
import signal
import sys
import time
import traceback
from typing import IO, Any

from collector.protocol import FORK_SERVER_ENV, PARENT_PID_ENV, PRELOAD_ENV, PROTOCOL_PREFIX

# Units whose values must be positive (times, memory, rates); the reader rejects a run
# holding a zero or negative one, so a case that records one fails here instead.
POSITIVE_UNITS = ("s", "bytes", "items/s")


class InvalidSample(ValueError):
    """A workload recorded a value the schema forbids (NaN, infinite, a non-positive time)."""


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
    from runformat.schema import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, TIMING_NONE
    from runformat.policy import TimingPolicy
    from collector.workloads import DeviceInfo, get

    started = time.time()
    t0 = time.perf_counter()
    status, error = STATUS_OK, None
    restart = False
    ctx = None
    sampler = None
    samples: list[dict[str, Any]] = []
    try:
        info = DeviceInfo.from_json(message["device"])
        workload = get(message["workload"])
        sampler = _gpu_sampler(info)
        ctx = Context(
            info=info,
            suite=message["suite"],
            policy=TimingPolicy(**message["policy"]),
            process=message["process"],
            processes=message["processes"],
            data_dir=message.get("data_dir"),
            gpu_sampler=sampler,
        )
        _seed(message.get("seed", 0))
        workload.run(message["params"], ctx)
        samples = _samples(ctx.recorded.samples)
        if not samples:
            status, error = STATUS_FAILED, "the workload recorded no samples"
    except SkipCase as e:
        status, error = STATUS_SKIPPED, str(e)
    except InvalidSample as e:
        status, error = STATUS_FAILED, f"invalid sample: {e}"
    except SystemExit as e:  # a workload must not end the worker; record it as a failure
        status, error = STATUS_FAILED, f"the workload called sys.exit({e.code!r})"
    except Exception as e:  # one case's failure is recorded, never fatal to the run
        status, error = STATUS_FAILED, _describe_error(e)
        restart = _poisons_the_process(e)
    finally:
        if sampler is not None:
            sampler.pause()
    duration = time.perf_counter() - t0
    if status != STATUS_OK:
        samples = []
    r = ctx.recorded if ctx is not None else None
    settings = r.settings if r is not None else None
    if settings is None and status == STATUS_OK:
        settings = _settings_now()  # the workload timed outside ctx: the defaults it ran at
    gpu_state = []
    if sampler is not None and status == STATUS_OK:
        from collector.gpustate import summarize

        gpu_state = summarize(sampler.readings, sampler.source.name)
    if r is not None and r.notes:
        error = "; ".join(([error] if error else []) + [str(n) for n in r.notes])
    return {
        "status": status,
        "error": error,
        "timing": r.timing if r is not None else TIMING_NONE,
        "started_at": started,
        "duration_s": duration,
        "flops": _finite(r.flops) if r is not None else None,
        "bytes": _finite(r.bytes) if r is not None else None,
        "items": _finite(r.items) if r is not None else None,
        "items_unit": r.items_unit if r is not None else None,
        "settings": json.dumps(settings, sort_keys=True, separators=(",", ":")) if settings is not None else None,
        "samples": samples,
        "gpu_state": gpu_state,
        "restart": restart,
    }


# This worker's GPU-state source, opened on the first CUDA case: (source or None, description).
_GPU_SOURCE: tuple[Any, str] | None = None


def gpu_source(info: Any) -> tuple[Any, str]:
    """The GPU-state source for this worker's GPUs (NVML, else nvidia-smi), opened once."""
    global _GPU_SOURCE
    if _GPU_SOURCE is None:
        if not info.is_cuda:
            return None, "none (no GPU in use)"
        import torch

        from collector.gpustate import bus_id_of, open_source

        bus_ids = [bus_id_of(torch.cuda.get_device_properties(i)) for i in range(torch.cuda.device_count())]
        _GPU_SOURCE = open_source(bus_ids)
    return _GPU_SOURCE


def _gpu_sampler(info: Any) -> Any:
    if not info.is_cuda:
        return None
    source, _ = gpu_source(info)
    if source is None:
        return None
    from collector.gpustate import GpuSampler

    return GpuSampler(source)


def _settings_now() -> dict[str, Any] | None:
    if "torch" not in sys.modules:
        return None
    from collector.workloads._common import effective_precision

    return effective_precision(sys.modules["torch"])


# A CUDA error other than out-of-memory is sticky: the process's CUDA context stays broken
# and every later case in it would fail. The parent replaces a worker that met one.
_STICKY_TEXT = re.compile(r"CUDA error|cudaError|device-side assert|illegal memory access|CUBLAS_STATUS|CUDNN_STATUS|NCCL error")


def _poisons_the_process(e: BaseException) -> bool:
    name = type(e).__name__
    if "OutOfMemory" in name:
        return False
    return "AcceleratorError" in name or bool(_STICKY_TEXT.search(str(e)))


def _samples(recorded: list[tuple[str, float, int]]) -> list[dict[str, Any]]:
    """The recorded values as sample rows; raises ``InvalidSample`` for a value no reader accepts."""
    from runformat.schema import metric

    samples = []
    counters: dict[str, int] = {}
    for name, value, iterations in recorded:
        m = metric(name)
        value, iterations = float(value), int(iterations)
        if not math.isfinite(value):
            raise InvalidSample(f"metric {name!r} recorded a non-finite value ({value})")
        if m.unit in POSITIVE_UNITS and value <= 0:
            raise InvalidSample(f"metric {name!r} recorded {value} {m.unit}, which must be positive")
        if iterations < 1:
            raise InvalidSample(f"metric {name!r} recorded a sample of {iterations} iterations")
        index = counters.get(name, 0)
        counters[name] = index + 1
        samples.append(dict(metric=name, unit=m.unit, better=m.better, index=index, value=value, iterations=iterations))
    return samples


def _finite(value: Any) -> float | None:
    try:
        return float(value) if value is not None and math.isfinite(float(value)) else None
    except (TypeError, ValueError):
        return None


_OOM_TEXT = re.compile(r"out of memory|not enough memory|can't allocate memory|cannot allocate memory|CUBLAS_STATUS_ALLOC_FAILED", re.I)


def _describe_error(e: BaseException) -> str:
    name = type(e).__name__
    text = str(e).strip()
    # torch.cuda.OutOfMemoryError, a CUDA "out of memory" RuntimeError, cuBLAS's failed
    # allocation, torch's CPU allocator ("can't allocate memory"), or the host's
    # MemoryError (whose text is often empty): all are recorded as "out of memory" first.
    if isinstance(e, MemoryError) or "OutOfMemory" in name or _OOM_TEXT.search(text):
        return f"out of memory: {name}: {text.splitlines()[0] if text else 'no message'}"
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return f"{name}: {text}\n{''.join(tb[-6:])}".strip()[:8000]


def _seed(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def _release_memory() -> None:
    """Free what the case left (reference cycles included) and return cached GPU memory.

    Whatever survives the collection is long-lived (modules, caches), so it is frozen out
    of later collections: with transformers imported a full collection takes a quarter
    of a second (measured on an H200 host), which every later case would pay again.
    """
    gc.collect()
    gc.freeze()
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

    reply(_ready())
    for line in stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as e:
            reply({"event": "error", "error": f"not a JSON command ({e})"})
            continue
        cmd = message.get("cmd")
        if cmd == "exit":
            _stop_fork_server()
            return
        if cmd == "prepare":
            try:
                reply({"event": "prepared", **_prepare(",".join(message.get("preload") or []), bool(message.get("fork_server")))})
            except Exception as e:
                reply({"event": "prepared", "error": f"{type(e).__name__}: {e}"})
        elif cmd == "probe":
            try:
                from collector.fingerprint import collect_fingerprint

                from collector.workloads import DeviceInfo

                device = probe_device(message.get("device", "auto"))
                entries = collect_fingerprint(image=message.get("image"), argv=message.get("argv"))
                rows = [[e.section, e.key, e.value] for e in entries]
                rows.append(["gpu_state", "source", gpu_source(DeviceInfo.from_json(device))[1]])
                reply({"event": "probe", "device": device, "fingerprint": rows})
            except Exception as e:
                reply({"event": "error", "error": f"{type(e).__name__}: {e}"})
        elif cmd == "run":
            reply({"event": "start", "case_id": message.get("case_id")})
            try:
                result = _profiled(run_case, message)
            except Exception as e:  # a malformed command: still one answer per case
                result = {"status": "failed", "error": f"the worker could not run the case: {_describe_error(e)}", "samples": []}
            reply({"event": "result", "case_id": message.get("case_id"), **result})
            # Between cases, not in one: the next case waits in the pipe until this is done.
            _release_memory()
        else:
            reply({"event": "error", "error": f"unknown command {cmd!r}"})


def _profiled(run: Any, message: dict[str, Any]) -> dict[str, Any]:
    """``run(message)``, under cProfile when ``IMAGEBENCH_PROFILE_DIR`` names a folder.

    Each case's profile goes to ``<pid>-<n>.prof`` there, with a line in ``index.tsv``
    (file, case id, process, seconds): where a suite's time goes, case by case.
    """
    folder = os.environ.get("IMAGEBENCH_PROFILE_DIR")
    if not folder:
        return run(message)
    import cProfile

    global _PROFILED
    _PROFILED += 1
    name = f"{os.getpid()}-{_PROFILED:04d}.prof"
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    try:
        return profile.runcall(run, message)
    finally:
        elapsed = time.perf_counter() - t0
        try:
            os.makedirs(folder, exist_ok=True)
            profile.dump_stats(os.path.join(folder, name))
            with open(os.path.join(folder, "index.tsv"), "a") as f:
                f.write(f"{name}\t{message.get('case_id')}\t{message.get('process')}\t{elapsed:.4f}\n")
        except OSError:
            pass


_PROFILED = 0


def _ready() -> dict[str, Any]:
    """Import torch now, so that no case's timeout pays for it; report failure as data.

    Then, when ``FORK_SERVER_ENV`` asks for it, start the fork server its cases fork
    children from, and import the packages named in ``PRELOAD_ENV`` (comma-separated: the
    model libraries the planned cases build with). A package that fails to import is left for its cases, which
    skip with the reason; it never fails the worker.
    """
    try:
        import torch
    except BaseException as e:  # a broken stack: the parent reports it once, clearly
        return {"event": "ready", "pid": os.getpid(), "error": f"cannot import torch: {type(e).__name__}: {e}"}
    prepared = _prepare(os.environ.get(PRELOAD_ENV, ""), os.environ.get(FORK_SERVER_ENV) == "1")
    return {"event": "ready", "pid": os.getpid(), "torch": torch.__version__, **prepared}


def _prepare(preload: str, fork_server: bool) -> dict[str, Any]:
    """Start the fork server when asked, then import the packages of ``preload`` (comma-separated).

    At start-up from the environment, or later by the ``prepare`` command: a worker started
    while the collector still probes the stack learns its cases' packages only then.
    """
    import importlib

    global _SERVER_PRELOAD
    wanted = [name for name in preload.split(",") if name]
    running = _fork_server_pid() is not None
    if running and not (fork_server and set(wanted) <= _SERVER_PRELOAD):
        # Started on a guess before the cases were planned (``run.plan.speculated``): one
        # that is not needed, or lacks a package the children would import in their case.
        _discard_fork_server()
        running = False
    os.environ[PRELOAD_ENV] = preload  # the fork server imports them too (``fork_context``)
    server = None
    if fork_server:
        # Started first: it imports torch and the model libraries on its own while this
        # process does the same (``collector.workloads._procs.fork_context``).
        try:
            from collector.workloads._procs import fork_context

            server = fork_context(start=not running)
            if not running:
                _SERVER_PRELOAD = frozenset(wanted)
        except Exception:
            pass  # its cases start it themselves, or spawn
    preloaded = []
    for name in wanted:
        try:
            importlib.import_module(name)
            preloaded.append(name)
        except Exception:
            pass
    pid = None
    if server is not None and _fork_server_ready(server):
        pid = _fork_server_pid()  # for the logs and tests
    # What the imports left is long-lived: collected and frozen now, before the worker says
    # it is ready, as ``_release_memory`` does after each case. Left to the first case's
    # clean-up, that first full collection cost 70-85 ms between a worker's first and
    # second case on two CPU cores (``benchmarks/launcher_cost.py``), 7% of a 1 s case.
    gc.collect()
    gc.freeze()
    return {"preloaded": preloaded, "fork_server": pid}


_SERVER_PRELOAD: frozenset[str] = frozenset()  # the packages the running fork server imported


def _fork_server_pid() -> int | None:
    """The pid of this worker's fork server, when it has started one."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


def _discard_fork_server() -> None:
    """Kill a fork server that has forked nothing yet and reap it, without waiting for its
    imports to finish (a server still importing reads its stop request only after them)."""
    pid = _fork_server_pid()
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    _stop_fork_server()


def _fork_server_ready(mp: Any, timeout: float = 300.0) -> bool:
    """Wait until the fork server has imported its modules (it forks nothing before).

    A server still importing when the first case starts would share the CPU with it: on
    two cores a 64x64 matmul read 16 ms a call instead of 12 us.
    """
    try:
        child = mp.Process(target=os.getpid)
        child.start()
        child.join(timeout)
        return child.exitcode == 0
    except Exception:
        return False


def _stop_fork_server() -> None:
    """End this worker's fork server, if it started one, and wait for it to exit.

    Left to notice its worker's exit by itself, the server (with torch imported) was still
    exiting while the next worker process measured its first cases: on two cores the
    next 64x64 matmul read 16 ms a call instead of 12 us.
    """
    if _fork_server_pid() is None:
        return
    server = sys.modules["multiprocessing.forkserver"]._forkserver
    try:
        server._stop()  # closes its pipe and waits for the process (the stdlib's own tests use it)
    except Exception:
        pass


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the collector that started it dies."""
    parent = os.environ.get(PARENT_PID_ENV)
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if str(os.getppid()) != parent:  # the parent died before prctl took effect
        os._exit(1)


def main() -> None:
    _die_with_parent()
    # Where a case dies of a signal, or hangs and is asked for its stack, the Python
    # traceback goes to stderr, which the parent keeps and records with the case.
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(faulthandler, "register") and hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    # Keep the protocol on a private copy of stdout; route fd 1 to stderr so that any
    # print from torch, a workload or a library cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, proto)


if __name__ == "__main__":
    main()
