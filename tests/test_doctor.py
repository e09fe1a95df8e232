"""collector doctor: each check on fake GPUs, the table, the verdict and the exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pathlib import Path

from collector import doctor
from collector.doctor import INFO, OK, WARN, Check, GpuFacts
from tests.test_gpustate import _fake_smi, fake_pynvml

ROOT = Path(__file__).resolve().parent.parent


def by_name(checks):
    return {c.name: c for c in checks}


def test_a_healthy_gpu_passes_every_check():
    facts = [GpuFacts(0, "NVIDIA H200", persistence=True, power_limit_w=700, power_default_w=700, ecc_uncorrected=0,
                      mig=False, temperature_c=35, app_clock_mhz=1980, default_app_clock_mhz=1980, other_processes=0)]
    checks = doctor.check_gpus(facts, "nvml", expect_gpu=True)
    assert {c.status for c in checks} == {OK}
    assert doctor.verdict(checks) == doctor.VERDICT_FIT


def test_each_misleading_state_warns_with_a_fix():
    facts = [GpuFacts(0, "NVIDIA H200", persistence=False, power_limit_w=500, power_default_w=700, ecc_uncorrected=3,
                      mig=True, temperature_c=85, app_clock_mhz=1500, default_app_clock_mhz=1980, other_processes=2)]
    checks = by_name(doctor.check_gpus(facts, "nvml", expect_gpu=True))
    for name in ("other GPU processes", "persistence mode", "application/locked clocks", "power limit", "ECC errors",
                 "MIG mode", "temperature"):
        assert checks[name].status == WARN, name
        assert checks[name].fix, name
    assert "500 W of a default 700 W" in checks["power limit"].found
    assert doctor.verdict(list(checks.values())) == doctor.VERDICT_WARNINGS


def test_facts_through_a_fake_nvml():
    nvml = fake_pynvml(pids=(123456,))
    nvml.nvmlDeviceGetCount = lambda: 1
    nvml.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    nvml.nvmlDeviceGetPowerManagementLimit = lambda h: 700_000
    nvml.nvmlDeviceGetPowerManagementDefaultLimit = lambda h: 700_000
    nvml.nvmlDeviceGetMigMode = lambda h: (0, 0)
    nvml.nvmlDeviceGetPersistenceMode = lambda h: 1
    nvml.nvmlDeviceGetTotalEccErrors = lambda h, a, b: 0
    nvml.nvmlDeviceGetApplicationsClock = lambda h, c: 1980
    nvml.nvmlDeviceGetDefaultApplicationsClock = lambda h, c: 1980
    (f,) = doctor.gpu_facts_nvml(nvml)
    assert (f.name, f.persistence, f.mig, f.power_limit_w, f.other_processes) == ("NVIDIA H200", True, False, 700, 1)


def test_facts_through_a_fake_nvidia_smi(tmp_path):
    line = "0, NVIDIA H200, Enabled, 700.00, 700.00, 0, [N/A], 33, 1980, 1980, 00000000:1B:00.0"
    _fake_smi(tmp_path, line, "")
    (f,) = doctor.gpu_facts_smi(str(tmp_path / "nvidia-smi"))
    assert (f.name, f.persistence, f.mig, f.temperature_c, f.other_processes) == ("NVIDIA H200", True, None, 33, 0)


def test_no_gpu_tools_on_a_cpu_machine_is_information_not_a_warning(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    facts, source = doctor.collect_gpu_facts()
    assert facts == [] and source.startswith("none (")
    (c,) = doctor.check_gpus(facts, source, expect_gpu=False)
    assert c.status == INFO
    (c,) = doctor.check_gpus(facts, source, expect_gpu=True)  # a GPU torch sees, but nothing can read it
    assert c.status == WARN and "nvidia-ml-py" in c.fix


def test_governor_disk_torch_and_data_dir(tmp_path):
    cpu = tmp_path / "cpu"
    for i, gov in enumerate(("performance", "powersave")):
        (cpu / f"cpu{i}" / "cpufreq").mkdir(parents=True)
        (cpu / f"cpu{i}" / "cpufreq" / "scaling_governor").write_text(gov + "\n")
    assert doctor.check_cpu_governor(str(cpu)).status == WARN
    assert doctor.check_cpu_governor(str(tmp_path / "none")).status == INFO
    assert doctor.check_disk(tmp_path / "runs" / "new").status == OK  # a folder yet to be made
    assert doctor.check_torch({"error": "ModuleNotFoundError: No module named 'torch'"}, False)[0].status == WARN
    cuda = by_name(doctor.check_torch({"torch": "2.11.0", "cuda_available": True, "cuda": "13.0", "cudnn": 91002,
                                       "nccl": "2.27.7", "gpus": 1}, True))
    assert cuda["CUDA"].status == cuda["cuDNN"].status == cuda["NCCL"].status == OK
    assert doctor.check_data_dir("standard", None, ("dataloader",)).status == WARN
    assert doctor.check_data_dir("standard", str(tmp_path), ("dataloader",)).status == OK
    assert doctor.check_data_dir("standard", None, ("matmul",)).status == INFO


def test_run_entries_record_the_verdict_and_the_warnings():
    entries = doctor.run_entries([Check("a", OK, "fine"), Check("b", WARN, "bad", "fix it")])
    assert entries["doctor"] == "warnings" and json.loads(entries["doctor_warnings"]) == ["b: bad"]


def test_the_cli_prints_one_table_and_exits_1_with_warnings(tmp_path):
    """As a user runs it on this CPU machine: --data-dir missing for the data workloads warns."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run([sys.executable, "-m", "collector", "doctor", "--out", str(tmp_path), "--suite", "cpu", "--json"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(r.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["--data-dir"] == "warn" and report["verdict"] == "warnings"
    assert r.returncode == 1
    r = subprocess.run([sys.executable, "-m", "collector", "doctor", "--out", str(tmp_path), "--suite", "cpu",
                        "--data-dir", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "free disk" in r.stdout and "torch" in r.stdout
    assert r.returncode == (1 if "warn" in r.stdout.split("verdict")[0] else 0)
    bad = subprocess.run([sys.executable, "-m", "collector", "doctor", "--suite", "nope"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip() == "collector: error: --suite 'nope' is not a suite; choose one of: smoke, cpu, quick, standard, full"




def test_cpu_load_warns_on_a_cpu_run_and_informs_on_a_gpu_run():
    from collector import cpuload

    busy = cpuload.check_cpu_load(False, busy=0.6, load1=1.9, cores=2)
    assert busy.status == WARN and "60% of 2 core(s) busy" in busy.found and "load average 1.90" in busy.found
    assert busy.fix
    assert cpuload.check_cpu_load(True, busy=0.6, load1=1.9, cores=2).status == INFO
    assert cpuload.check_cpu_load(False, busy=0.02, load1=0.1, cores=2).status == OK


def test_busy_share_from_two_readings_of_proc_stat():
    from collector import cpuload

    readings = iter([(100, 1000), (400, 2000)])
    assert cpuload.measure_busy_share(0.0, read=lambda: next(readings), sleep=lambda s: None) == 0.3
    assert cpuload.measure_busy_share(0.0, read=lambda: None, sleep=lambda s: None) is None


def test_boost_clocks_warn_on_a_cpu_run(tmp_path):
    from collector import cpuload

    (tmp_path / "intel_pstate").mkdir()
    (tmp_path / "intel_pstate" / "no_turbo").write_text("0\n")
    check = cpuload.check_cpu_boost(False, str(tmp_path))
    assert check.status == WARN and "no_turbo" in check.fix
    assert cpuload.check_cpu_boost(True, str(tmp_path)).status == INFO
    (tmp_path / "intel_pstate" / "no_turbo").write_text("1\n")
    assert cpuload.check_cpu_boost(False, str(tmp_path)).status == OK
    assert cpuload.check_cpu_boost(False, str(tmp_path / "none")).status == INFO


def test_the_doctor_runs_the_cpu_checks():
    names = {c.name for c in doctor.run_checks(with_torch=False)}
    assert {"CPU load", "CPU frequency scaling", "CPU frequency governor"} <= names


def test_python_m_without_the_packages_is_one_line_not_a_traceback(tmp_path):
    # -S -I: a Python that sees none of the site packages (as one outside .venv)
    for tool in ("collector", "reporter"):
        r = subprocess.run([sys.executable, "-S", "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                            f"import runpy; runpy.run_module({tool!r}, run_name='__main__')", "--help"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert f"which the {tool} needs" in r.stderr and f"bin/{tool}" in r.stderr
