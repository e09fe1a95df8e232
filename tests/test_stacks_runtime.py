"""Stacks that are images, without a container runtime: fake ``docker``, ``podman`` and ``apptainer``
on PATH (``tests/fake_runtime.py``) record their command lines and run the worker with the host
Python. The command lines, mounts, pairing, image identity and every failure the launcher names
are checked as a user meets them; one real round trip runs where a real runtime and an image exist."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fake_runtime
from conftest import ROOT
from runformat import schema as s
from runformat.archive import read_table

IMAGE_A = "pytorch/pytorch:2.9.0-cuda12.4"
IMAGE_B = "pytorch/pytorch:2.8.0-cuda12.4"
ENV_NAMES = ["IMAGEBENCH_EXTRA_WORKLOADS", "IMAGEBENCH_PRELOAD", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH",
             "PYTHONUNBUFFERED"]


class Fake:
    """The fake runtimes of one test: where they are, what they recorded, how to run the CLI."""

    def __init__(self, tmp_path: Path, run_cli) -> None:
        self.bin = tmp_path / "bin"
        self.state = tmp_path / "state"
        self.out = tmp_path / "runs"
        self.tmp_path = tmp_path
        self._run_cli = run_cli
        shadow = tmp_path / "shadow" / "torch"
        shadow.mkdir(parents=True)
        # The collector's own process must never import torch: the host needs none.
        (shadow / "__init__.py").write_text("raise ImportError('the collector imported torch outside a worker')\n")
        self.env = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}",
            fake_runtime.STATE_ENV: str(self.state),
            "IMAGEBENCH_EXTRA_WORKLOADS": "tests.fault_workloads",
            "IMAGEBENCH_RUNTIME_TIMEOUT": "30",
        }

    def install(self, **config) -> "Fake":
        fake_runtime.install(self.bin, self.state, config)
        return self

    def run(self, *args: str, timeout: float = 300, **env: str):
        return self._run_cli("collector", "run", *args, "--out", str(self.out), env={**self.env, **env}, timeout=timeout)

    def calls(self, prog: str | None = None, command: str | None = None) -> list[dict]:
        return [c for c in fake_runtime.calls(self.state)
                if (prog is None or c["prog"] == prog) and (command is None or c["argv"][:1] == [command])]


@pytest.fixture
def fake(tmp_path, run_cli):
    return Fake(tmp_path, run_cli)


def folders(result) -> list[Path]:
    return [Path(line) for line in result.stdout.strip().splitlines() if line.startswith("/")]


def environment(folder: Path) -> dict[tuple[str, str], str]:
    env, _ = read_table(folder / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    return {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}


def cases(folder: Path) -> list[dict]:
    table, _ = read_table(folder / s.CASES_FILE, s.CASES_FILE)
    return table.to_pylist()


def one_line_error(result, *parts: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for part in parts:
        assert part in lines[0], lines[0]


def worker_argv(image: str, env_names: list[str], flags: list[str], interpreter: str = "python3") -> list[str]:
    return ["run", "--interactive", "--name=<worker>", "--label=imagebench.worker=1", "--init", "--pull=never", *flags,
            f"--volume={ROOT}:/imagebench:ro", "--workdir=/imagebench", *[f"--env={n}" for n in env_names],
            image, interpreter, "-m", "collector.worker"]


def named(argv: list[str]) -> list[str]:
    """``argv`` with its container name masked (each worker's is unique)."""
    return [re.sub(r"^--name=imagebench-\d+-[0-9a-f]{6}-\d+$", "--name=<worker>", a) for a in argv]


# -- runs through the fake runtimes ---------------------------------------------------------------
def test_two_docker_images_interleaved_are_paired_and_identified(fake):
    fake.install(images={IMAGE_A: fake_runtime.image(IMAGE_A, "a1" * 32), IMAGE_B: fake_runtime.image(IMAGE_B, "b2" * 32)})
    result = fake.run("--stack", f"docker:{IMAGE_A}", "--stack", f"docker:{IMAGE_B}", "--env", "IMAGEBENCH_TEST_NOTE=b",
                      "--interleave", "--suite", "smoke", "--only", "fault_ok", "--processes", "2")
    assert result.returncode == 0, result.stderr
    a, b = folders(result)
    # The label defaults to repository:tag, sanitised: one folder per image version.
    assert (a.parent.name, b.parent.name) == ("pytorch-pytorch-2.9.0-cuda12.4", "pytorch-pytorch-2.8.0-cuda12.4")
    groups, starts = set(), []
    for folder, image, digest in ((a, IMAGE_A, "a1"), (b, IMAGE_B, "b2")):
        env = environment(folder)
        assert env[("container", "runtime")] == "docker"
        assert env[("container", "runtime_version")] == fake_runtime.VERSIONS["docker"]
        assert env[("container", "image")] == image and env[("run", "stack")] == f"docker:{image}"
        assert env[("container", "image_id")] == f"sha256:{digest * 32}"
        assert env[("container", "image_digest")] == f"pytorch/pytorch@sha256:{'cd' * 32}"
        assert env[("container", "image_created")] == "2026-11-30T12:00:00.000000000Z"
        assert env[("container", "image_size_bytes")] == "7654321000"
        flags = env[("container", "run_flags")]
        assert f"--volume={ROOT}:/imagebench:ro" in flags and "--gpus=all --ipc=host --network=none" in flags
        assert env[("torch", "version")]  # the in-container fingerprint, as for any stack
        assert env[("run", "status")] == "complete" and "python" not in {k for sec, k in env if sec == "run"}
        groups.add(env[("run", "interleave_group")])
        assert {r["status"] for r in cases(folder)} == {"ok"}
        starts += [(r["started_at"], folder, r["round"], r["position"]) for r in cases(folder)]
    assert json.loads(environment(b)[("run", "stack_env")]) == {"IMAGEBENCH_TEST_NOTE": "b"}
    assert ("run", "stack_env") not in environment(a)
    assert len(groups) == 1
    order = sorted(starts)
    for _, folder, rnd, pos in order:  # A B in even rounds, B A in odd ones
        assert pos == (0 if (folder == a) == (rnd % 2 == 0) else 1)
    runs = fake.calls("docker", "run")
    assert fake.calls("docker", "pull") == []  # never pulled without --pull
    for call in runs:
        image = next(x for x in call["argv"] if x in (IMAGE_A, IMAGE_B))
        names = sorted(a[len("--env="):] for a in call["argv"] if a.startswith("--env="))
        extra = [n for n in names if n not in ENV_NAMES]
        assert extra in ([], ["IMAGEBENCH_FORK_SERVER"], ["IMAGEBENCH_TEST_NOTE"]) and (image == IMAGE_B) == ("IMAGEBENCH_TEST_NOTE" in extra)
        assert named(call["argv"]) == worker_argv(image, names, ["--gpus=all", "--ipc=host", "--network=none"])
        assert call["env"]["PYTHONPATH"] == "/imagebench"  # the worker sees the checkout where it is mounted
        assert all("=" not in a[len("--env="):] for a in call["argv"] if a.startswith("--env="))  # no value on the line
    assert {next(x for x in c["argv"] if x in (IMAGE_A, IMAGE_B)) for c in runs} == {IMAGE_A, IMAGE_B}
    assert len(runs) >= 2 + 2 * 2  # a probe per stack, a container per worker process (not per case)
    assert fake_runtime.containers(fake.state) == []  # every container removed


def test_podman_takes_runtime_args_an_interpreter_and_pulls_only_when_asked(fake):
    image = "localhost/torch:cpu"
    fake.install(pullable={image: fake_runtime.image(image)}, interpreters=["/opt/venv/bin/python"])
    result = fake.run("--stack", f"podman:{image}", "--runtime-arg=--network=host", "--runtime-arg=--shm-size=2g",
                      "--runtime-arg=--device=/dev/fuse", "--interpreter", "/opt/venv/bin/python", "--label", "podman-cpu",
                      "--pull", "--device", "cpu", "--suite", "smoke", "--only", "fault_ok[i=0]", "--processes", "1",
                      "--no-doctor")
    assert result.returncode == 0, result.stderr
    (folder,) = folders(result)
    assert folder.parent.name == "podman-cpu"
    assert [c["argv"] for c in fake.calls("podman", "pull")] == [["pull", image]]
    assert fake.calls()[0]["argv"] == ["pull", image]  # before the image was inspected or run
    call = fake.calls("podman", "run")[-1]
    names = sorted(a[len("--env="):] for a in call["argv"] if a.startswith("--env="))
    # --device cpu: no GPUs; --network=host replaces none; --shm-size replaces --ipc=host; --device adds
    flags = ["--network=host", "--shm-size=2g", "--device=/dev/fuse"]
    assert named(call["argv"]) == worker_argv(image, names, flags, interpreter="/opt/venv/bin/python")
    env = environment(folder)
    assert json.loads(env[("run", "runtime_args")]) == flags and env[("run", "interpreter")] == "/opt/venv/bin/python"
    assert {r["status"] for r in cases(folder)} == {"ok"}


def test_apptainer_runs_a_sif_with_nv_and_identifies_it_by_its_content(fake):
    sif = fake.tmp_path / "images" / "torch-2.9.sif"
    sif.parent.mkdir()
    sif.write_bytes(b"SIF_MAGIC fake image " * 1000)
    fake.install(labels={"org.label-schema.build-date": "Saturday_30_November_2026_12:00:00_UTC"})
    result = fake.run("--stack", f"apptainer:{sif}", "--suite", "smoke", "--only", "fault_ok[i=0]", "--processes", "1",
                      "--no-doctor")
    assert result.returncode == 0, result.stderr
    (folder,) = folders(result)
    assert folder.parent.name == "torch-2.9"
    call = fake.calls("apptainer", "exec")[-1]
    assert call["argv"] == ["exec", "--nv", "--cleanenv", "--no-home", f"--bind={ROOT}:/imagebench:ro", "--pwd=/imagebench",
                            str(sif), "python3", "-m", "collector.worker"]
    assert call["env"]["APPTAINERENV_PYTHONPATH"] == "/imagebench"
    env = environment(folder)
    assert env[("container", "image_id")] == "sha256:" + hashlib.sha256(sif.read_bytes()).hexdigest()
    assert env[("container", "image_size_bytes")] == str(sif.stat().st_size)
    assert env[("container", "image_created")] == "Saturday_30_November_2026_12:00:00_UTC"
    assert {r["status"] for r in cases(folder)} == {"ok"}


def test_a_container_killed_or_exiting_mid_case_fails_that_case_only(fake):
    fake.install(images={IMAGE_A: fake_runtime.image(IMAGE_A), IMAGE_B: fake_runtime.image(IMAGE_B)}, oom_on_sigkill=True)
    result = fake.run("--stack", f"docker:{IMAGE_A}", "--stack", f"docker:{IMAGE_B}", "--env", "IMAGEBENCH_TEST_DIE=1",
                      "--interleave", "--device", "cpu", "--suite", "smoke", "--only", "fault_die", "--only", "fault_ok",
                      "--processes", "1", "--no-doctor")
    assert result.returncode == 0, result.stderr
    a, b = folders(result)
    assert {r["case_id"]: r["status"] for r in cases(a)} == {
        "fault_die[how=kill]": "ok", "fault_die[how=exit]": "ok", "fault_ok[i=0]": "ok", "fault_ok[i=1]": "ok"}
    by_id = {r["case_id"]: r for r in cases(b)}
    assert {k: r["status"] for k, r in by_id.items()} == {
        "fault_die[how=kill]": "failed", "fault_die[how=exit]": "failed", "fault_ok[i=0]": "ok", "fault_ok[i=1]": "ok"}
    assert by_id["fault_die[how=kill]"]["error"].startswith(
        "worker container was killed by the kernel's out-of-memory killer (the container's State.OOMKilled is true")
    assert by_id["fault_die[how=exit]"]["error"].startswith("worker container exited with code 3")
    assert fake_runtime.containers(fake.state) == []


def test_a_docker_run_resumes_in_its_own_image_with_its_own_settings(fake):
    fake.install(images={IMAGE_A: fake_runtime.image(IMAGE_A)})
    first = fake.run("--stack", f"docker:{IMAGE_A}", "--env", "IMAGEBENCH_TEST_NOTE=kept", "--runtime-arg=--network=host",
                     "--device", "cpu", "--suite", "smoke", "--only", "fault_ok[i=0]", "--processes", "1", "--no-doctor")
    assert first.returncode == 0, first.stderr
    (folder,) = folders(first)
    (folder / s.SAMPLES_FILE).unlink()  # its ok attempt lost its samples: measured again on resume
    before = len(fake.calls("docker", "run"))
    resumed = fake.run("--resume", str(folder), "--no-doctor")
    assert resumed.returncode == 0, resumed.stderr
    again = fake.calls("docker", "run")[before:]
    assert again and all(IMAGE_A in c["argv"] and "--network=host" in c["argv"] and "--gpus=all" not in c["argv"]
                         for c in again)
    assert all(c["env"].get("IMAGEBENCH_TEST_NOTE") == "kept" for c in again)
    env = environment(folder)
    assert env[("run", "resumes")] == "1" and env[("run", "status")] == "complete"
    assert {r["status"] for r in cases(folder)} == {"ok"}
    fake.install(images={IMAGE_A: fake_runtime.image(IMAGE_A, "ff" * 32)})  # the tag now names another image
    (folder / s.SAMPLES_FILE).unlink()
    refused = fake.run("--resume", str(folder), "--no-doctor")
    assert refused.returncode == 2 and "container.image_id" in refused.stderr and "another stack or machine" in refused.stderr


def test_list_asks_the_image_for_its_cases(fake, run_cli):
    fake.install(images={IMAGE_A: fake_runtime.image(IMAGE_A)})
    result = run_cli("collector", "list", "--stack", f"docker:{IMAGE_A}", "--suite", "smoke", "--only", "fault_ok",
                     "--json", env=fake.env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert [c["case_id"] for c in json.loads(result.stdout)] == ["fault_ok[i=0]", "fault_ok[i=1]"]
    assert len(fake.calls("docker", "run")) == 1 and fake_runtime.containers(fake.state) == []


@pytest.mark.parametrize("config, args, parts", [
    ({"images": {}}, [f"docker:{IMAGE_A}"],
     ["--stack docker:pytorch/pytorch:2.9.0-cuda12.4: the image is not on this host (Error response from daemon: No such image",
      f"pull it first (docker pull {IMAGE_A}) or add --pull"]),
    ({"images": {}}, [f"podman:{IMAGE_A}"], ["the image is not on this host (Error: pytorch/pytorch:2.9.0-cuda12.4: image not known)"]),
    ({"images": {}}, [f"docker:{IMAGE_A}", "--pull"], [f"docker pull {IMAGE_A} failed: Error response from daemon: pull access denied"]),
    ({"gpu_runtime": False}, [f"docker:{IMAGE_A}"],
     ['docker cannot give the container a GPU (docker: Error response from daemon: could not select device driver "" with '
      "capabilities: [[gpu]].); install nvidia-container-toolkit and restart the daemon, or measure the CPU with --device cpu"]),
    ({"gpu_runtime": False}, [f"podman:{IMAGE_A}"],
     ["podman cannot give the container a GPU (Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all); "
      "generate its CDI spec (nvidia-ctk cdi generate"]),
    ({"daemon": "down"}, [f"docker:{IMAGE_A}"],
     ["the docker daemon does not answer (Cannot connect to the Docker daemon at unix:///var/run/docker.sock"]),
    ({"daemon": "hang"}, [f"docker:{IMAGE_A}"],
     [f"--stack docker:{IMAGE_A}: docker did not answer within 1 s (docker image inspect); is its daemon running?"]),
    ({}, [f"docker:{IMAGE_A}", "--interpreter", "/usr/bin/python9"],
     ['the image cannot run /usr/bin/python9 (docker: Error response from daemon: failed to create task: exec: "/usr/bin/python9"',
      "give the image's Python with --interpreter PATH"]),
], ids=["no-image", "podman-no-image", "pull-denied", "no-gpu-runtime", "podman-no-cdi", "daemon-down", "daemon-hangs",
        "no-interpreter"])
def test_runtime_failures_are_one_line_and_record_nothing(fake, config, args, parts):
    full = {"images": {IMAGE_A: fake_runtime.image(IMAGE_A)}, **config}
    fake.install(**full)
    started = time.monotonic()
    result = fake.run("--stack", *args, "--suite", "smoke", "--only", "fault_ok", "--processes", "1", "--no-doctor",
                      IMAGEBENCH_RUNTIME_TIMEOUT="1")
    one_line_error(result, *parts)
    assert time.monotonic() - started < 60
    assert not fake.out.exists() or not any(fake.out.rglob("*.parquet"))
    if "--pull" not in args:
        assert fake.calls(command="pull") == []
    assert fake_runtime.containers(fake.state) == []


def test_apptainer_without_a_driver_for_nv_is_one_line(fake):
    sif = fake.tmp_path / "torch.sif"
    sif.write_bytes(b"SIF")
    fake.install(gpu_runtime=False)
    result = fake.run("--stack", f"apptainer:{sif}", "--suite", "smoke", "--only", "fault_ok", "--processes", "1", "--no-doctor")
    one_line_error(result, f"--stack apptainer:{sif}: apptainer found no NVIDIA driver on this host for --nv "
                           "(WARNING: Could not find any nv files on this host!); measure the CPU with --device cpu")


def test_docker_absent_is_one_line(fake, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path = f"{empty}{os.pathsep}{Path(sys.executable).parent}"
    if shutil.which("docker", path=path):
        pytest.skip("docker is installed beside this Python")
    result = fake.run("--stack", f"docker:{IMAGE_A}", "--suite", "smoke", "--no-doctor", PATH=path)
    one_line_error(result, f"--stack docker:{IMAGE_A}: docker is not installed here (no 'docker' on PATH)")


@pytest.mark.parametrize("args, message", [
    (["--stack", "lxc:foo"], "--stack 'lxc:foo' is not KIND:TARGET with KIND one of python, docker, podman, apptainer"),
    (["--stack", "docker:"], "--stack 'docker:' names no image"),
    (["--runtime-arg=--gpus=all", "--stack", "docker:x"], "--runtime-arg '--gpus=all' must follow the --stack it applies to"),
    (["--python", sys.executable, "--runtime-arg=--gpus=all"], f"--runtime-arg '--gpus=all' follows python:{sys.executable}, which is not an image stack"),
    (["--stack", "docker:x", "--runtime-arg=gpus"], "--runtime-arg 'gpus' is not a flag"),
    (["--stack", "docker:x", "--image", "y"], "--image names the image of a run recorded inside it; --stack docker:x records its own"),
    (["--pull"], "--pull is for docker: and podman: stacks; none was given"),
    (["--stack", "docker:x", "--nnodes", "2", "--rdzv-endpoint", "node0:29400"], "--nnodes 2 needs the network"),
    (["--stack", "apptainer:/no/such.sif"], "--stack 'apptainer:/no/such.sif': no such image file"),
    (["--stack", "docker:a", "--stack", "docker:b", "--label", "x"], "give one --label per --stack (2 --stack, 1 --label)"),
    (["--resume", "somewhere", "--stack", "docker:a"], "--resume takes the run's own settings; do not combine it with --stack"),
])
def test_stack_usage_errors_name_the_flag(fake, monkeypatch, capsys, args, message):
    from collector.cli import main

    fake.install()
    monkeypatch.setenv("PATH", fake.env["PATH"])
    assert main(["run", *args, "--out", str(fake.out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


# -- the launchers' command lines, without a process --------------------------------------------
def test_default_flags_and_what_replaces_them():
    from collector.stacks import Stack, launcher_for

    def flags(kind, *given, device="auto"):
        return launcher_for(Stack("img", kind=kind, runtime_args=given), device=device).flags()

    assert flags("docker") == ["--gpus=all", "--ipc=host", "--network=none"]
    assert flags("docker", "--gpus=device=1", "--network=host") == ["--ipc=host", "--gpus=device=1", "--network=host"]
    assert flags("docker", "--shm-size=16g") == ["--gpus=all", "--network=none", "--shm-size=16g"]
    assert flags("docker", device="cpu") == ["--ipc=host", "--network=none"]
    assert flags("podman") == ["--device=nvidia.com/gpu=all", "--ipc=host", "--network=none"]
    assert flags("podman", "--device=/dev/fuse") == ["--device=nvidia.com/gpu=all", "--ipc=host", "--network=none", "--device=/dev/fuse"]
    assert flags("podman", "--device=nvidia.com/gpu=0") == ["--ipc=host", "--network=none", "--device=nvidia.com/gpu=0"]
    assert flags("apptainer") == ["--nv"] and flags("apptainer", device="cpu") == []
    assert flags("apptainer", "--nvccli") == ["--nv", "--nvccli"]


def test_a_container_worker_gets_variables_by_name_and_the_host_python_its_own_environment(monkeypatch):
    from collector.stacks import Stack, launcher_for

    monkeypatch.setenv("IMAGEBENCH_TORCHRUN_ARGS", "--nnodes 1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-in-a-container")
    monkeypatch.setenv("IMAGEBENCH_CACHE", "/host/only")
    argv, env = launcher_for(Stack("img:1", kind="docker", env=(("NVIDIA_TF32_OVERRIDE", "0"),))).command(
        {"NVIDIA_TF32_OVERRIDE": "0"}, "imagebench-1")
    names = [a[len("--env="):] for a in argv if a.startswith("--env=")]
    assert names == sorted(["CUDA_VISIBLE_DEVICES", "IMAGEBENCH_TORCHRUN_ARGS", "NVIDIA_TF32_OVERRIDE", "PYTHONDONTWRITEBYTECODE",
                            "PYTHONPATH", "PYTHONUNBUFFERED"])
    assert env["NVIDIA_TF32_OVERRIDE"] == "0" and env["PYTHONPATH"] == "/imagebench"
    python_argv, python_env = launcher_for(Stack(sys.executable)).command({"NVIDIA_TF32_OVERRIDE": "0"}, "unused")
    assert python_argv == [sys.executable, "-m", "collector.worker"]
    assert python_env["AWS_SECRET_ACCESS_KEY"] == "never-in-a-container"  # a host interpreter runs in the host's
    assert python_env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT) and python_env["IMAGEBENCH_PARENT_PID"] == str(os.getpid())


def test_repository_tag_names_the_default_label():
    from collector.stacks.docker import repository_tag

    assert repository_tag("pytorch/pytorch:2.9.0-cuda12.4") == "pytorch/pytorch:2.9.0-cuda12.4"
    assert repository_tag("nvcr.io/nvidia/pytorch") == "nvcr.io/nvidia/pytorch:latest"
    assert repository_tag("localhost:5000/torch") == "localhost:5000/torch:latest"
    assert repository_tag("localhost:5000/torch@sha256:" + "ab" * 32) == "localhost:5000/torch@sha256:abababababab"


# -- a real runtime, where there is one -----------------------------------------------------------
def test_a_real_docker_round_trip(run_cli, tmp_path):
    """One interleaved round through a real docker with an image that has torch and pyarrow
    (``IMAGEBENCH_TEST_IMAGE``); skipped, saying why, where either is missing."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker on this machine: the fake-runtime tests above cover the launcher")
    image = os.environ.get("IMAGEBENCH_TEST_IMAGE")
    if not image:
        pytest.skip("docker is installed but IMAGEBENCH_TEST_IMAGE names no image with torch and pyarrow to run")
    if subprocess.run([docker, "image", "inspect", image], capture_output=True, timeout=60).returncode != 0:
        pytest.skip(f"IMAGEBENCH_TEST_IMAGE {image} is not on this host (docker pull it first)")
    result = run_cli("collector", "run", "--stack", f"docker:{image}", "--label", "real-a", "--stack", f"docker:{image}",
                     "--label", "real-b", "--interleave", "--device", "cpu", "--suite", "smoke", "--only", "matmul*n=64*",
                     "--processes", "1", "--no-doctor", "--out", str(tmp_path / "runs"), timeout=600)
    assert result.returncode == 0, result.stderr
    for folder in folders(result):
        env = environment(folder)
        assert env[("container", "runtime")] == "docker" and env[("container", "image_id")].startswith("sha256:")
        assert {r["status"] for r in cases(folder)} == {"ok"}
