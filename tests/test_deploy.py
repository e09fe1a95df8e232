"""The fleet jobs under deploy/: the Kubernetes Job parses and has the fields it relies on, the
sbatch script passes `bash -n`, and every collector option both use exists."""

from __future__ import annotations

import re
import shlex
import shutil
import string
import subprocess

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
    assert {"--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-backend", "--nproc-per-node", "--out"} <= flags
    assert flags <= run_options(), flags - run_options()
    assert len(re.findall(r"^srun ", text, flags=re.M)) == 2  # one run per node, then one multi-node DDP run
    shlex.split(text, comments=True)  # quotes balance
