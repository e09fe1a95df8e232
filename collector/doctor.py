"""``collector doctor``: what would make a run on this machine misleading, and how to fix it.

Each check returns a ``Check`` (name, status, what was found, how to fix it). ``ok`` and
``info`` never make a machine unfit; any ``warn`` does: the verdict is ``fit`` (exit 0)
or ``warnings`` (exit 1). ``collector run`` runs the same checks first and records the
verdict in the run section of the fingerprint, so an article can say the machine was
not fit when it was recorded.

GPU facts come from NVML (``nvidia-ml-py``) or, without it, ``nvidia-smi``; torch, CUDA,
cuDNN and NCCL from the stack's interpreter (a subprocess, so the collector's parent
never imports torch). Nothing here changes the machine.
"""

from __future__ import annotations

from collector.checks import INFO, OK, WARN, Check

import glob
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from runformat.vocabulary import format_cudnn_version

VERDICT_FIT, VERDICT_WARNINGS = "fit", "warnings"
HOT_C = 80  # above this at idle a GPU will throttle under load
MIN_FREE_BYTES = 2 << 30
DATA_WORKLOADS = ("dataloader",)
_TORCH_PROBE = r"""
import json
out = {}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda_available"] = torch.cuda.is_available()
    out["cuda"] = torch.version.cuda
    out["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    try:
        out["nccl"] = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None
    except Exception as e:
        out["nccl"] = None
    out["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""




def verdict(checks: Sequence[Check]) -> str:
    """``fit`` when no check warns, else ``warnings``."""
    return VERDICT_WARNINGS if any(c.status == WARN for c in checks) else VERDICT_FIT


# -- GPU facts --------------------------------------------------------------------------


@dataclass
class GpuFacts:
    index: int
    name: str = ""
    persistence: bool | None = None
    power_limit_w: float | None = None
    power_default_w: float | None = None
    ecc_uncorrected: int | None = None
    mig: bool | None = None
    temperature_c: float | None = None
    app_clock_mhz: float | None = None
    default_app_clock_mhz: float | None = None
    other_processes: int | None = None


def gpu_facts_nvml(nvml: Any = None) -> list[GpuFacts]:
    """Facts of every GPU through NVML; raises if NVML is missing or does not start."""
    if nvml is None:
        import pynvml as nvml
    from collector.gpustate import _own_pids, count_others

    nvml.nvmlInit()
    try:
        own = _own_pids()
        out = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)

            def get(fn: Callable[[], Any]) -> Any:
                try:
                    return fn()
                except Exception:
                    return None

            name = get(lambda: nvml.nvmlDeviceGetName(h))
            limit = get(lambda: nvml.nvmlDeviceGetPowerManagementLimit(h))
            default = get(lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(h))
            mig = get(lambda: nvml.nvmlDeviceGetMigMode(h))
            procs = get(lambda: [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)])
            out.append(
                GpuFacts(
                    index=i,
                    name=name.decode() if isinstance(name, bytes) else str(name or ""),
                    persistence=None if (v := get(lambda: nvml.nvmlDeviceGetPersistenceMode(h))) is None else bool(v),
                    power_limit_w=None if limit is None else limit / 1000,
                    power_default_w=None if default is None else default / 1000,
                    ecc_uncorrected=get(lambda: int(nvml.nvmlDeviceGetTotalEccErrors(h, 1, 0))),  # uncorrected, volatile
                    mig=None if mig is None else bool(mig[0] if isinstance(mig, (tuple, list)) else mig),
                    temperature_c=get(lambda: float(nvml.nvmlDeviceGetTemperature(h, 0))),
                    app_clock_mhz=get(lambda: float(nvml.nvmlDeviceGetApplicationsClock(h, 0))),  # graphics
                    default_app_clock_mhz=get(lambda: float(nvml.nvmlDeviceGetDefaultApplicationsClock(h, 0))),
                    other_processes=None if procs is None else count_others_of_doctor(procs, own, count_others),
                )
            )
        return out
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def count_others_of_doctor(pids: list[int], own: set[int], count_others: Callable[..., int]) -> int:
    # The doctor holds no CUDA context: in a container (host pids) every process is another's.
    return len(pids) if not any(p in own for p in pids) else count_others(pids, own)


SMI_QUERY = ("index,name,persistence_mode,power.limit,power.default_limit,ecc.errors.uncorrected.volatile.total,"
             "mig.mode.current,temperature.gpu,clocks.applications.graphics,clocks.default_applications.graphics,pci.bus_id")


def gpu_facts_smi(exe: str | None = None) -> list[GpuFacts]:
    """Facts of every GPU through nvidia-smi; raises ``OSError`` if it is absent or fails."""
    from collector.gpustate import _norm_bus, _num

    exe = exe or shutil.which("nvidia-smi")
    if exe is None:
        raise OSError("nvidia-smi is not on PATH")

    def query(args: list[str]) -> list[list[str]]:
        try:
            out = subprocess.run([exe, *args, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10, check=True).stdout
        except (OSError, subprocess.SubprocessError) as e:
            raise OSError(f"nvidia-smi failed ({e})") from e
        return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]

    rows = query([f"--query-gpu={SMI_QUERY}"])
    try:
        apps = query(["--query-compute-apps=gpu_bus_id,pid"])
    except OSError:
        apps = []
    out = []
    for r in rows:
        if len(r) < 11:
            continue
        bus = _norm_bus(r[10])
        ecc = _num(r[5])
        out.append(
            GpuFacts(
                index=int(r[0]) if r[0].isdigit() else len(out),
                name=r[1],
                persistence={"enabled": True, "disabled": False}.get(r[2].lower()),
                power_limit_w=_num(r[3]),
                power_default_w=_num(r[4]),
                ecc_uncorrected=None if ecc is None else int(ecc),
                mig={"enabled": True, "disabled": False}.get(r[6].lower()),
                temperature_c=_num(r[7]),
                app_clock_mhz=_num(r[8]),
                default_app_clock_mhz=_num(r[9]),
                other_processes=sum(1 for a in apps if len(a) == 2 and _norm_bus(a[0]) == bus) if apps or rows else None,
            )
        )
    return out


def collect_gpu_facts() -> tuple[list[GpuFacts], str]:
    """GPU facts and where they came from (``nvml``, ``nvidia-smi``, or ``none (...)``)."""
    reasons = []
    try:
        return gpu_facts_nvml(), "nvml"
    except ImportError:
        reasons.append("nvidia-ml-py not installed")
    except Exception as e:
        reasons.append(f"NVML did not start ({type(e).__name__}: {e})")
    try:
        return gpu_facts_smi(), "nvidia-smi"
    except OSError as e:
        reasons.append(str(e))
    return [], "none (" + "; ".join(reasons) + ")"


def check_gpus(facts: list[GpuFacts], source: str, expect_gpu: bool) -> list[Check]:
    """The GPU checks of one table, one line per check over every GPU."""
    if not facts:
        if expect_gpu:
            return [Check("GPU state", WARN, f"cannot read the GPUs: {source}",
                          "install nvidia-ml-py (pip install nvidia-ml-py) or put nvidia-smi on PATH")]
        return [Check("GPU", INFO, f"no GPU found ({source})", "")]
    checks = [Check("GPU state source", OK, f"{source}; {len(facts)} GPU(s): {', '.join(sorted({f.name for f in facts}))}")]

    def line(name: str, bad: list[str], good: str, fix: str, unknown: bool = False) -> Check:
        if bad:
            return Check(name, WARN, "; ".join(bad), fix)
        return Check(name, INFO if unknown else OK, good)

    others = [f"gpu{f.index}: {f.other_processes} process(es)" for f in facts if f.other_processes]
    checks.append(line("other GPU processes", others, "none", "stop them, or record on an idle GPU (CUDA_VISIBLE_DEVICES)"))
    off = [f"gpu{f.index}: off" for f in facts if f.persistence is False]
    checks.append(line("persistence mode", off, "on" if all(f.persistence for f in facts) else "unknown",
                       "sudo nvidia-smi -pm 1 (the driver stays loaded between processes)",
                       unknown=any(f.persistence is None for f in facts)))
    clocks = [f"gpu{f.index}: applications clock {f.app_clock_mhz:.0f} MHz, default {f.default_app_clock_mhz:.0f}"
              for f in facts if f.app_clock_mhz and f.default_app_clock_mhz and f.app_clock_mhz != f.default_app_clock_mhz]
    checks.append(line("application/locked clocks", clocks, "at the defaults",
                       "sudo nvidia-smi -rac; sudo nvidia-smi -rgc (or record the lock in the label)"))
    power = [f"gpu{f.index}: {f.power_limit_w:.0f} W of a default {f.power_default_w:.0f} W" for f in facts
             if f.power_limit_w and f.power_default_w and f.power_limit_w < f.power_default_w - 0.5]
    checks.append(line("power limit", power, "at the default", "sudo nvidia-smi -pl <default watts>"))
    ecc = [f"gpu{f.index}: {f.ecc_uncorrected} uncorrected" for f in facts if f.ecc_uncorrected]
    checks.append(line("ECC errors", ecc, "none", "reset the GPU or use another; uncorrected errors mean faulty memory"))
    mig = [f"gpu{f.index}: MIG on" for f in facts if f.mig]
    checks.append(line("MIG mode", mig, "off", "a MIG slice is not the whole GPU: label the run so, or sudo nvidia-smi -mig 0"))
    hot = [f"gpu{f.index}: {f.temperature_c:.0f} °C" for f in facts if f.temperature_c is not None and f.temperature_c > HOT_C]
    temps = [f.temperature_c for f in facts if f.temperature_c is not None]
    checks.append(line("temperature", hot, f"{max(temps):.0f} °C at most" if temps else "unknown",
                       "let it cool; check the cooling before recording", unknown=not temps))
    return checks


def check_cpu_governor(root: str = "/sys/devices/system/cpu") -> Check:
    """The CPU frequency governor: anything but ``performance`` lets clocks wander."""
    found = set()
    for path in glob.glob(f"{root}/cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            found.add(Path(path).read_text().strip())
        except OSError:
            pass
    if not found:
        return Check("CPU frequency governor", INFO, "not exposed here (a VM or container)")
    if found == {"performance"}:
        return Check("CPU frequency governor", OK, "performance")
    return Check("CPU frequency governor", WARN, ", ".join(sorted(found)),
                 "sudo cpupower frequency-set -g performance")


def check_disk(out: Path) -> Check:
    """Free space where runs are written."""
    where = Path(out)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError as e:
        return Check("free disk", WARN, f"cannot tell for {out}: {e.strerror or e}", "choose a writable --out")
    shown = f"{free / 2**30:.1f} GiB free at {where}"
    if free < MIN_FREE_BYTES:
        return Check("free disk", WARN, shown, f"free at least {MIN_FREE_BYTES >> 30} GiB, or choose another --out")
    return Check("free disk", OK, shown)


def probe_torch(python: str, timeout: float = 300) -> dict[str, Any]:
    """torch, CUDA, cuDNN and NCCL as the stack's interpreter reports them."""
    try:
        result = subprocess.run([python, "-c", _TORCH_PROBE], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"cannot run {python}: {e}"}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (result.stderr.strip().splitlines() or ["no output"])[-1]}


def check_torch(info: dict[str, Any], expect_gpu: bool) -> list[Check]:
    if "error" in info:
        return [Check("torch", WARN, info["error"], "run the collector with the stack's own Python (--python)")]
    checks = [Check("torch", OK, str(info.get("torch")))]
    if info.get("cuda_available"):
        checks.append(Check("CUDA", OK, f"{info.get('cuda')}, {info.get('gpus')} GPU(s) visible"))
        checks.append(Check("cuDNN", OK if info.get("cudnn") else WARN,
                            format_cudnn_version(str(info["cudnn"])) if info.get("cudnn") else "not available",
                            "" if info.get("cudnn") else "a CUDA build of torch ships cuDNN: check the install"))
        checks.append(Check("NCCL", OK if info.get("nccl") else INFO, str(info.get("nccl") or "not available"),
                            "" if info.get("nccl") else "multi-GPU workloads will be skipped"))
    else:
        status = WARN if expect_gpu else INFO
        checks.append(Check("CUDA", status, f"not available (torch built for CUDA {info.get('cuda') or 'none'})",
                            "install a CUDA build of torch, or check the driver (nvidia-smi)" if expect_gpu else ""))
    return checks


def check_data_dir(suite: str | None, data_dir: str | None, workloads: Sequence[str]) -> Check:
    wants = [w for w in DATA_WORKLOADS if w in workloads]
    if not wants:
        return Check("--data-dir", INFO, "no data workload in this suite")
    if data_dir is None:
        return Check("--data-dir", WARN, f"not given: {', '.join(wants)} will use synthetic data only",
                     "pass --data-dir DIR with CIFAR-10 in torchvision's format")
    if not Path(data_dir).is_dir():
        return Check("--data-dir", WARN, f"{data_dir} is not a folder", "give an existing folder")
    return Check("--data-dir", OK, data_dir)


def run_checks(
    *,
    out: Path = Path("runs"),
    python: str | None = None,
    suite: str | None = None,
    data_dir: str | None = None,
    with_torch: bool = True,
) -> list[Check]:
    """Every check, in the table's order."""
    from collector.suites import SUITES

    facts, source = collect_gpu_facts()
    torch_info = probe_torch(python or sys.executable) if with_torch else {}
    expect_gpu = bool(facts) or bool(torch_info.get("cuda_available"))
    checks = check_gpus(facts, source, expect_gpu)
    if with_torch:
        checks += check_torch(torch_info, expect_gpu)
    checks.append(check_cpu_governor())
    from collector.cpuload import check_cpu  # load and boost clocks: they warn on CPU runs

    checks += check_cpu(expect_gpu)
    checks.append(check_disk(out))
    chosen = suite or ("standard" if expect_gpu else "cpu")
    checks.append(check_data_dir(chosen, data_dir, SUITES[chosen].workloads if chosen in SUITES else ()))
    return checks


def render_checks(checks: Sequence[Check]) -> str:
    """The table as plain text (the CLI prints it through rich when rich is present)."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'check':{width}s}  status  found / fix"]
    for c in checks:
        lines.append(f"{c.name:{width}s}  {c.status:6s}  {c.found}" + (f"  -> {c.fix}" if c.fix and c.status != OK else ""))
    lines.append(f"verdict: {verdict(checks)}")
    return "\n".join(lines)


def run_entries(checks: Sequence[Check]) -> dict[str, str]:
    """What ``collector run`` records in its run section."""
    return {
        "doctor": verdict(checks),
        "doctor_warnings": json.dumps([f"{c.name}: {c.found}" for c in checks if c.status == WARN]),
    }


def print_checks(checks: Sequence[Check], file: Any = None) -> None:
    file = file or sys.stdout
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(render_checks(checks), file=file)
        return
    table = Table(title=f"collector doctor: {verdict(checks)}")
    for col in ("check", "status", "found", "how to fix"):
        table.add_column(col, overflow="fold")
    style = {OK: "green", INFO: "cyan", WARN: "bold yellow"}
    for c in checks:
        table.add_row(c.name, f"[{style[c.status]}]{c.status}[/]", c.found, c.fix if c.status != OK else "")
    Console(file=file, width=max(100, shutil.get_terminal_size().columns)).print(table)
