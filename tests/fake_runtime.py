"""Fake ``docker``, ``podman`` and ``apptainer`` executables for the stack tests (tests only).

``install(bin_dir, state_dir, config)`` writes the three executables into ``bin_dir``; put
it first on PATH. Each call appends what it was given to ``state_dir/calls.jsonl``
(``prog``, ``argv``, and the values of the variables it was told to pass in). A ``run``
or ``exec`` runs the command with the host Python, as a container would run it with its
own: the mounts are mapped back to their host folders, the variables given by name are
taken from the client's environment, and the interpreter named must be one the image
has (``interpreters``). ``config`` (``state_dir/config.json``) says what the host has:

* ``images``: name -> the description ``image inspect`` prints (Id, RepoTags, ...);
* ``pullable``: images a ``pull`` fetches (then in ``images``);
* ``daemon``: ``ok``, ``down`` (the client's connection error) or ``hang`` (no answer);
* ``gpu_runtime``: False makes ``--gpus``/a CDI GPU device fail as without
  nvidia-container-toolkit; for apptainer, False makes ``--nv`` warn that no driver was found;
* ``oom_on_sigkill``: a worker killed by SIGKILL (not by ``rm``) reads ``State.OOMKilled``
  true, as after the kernel's out-of-memory killer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STATE_ENV = "FAKE_RUNTIME_DIR"
PROGRAMS = ("docker", "podman", "apptainer")
VERSIONS = {"docker": "Docker version 27.3.1, build ce12230", "podman": "podman version 5.2.2",
            "apptainer": "apptainer version 1.3.4"}
# The client variables a container never sees (an image brings its own environment).
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")


def image(name: str, digest: str = "ab" * 32) -> dict[str, Any]:
    """An ``image inspect`` description of ``name``."""
    repo = name.rsplit(":", 1)[0]
    return {"Id": f"sha256:{digest}", "RepoTags": [name], "RepoDigests": [f"{repo}@sha256:{'cd' * 32}"],
            "Created": "2026-11-30T12:00:00.000000000Z", "Size": 7_654_321_000, "Os": "linux", "Architecture": "amd64"}


def install(bin_dir: Path, state_dir: Path, config: dict[str, Any]) -> None:
    """Write the fake executables into ``bin_dir`` and ``config`` into ``state_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    write_config(state_dir, config)
    for prog in PROGRAMS:
        path = bin_dir / prog
        path.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                        f"import fake_runtime\nsys.exit(fake_runtime.main({prog!r}, sys.argv[1:]))\n")
        path.chmod(0o755)


def write_config(state_dir: Path, config: dict[str, Any]) -> None:
    full = {"images": {}, "pullable": {}, "daemon": "ok", "gpu_runtime": True, "oom_on_sigkill": False,
            "interpreters": ["python3"], "labels": {}, **config}
    (state_dir / "config.json").write_text(json.dumps(full))


def calls(state_dir: Path) -> list[dict[str, Any]]:
    """Every recorded call, in order."""
    path = state_dir / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def containers(state_dir: Path) -> list[str]:
    """Names of the containers that exist (running or exited, not removed)."""
    folder = state_dir / "containers"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


# -- the executables ------------------------------------------------------------------------
def main(prog: str, argv: list[str]) -> int:
    state = Path(os.environ[STATE_ENV])
    config = json.loads((state / "config.json").read_text())
    passed = _passed_names(prog, argv)
    _append(state / "calls.jsonl", {"prog": prog, "argv": argv, "env": {k: os.environ.get(k) for k in passed}})
    if argv[:1] == ["--version"]:
        print(VERSIONS[prog])
        return 0
    if prog == "apptainer":
        return _apptainer(argv, config)
    if config["daemon"] == "hang":
        time.sleep(3600)
    if config["daemon"] == "down":
        what = "Podman" if prog == "podman" else "Docker daemon at unix:///var/run/docker.sock"
        print(f"Cannot connect to the {what}. Is the docker daemon running?", file=sys.stderr)
        return 1
    handlers = {("image", "inspect"): _image_inspect, ("pull",): _pull, ("run",): _run,
                ("container", "inspect"): _container_inspect, ("rm",): _rm}
    for words, handler in handlers.items():
        if tuple(argv[:len(words)]) == words:
            return handler(prog, argv[len(words):], config, state)
    print(f"fake {prog}: unknown command {argv}", file=sys.stderr)
    return 2


def _passed_names(prog: str, argv: list[str]) -> list[str]:
    if prog == "apptainer":
        return sorted(k for k in os.environ if k.startswith("APPTAINERENV_"))
    return sorted(a.split("=", 1)[1] for a in argv if a.startswith("--env=") and "=" not in a.split("=", 1)[1])


def _append(path: Path, entry: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def _image_inspect(prog: str, args: list[str], config: dict[str, Any], state: Path) -> int:
    name = args[-1]
    if name not in config["images"]:
        print(f"Error: {name}: image not known" if prog == "podman" else f"Error response from daemon: No such image: {name}",
              file=sys.stderr)
        return 125 if prog == "podman" else 1
    print(json.dumps([config["images"][name]], indent=4))
    return 0


def _pull(prog: str, args: list[str], config: dict[str, Any], state: Path) -> int:
    name = args[-1]
    if name not in config["pullable"]:
        print(f"Error response from daemon: pull access denied for {name}", file=sys.stderr)
        return 1
    config["images"][name] = config["pullable"][name]
    (state / "config.json").write_text(json.dumps(config))
    print(f"Status: Downloaded newer image for {name}")
    return 0


def _split_run(args: list[str]) -> tuple[list[str], str, list[str]]:
    """(flags, image, command) of ``run [flags] IMAGE COMMAND...`` (flags given as one word each)."""
    index = next(i for i, a in enumerate(args) if not a.startswith("-"))
    return args[:index], args[index], args[index + 1:]


def _flag_values(flags: list[str], name: str) -> list[str]:
    return [f.split("=", 1)[1] for f in flags if f.startswith(name + "=")]


def _container_env(flags: list[str], env_flag: str, mounts: dict[str, str]) -> dict[str, str]:
    env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    for given in _flag_values(flags, env_flag):
        name, eq, value = given.partition("=")
        if eq:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
    return {k: _host_path(v, mounts) for k, v in env.items()}


def _host_path(text: str, mounts: dict[str, str]) -> str:
    for inside, outside in mounts.items():
        if text == inside or text.startswith(inside + "/"):
            return outside + text[len(inside):]
    return text


def _mounts(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        source, target, *_ = value.split(":")
        out[target] = source
    return out


def _run(prog: str, args: list[str], config: dict[str, Any], state: Path) -> int:
    flags, name_of_image, command = _split_run(args)
    if name_of_image not in config["images"]:
        print(f"Error: {name_of_image}: image not known" if prog == "podman"
              else f"docker: Error response from daemon: No such image: {name_of_image}", file=sys.stderr)
        return 125
    wants_gpu = _flag_values(flags, "--gpus") or any(v.startswith("nvidia.com/gpu") for v in _flag_values(flags, "--device"))
    if wants_gpu and not config["gpu_runtime"]:
        print("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all" if prog == "podman" else
              'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
              file=sys.stderr)
        return 125
    if command[0] not in config["interpreters"]:
        print(f'docker: Error response from daemon: failed to create task: exec: "{command[0]}": '
              "executable file not found in $PATH: unknown.", file=sys.stderr)
        return 127
    mounts = _mounts(_flag_values(flags, "--volume"))
    name = _flag_values(flags, "--name")[0]
    env = _container_env(flags, "--env", mounts)
    workdir = _host_path((_flag_values(flags, "--workdir") or ["/"])[0], mounts)
    return _contain(state, name, [sys.executable, *command[1:]], env, workdir, config["oom_on_sigkill"])


def _contain(state: Path, name: str, command: list[str], env: dict[str, str], cwd: str, oom_on_sigkill: bool) -> int:
    """Run ``command`` as container ``name``: its state under ``state/containers``, signals passed on."""
    folder = state / "containers"
    folder.mkdir(exist_ok=True)
    child = subprocess.Popen(command, env=env, cwd=cwd)
    (folder / f"{name}.json").write_text(json.dumps({"pid": child.pid, "State": {"Status": "running"}}))
    for signum in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _: child.send_signal(s))
    code = child.wait()
    exit_code = 128 - code if code < 0 else code
    if (folder / f"{name}.removed").exists():
        return exit_code
    oom = oom_on_sigkill and code == -signal.SIGKILL
    (folder / f"{name}.json").write_text(json.dumps({"pid": child.pid, "State": {
        "Status": "exited", "ExitCode": exit_code, "OOMKilled": oom}}))
    return exit_code


def _container_inspect(prog: str, args: list[str], config: dict[str, Any], state: Path) -> int:
    path = state / "containers" / f"{args[-1]}.json"
    if not path.exists():
        print(f"Error: No such container: {args[-1]}", file=sys.stderr)
        return 1
    print(json.dumps([{"Name": args[-1], **json.loads(path.read_text())}]))
    return 0


def _rm(prog: str, args: list[str], config: dict[str, Any], state: Path) -> int:
    name = args[-1]
    path = state / "containers" / f"{name}.json"
    if not path.exists():
        print(f"Error: No such container: {name}", file=sys.stderr)
        return 1
    (state / "containers" / f"{name}.removed").write_text("")
    info = json.loads(path.read_text())
    if info["State"]["Status"] == "running" and "--force" in args:
        try:
            os.kill(info["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    path.unlink()
    print(name)
    return 0


def _apptainer(argv: list[str], config: dict[str, Any]) -> int:
    if argv[:2] == ["inspect", "--json"]:
        print(json.dumps({"data": {"attributes": {"labels": config["labels"]}}}))
        return 0
    if argv[:1] != ["exec"]:
        print(f"fake apptainer: unknown command {argv}", file=sys.stderr)
        return 255
    flags, sif, command = _split_run(argv[1:])
    if "--nv" in flags and not config["gpu_runtime"]:
        print("WARNING: Could not find any nv files on this host!", file=sys.stderr)
    if command[0] not in config["interpreters"]:
        print(f"FATAL:   \"{command[0]}\": executable file not found in $PATH", file=sys.stderr)
        return 255
    mounts = _mounts(_flag_values(flags, "--bind"))
    env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    env.update({k[len("APPTAINERENV_"):]: _host_path(v, mounts) for k, v in os.environ.items() if k.startswith("APPTAINERENV_")})
    os.chdir(_host_path((_flag_values(flags, "--pwd") or ["/"])[0], mounts))
    os.execve(sys.executable, [sys.executable, *command[1:]], env)
    return 255  # not reached
