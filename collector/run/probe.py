"""Asking a stack what it is: its runtime's view of the image, then a worker's device and fingerprint.

The runtime is asked first (``Launcher.check``: the runtime installed, its daemon
answering, the image on this host), so those failures read as one line before any worker
starts. The probe's worker then reports the device and the in-stack fingerprint, to which
the runtime's facts about the image (``container.*``) are added.
"""

from __future__ import annotations

from pathlib import Path

from collector.fingerprint import collect_source_commit
from collector.run.state import RunError, RunOptions
from collector.run.worker_ipc import Worker, WorkerDied, WorkerTimeout
from collector.stacks import Launcher, StackError
from collector.workloads import DeviceInfo
from runformat.redact import redact_entry
from runformat.schema import EnvironmentEntry

PROBE_TIMEOUT_S = 300.0


def check_stacks(options: RunOptions) -> list[Launcher]:
    """Each stack's launcher, checked (runtime, daemon, image); a failure is a ``RunError``."""
    launchers = []
    for stack in options.stacks:
        launcher = options.launcher(stack)
        try:
            launcher.check()
        except StackError as e:
            raise RunError(str(e)) from None
        launchers.append(launcher)
    return launchers


def probe(launcher: Launcher, options: RunOptions, log_path: Path) -> tuple[DeviceInfo, list[EnvironmentEntry]]:
    """Ask a worker of the stack for device facts and the fingerprint."""
    worker = Worker(launcher, log_path)
    try:
        worker.wait_ready(PROBE_TIMEOUT_S)
        image = launcher.image_name() or options.image
        worker.send({"cmd": "probe", "device": options.device, "image": image, "argv": options.argv})
        reply = worker.receive(PROBE_TIMEOUT_S)
    except WorkerDied as e:
        worker.kill()
        raise RunError(launcher.start_failure(worker.stderr_tail())
                       or f"the stack {launcher.where} could not start a worker: {e}; it needs torch and pyarrow") from None
    except WorkerTimeout:
        worker.kill()
        raise RunError(f"the stack {launcher.where} did not answer the probe in {PROBE_TIMEOUT_S:.0f} s") from None
    except BaseException:  # interrupted: stop the worker now rather than wait for it
        worker.kill()
        raise
    worker.close()
    launcher.close()  # its container removed before the run goes on (or ``collector list`` exits)
    if reply.get("event") == "error":
        error = str(reply["error"])
        if error.startswith("ValueError: "):
            raise RunError(error[len("ValueError: "):])
        raise RunError(f"the stack {launcher.where} could not start a worker ({error}); it needs torch and pyarrow")
    device = DeviceInfo.from_json(reply["device"])
    if options.device != "cpu" and not device.is_cuda:
        gpu_refused = launcher.start_failure(worker.stderr_tail())  # e.g. apptainer's --nv found no driver
        if gpu_refused:
            raise RunError(gpu_refused)
    return device, with_runtime_facts([EnvironmentEntry(*row) for row in reply["fingerprint"]], launcher)


def with_runtime_facts(entries: list[EnvironmentEntry], launcher: Launcher) -> list[EnvironmentEntry]:
    """The in-stack fingerprint with the runtime's facts about the image (they win over the
    worker's for the same key) and the checkout's commit, which an image without git cannot read."""
    outside = [EnvironmentEntry(s, k, redact_entry(s, k, v)) for s, k, v in launcher.identity()]
    if not any((e.section, e.key) == ("imagebench", "git_commit") for e in entries):
        commit = collect_source_commit()
        if commit:
            outside.append(EnvironmentEntry("imagebench", "git_commit", commit))
    keys = {(e.section, e.key) for e in outside}
    return [e for e in entries if (e.section, e.key) not in keys] + outside
