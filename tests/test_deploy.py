"""The fleet jobs under deploy/: the Kubernetes Job parses and has the fields it relies on, the
sbatch script passes `bash -n`, and every collector option both use exists."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import string
import subprocess
import sys

import pytest
import yaml

from collector.cli import build_parser
from conftest import ROOT

JOB = ROOT / "deploy" / "kubernetes" / "imagebench-job.yaml"
SBATCH = ROOT / "deploy" / "slurm" / "imagebench.sbatch"
PARAMETERS = {
    "IMAGEBENCH_JOB": "imagebench-nightly", "IMAGEBENCH_HOSTS": "4", "IMAGEBENCH_IMAGE": "pytorch/pytorch:2.9.0",
    "IMAGEBENCH_LABEL": "pytorch-2.9", "IMAGEBENCH_SUITE": "standard", "IMAGEBENCH_OUT": "s3://bucket/imagebench",
    "IMAGEBENCH_GIT_URL": "https://git.example/imagebench.git", "IMAGEBENCH_REF": "main",
}


def run_options() -> set[str]:
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]
    return {o for action in run._actions for o in action.option_strings}


def collector_flags(text: str) -> set[str]:
    """The --flags of every `collector run` command in ``text`` (line continuations joined)."""
    joined = text.replace("\\\n", " ")
    flags = set()
    for m in re.finditer(r"-m collector run(.*)", joined):
        flags |= {w for w in m.group(1).split() if w.startswith("--")}
    return flags


def test_the_kubernetes_job_is_indexed_one_pod_per_gpu_host_and_parametrised_by_its_image():
    text = JOB.read_text()
    assert set(re.findall(r"\$\{(\w+)\}", text)) == set(PARAMETERS)  # the header documents each one
    raw = yaml.safe_load(text)
    assert raw["spec"]["template"]["spec"]["containers"][0]["image"] == "${IMAGEBENCH_IMAGE}"
    job = yaml.safe_load(string.Template(text).substitute(PARAMETERS))  # what envsubst gives kubectl
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 4
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["terminationGracePeriodSeconds"] >= 60
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    (container,) = pod["containers"]
    assert container["image"] == "pytorch/pytorch:2.9.0"
    assert container["resources"]["limits"]["nvidia.com/gpu"] >= 1
    assert {"secretRef": {"name": "imagebench-s3"}} in container["envFrom"]  # credentials: the SDK's variables
    command = " ".join(container["args"])
    assert "--out s3://bucket/imagebench" in command.replace('"', "")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"] for v in pod["volumes"]}
    assert set(mounts) <= volumes and mounts["imagebench"] == container["workingDir"]
    assert "--stage /stage" in command and mounts["stage"] == "/stage"
    assert "--stack python:python" in command  # the pod's image is the stack; the collector runs inside it
    flags = collector_flags(command)
    assert flags and flags <= run_options(), flags - run_options()


def test_the_sbatch_script_parses_and_uses_real_collector_options():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    result = subprocess.run([bash, "-n", str(SBATCH)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = SBATCH.read_text()
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", text, flags=re.M))
    assert directives["ntasks-per-node"] == "1" and int(directives["nodes"]) >= 2
    flags = collector_flags(text)
    assert {"--stack", "--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-backend", "--nproc-per-node", "--out"} <= flags
    assert flags <= run_options(), flags - run_options()
    assert len(re.findall(r"^srun ", text, flags=re.M)) == 2  # one run per node, then one multi-node DDP run
    shlex.split(text, comments=True)  # quotes balance


def _collector_commands_of_the_sbatch(env: dict[str, str], tmp_path) -> list[list[str]]:
    """The collector command lines the sbatch script runs, with srun and scontrol faked: each
    srun runs its command once, as on one node, and a fake python records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    (bin_dir / "srun").write_text('#!/bin/bash\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n')
    (bin_dir / "scontrol").write_text("#!/bin/bash\necho node0\n")
    (bin_dir / "fake-python").write_text(f"#!{sys.executable}\nimport json, sys\n"
                                         f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    for name in ("srun", "scontrol", "fake-python"):
        (bin_dir / name).chmod(0o755)
    full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "node[0-1]",
            "SLURM_NNODES": "2", "SLURM_NODEID": "0", "IMAGEBENCH_OUT": str(tmp_path / "runs"),
            "IMAGEBENCH_REPO": str(ROOT), "IMAGEBENCH_HOST_PYTHON": str(bin_dir / "fake-python"), "TMPDIR": str(tmp_path),
            **env}
    result = subprocess.run(["bash", str(SBATCH)], capture_output=True, text=True, env=full, timeout=60)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_sbatch_script_measures_two_stacks_interleaved_and_each_across_the_nodes(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    a, b = "apptainer:/shared/images/pytorch-2.8.sif", "docker:pytorch/pytorch:2.9.0-cuda12.8-cudnn9-runtime"
    per_node, ddp_a, ddp_b = _collector_commands_of_the_sbatch({"IMAGEBENCH_STACK": a, "IMAGEBENCH_STACK_B": b}, tmp_path)
    assert per_node[:8] == ["-m", "collector", "run", "--stack", a, "--stack", b, "--interleave"]
    assert ddp_a[:5] == ["-m", "collector", "run", "--stack", a] and "--runtime-arg=--network=host" not in ddp_a
    assert ddp_b[:6] == ["-m", "collector", "run", "--stack", b, "--runtime-arg=--network=host"]
    assert ddp_a[ddp_a.index("--rdzv-id") + 1] == "42-1" and ddp_b[ddp_b.index("--rdzv-id") + 1] == "42-2"
    for argv in (per_node, ddp_a, ddp_b):  # every one a command the collector accepts
        args = build_parser().parse_args(argv[2:])
        assert args.command == "run"


def test_the_sbatch_script_keeps_one_labelled_interpreter_stack_by_default(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    per_node, ddp = _collector_commands_of_the_sbatch({"IMAGEBENCH_LABEL": "pytorch-2.9-cu124"}, tmp_path)
    assert per_node[:7] == ["-m", "collector", "run", "--stack", "python:python3", "--label", "pytorch-2.9-cu124"]
    assert "--interleave" not in per_node and ddp[3:7] == ["--stack", "python:python3", "--label", "pytorch-2.9-cu124"]
