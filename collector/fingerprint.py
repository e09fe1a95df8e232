"""The environment fingerprint: what stack and machine a run was recorded on.

Gathered with ``torch.utils.collect_env`` and ``torch.__config__`` (what torch itself
reports when asked for a bug report), nvidia-ml-py when present, and the standard
library. Returned as (section, key, value) string triples; environment variables are
allow-listed and secrets never recorded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import socket
import sys
from typing import Any, Callable, Iterable

from collector import __version__
from runformat.redact import (  # noqa: F401 - redact_argv, looks_like_credential: part of this module's interface
    REDACTED,
    SECRET_NAME,
    looks_like_credential,
    redact,
    redact_argv,
    redact_entry,
)
from runformat.schema import EnvironmentEntry

redact_value = redact  # the name older callers use

# Environment variables worth recording: they change what the stack does.
ENV_PREFIXES = (
    "CUDA_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "NCCL_", "NVIDIA_", "TORCH_", "TORCHINDUCTOR_",
    "TORCHDYNAMO_", "PYTORCH_", "TRITON_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOMP_",
    "NVTE_", "IMAGEBENCH_",
)
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
             "http_proxy", "https_proxy", "no_proxy", "CONDA_DEFAULT_ENV", "VIRTUAL_ENV")
# Variables with a secret-looking name (redact.SECRET_NAME) are never recorded, whatever the
# prefix; every value recorded goes through runformat.redact, the one redaction function.
# Variables the collector sets for its own workers: not part of the stack.
ENV_INTERNAL = frozenset({"IMAGEBENCH_PARENT_PID", "IMAGEBENCH_PRELOAD", "IMAGEBENCH_FORK_SERVER"})
PACKAGES = (
    "torch", "torchvision", "torchaudio", "triton", "numpy", "transformers", "pyarrow",
    "nvidia-cublas", "nvidia-cublas-cu12", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12",
    "nvidia-ml-py", "psutil", "intel-openmp", "mkl", "imagebench",
)


def collect_environment_variables(environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Allow-listed variables, secret-named ones dropped, credential-like values redacted."""
    environ = dict(os.environ if environ is None else environ)
    out = []
    for name in sorted(environ):
        if SECRET_NAME.search(name) or name in ENV_INTERNAL:
            continue
        if name.startswith(ENV_PREFIXES) or name in ENV_NAMES:
            out.append((name, redact(environ[name])))
    return out


def _safe(fn: Callable[[], Any], default: Any = None) -> Any:
    try:
        return fn()
    except Exception:  # a fingerprint must never fail a run: record what can be read
        return default


def collect_torch(torch: Any) -> list[tuple[str, str, str]]:
    """torch, CUDA, cuDNN, NCCL, build configuration and collect_env's report."""
    rows: list[tuple[str, str, str]] = [
        ("torch", "version", torch.__version__),
        ("torch", "git_version", str(_safe(lambda: torch.version.git_version, ""))),
        ("torch", "debug", str(_safe(lambda: torch.version.debug, ""))),
        ("torch", "cuda_available", str(torch.cuda.is_available())),
        ("torch", "num_threads", str(torch.get_num_threads())),
        ("torch", "num_interop_threads", str(_safe(torch.get_num_interop_threads, ""))),
        ("cuda", "runtime", str(torch.version.cuda or "")),
        ("cuda", "hip", str(_safe(lambda: torch.version.hip, "") or "")),
        ("cuda", "cudnn", str(_safe(torch.backends.cudnn.version, "") or "")),
        ("cuda", "cudnn_enabled", str(_safe(lambda: torch.backends.cudnn.enabled, ""))),
        ("cuda", "tf32_matmul", str(_safe(lambda: torch.backends.cuda.matmul.allow_tf32, ""))),
        ("cuda", "tf32_cudnn", str(_safe(lambda: torch.backends.cudnn.allow_tf32, ""))),
        ("cuda", "float32_matmul_precision", str(_safe(torch.get_float32_matmul_precision, ""))),
    ]
    nccl = _safe(lambda: ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "", "")
    rows.append(("cuda", "nccl", nccl or ""))
    rows.append(("torch", "config", str(_safe(torch.__config__.show, ""))))
    rows.append(("torch", "parallel_info", str(_safe(torch.__config__.parallel_info, ""))))
    env = _safe(lambda: __import__("torch.utils.collect_env", fromlist=["get_env_info"]).get_env_info())
    if env is not None:
        for key, value in env._asdict().items():
            if key == "pip_packages":
                continue  # recorded below from importlib.metadata, one row each
            rows.append(("collect_env", key, "" if value is None else str(value)))
    return rows


def collect_gpus(torch: Any) -> list[tuple[str, str, str]]:
    """Every visible GPU from torch, enriched with NVML (clocks, power, ECC, MIG, ...)."""
    rows: list[tuple[str, str, str]] = []
    if not torch.cuda.is_available():
        return rows
    count = torch.cuda.device_count()
    rows.append(("gpu", "count", str(count)))
    for i in range(count):
        p = torch.cuda.get_device_properties(i)
        s = f"gpu{i}"
        rows += [
            (s, "name", p.name),
            (s, "total_memory_bytes", str(p.total_memory)),
            (s, "compute_capability", f"{p.major}.{p.minor}"),
            (s, "multiprocessors", str(p.multi_processor_count)),
            (s, "uuid", str(_safe(lambda: p.uuid, ""))),
        ]
    rows += _collect_nvml()
    return rows


def _collect_nvml() -> list[tuple[str, str, str]]:
    try:
        import pynvml  # provided by nvidia-ml-py
    except ImportError:
        return [("nvml", "available", "False (nvidia-ml-py not installed)")]
    try:
        pynvml.nvmlInit()
    except Exception as e:  # no driver, no permission
        return [("nvml", "available", f"False ({e})")]
    rows = [("nvml", "available", "True")]
    try:
        rows.append(("driver", "version", _str(pynvml.nvmlSystemGetDriverVersion())))
        rows.append(("driver", "cuda_driver_version", str(_safe(pynvml.nvmlSystemGetCudaDriverVersion_v2, ""))))
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            s = f"gpu{i}"
            fields: dict[str, Callable[[], Any]] = {
                "nvml_name": lambda: _str(pynvml.nvmlDeviceGetName(h)),
                "serial_sha256": lambda: hashlib.sha256(_str(pynvml.nvmlDeviceGetSerial(h)).encode()).hexdigest()[:12],
                "pci_bus_id": lambda: _str(pynvml.nvmlDeviceGetPciInfo(h).busId),
                "vbios": lambda: _str(pynvml.nvmlDeviceGetVbiosVersion(h)),
                "clock_sm_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                "clock_mem_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "clock_sm_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "clock_mem_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000,
                "power_default_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000,
                "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                "ecc_mode": lambda: pynvml.nvmlDeviceGetEccMode(h)[0],
                "mig_mode": lambda: pynvml.nvmlDeviceGetMigMode(h)[0],
                "persistence_mode": lambda: pynvml.nvmlDeviceGetPersistenceMode(h),
                "compute_mode": lambda: pynvml.nvmlDeviceGetComputeMode(h),
                "memory_total_bytes": lambda: pynvml.nvmlDeviceGetMemoryInfo(h).total,
                "pcie_link_gen_max": lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
                "pcie_link_width_max": lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(h),
            }
            for key, fn in fields.items():
                value = _safe(fn)
                if value is not None:
                    rows.append((s, key, str(value)))
    finally:
        _safe(pynvml.nvmlShutdown)
    return rows


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def collect_host() -> list[tuple[str, str, str]]:
    """CPU, memory, OS, kernel, Python, host and container facts."""
    rows = [
        ("host", "hostname", socket.gethostname()),
        ("os", "platform", platform.platform()),
        ("os", "system", platform.system()),
        ("os", "kernel", platform.release()),
        ("os", "machine", platform.machine()),
        ("python", "version", platform.python_version()),
        ("python", "implementation", platform.python_implementation()),
        ("python", "executable", sys.executable),
        ("cpu", "logical_cores", str(os.cpu_count() or "")),
        ("cpu", "usable_cores", str(len(_safe(lambda: os.sched_getaffinity(0), []) or []) or "")),
    ]
    model = _cpu_model()
    if model:
        rows.append(("cpu", "model", model))
    physical = _safe(lambda: __import__("psutil").cpu_count(logical=False))
    if physical:
        rows.append(("cpu", "physical_cores", str(physical)))
    mem = _mem_total()
    if mem:
        rows.append(("memory", "total_bytes", str(mem)))
    os_release = _safe(lambda: dict(
        line.split("=", 1) for line in open("/etc/os-release").read().splitlines() if "=" in line
    ), {})
    if os_release.get("PRETTY_NAME"):
        rows.append(("os", "distribution", os_release["PRETTY_NAME"].strip('"')))
    rows += _collect_container()
    return rows


def _cpu_model() -> str:
    text = _safe(lambda: open("/proc/cpuinfo").read(), "")
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else platform.processor()


def _mem_total() -> int | None:
    text = _safe(lambda: open("/proc/meminfo").read(), "")
    m = re.search(r"^MemTotal:\s*(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 if m else None


def _collect_container() -> list[tuple[str, str, str]]:
    rows = []
    in_docker = os.path.exists("/.dockerenv") or "docker" in _safe(lambda: open("/proc/1/cgroup").read(), "")
    rows.append(("container", "docker", str(in_docker)))
    for var, key in (("IMAGEBENCH_IMAGE_DIGEST", "image_digest"), ("NVIDIA_DRIVER_CAPABILITIES", "nvidia_capabilities")):
        if os.environ.get(var):
            rows.append(("container", key, os.environ[var]))
    return rows


def collect_source_commit() -> str:
    """The git commit imagebench runs from (with ``+dirty`` for local changes), if a checkout."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return ""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    if head.returncode != 0:
        return ""
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def collect_packages() -> list[tuple[str, str, str]]:
    """Versions of selected packages installed beside torch."""
    rows = []
    for name in PACKAGES:
        version = _safe(lambda: importlib.metadata.version(name))
        if version:
            rows.append(("packages", name, version))
    return rows


def collect_fingerprint(
    *, image: str | None = None, argv: Iterable[str] | None = None, environ: dict[str, str] | None = None
) -> list[EnvironmentEntry]:
    """The whole fingerprint of the running interpreter's stack and machine."""
    import torch

    rows: list[tuple[str, str, str]] = [("imagebench", "version", __version__)]
    commit = collect_source_commit()
    if commit:
        rows.append(("imagebench", "git_commit", commit))
    if image:
        rows.append(("container", "image", image))
    rows += collect_torch(torch)
    rows += collect_gpus(torch)
    rows += collect_host()
    rows += collect_packages()
    rows += [("env", name, value) for name, value in collect_environment_variables(environ)]
    rows.append(("command", "argv", redact_argv(sys.argv if argv is None else argv)))
    seen: set[tuple[str, str]] = set()
    entries = []
    for section, key, value in rows:
        if (section, key) in seen:
            continue
        seen.add((section, key))
        entries.append(EnvironmentEntry(section, key, redact_entry(section, key, value)))
    return entries
