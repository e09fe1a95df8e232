"""``collector``: record runs (``run``), list a suite's cases (``list``), print the fingerprint.

Plain argparse: the collector runs inside the stack under test and needs nothing beyond
pyarrow (rich is used for the progress bar and tables when it is installed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from collector import __version__
from runformat.options import folder_path, positive_float, positive_int
from runformat.terminal import inert

EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class CLIError(Exception):
    """Bad input: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line naming the flag (no usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split()).removeprefix("argument ")  # "--processes: must be ..."
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _AddStack(argparse.Action):
    """``--stack KIND:TARGET``, or ``--python PATH`` (the same as ``--stack python:PATH``): one
    stack more, in the order given; the ``--env``, ``--runtime-arg`` and ``--interpreter``
    after it apply to it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, option: Any = None) -> None:
        spec = f"python:{value}" if option == "--python" else str(value)
        namespace.stack = [*namespace.stack, (spec, option)]


class _ForStack(argparse.Action):
    """A setting of the stack given before it: ``--env NAME=VALUE`` (or the only stack),
    ``--runtime-arg ARG`` and ``--interpreter PATH`` (an image stack)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, option: Any = None) -> None:
        text = str(value)
        if option == "--env":
            name, eq, _ = text.partition("=")
            if not eq or not name or not name.replace("_", "a").isalnum():
                raise CLIError(f"--env {value!r} is not NAME=VALUE")
        elif not namespace.stack:
            raise CLIError(f"{option} {text!r} must follow the --stack it applies to")
        elif option == "--runtime-arg" and not text.startswith("-"):
            raise CLIError(f"--runtime-arg {text!r} is not a flag; give it with its value, e.g. --runtime-arg=--gpus=device=0")
        index = max(0, len(namespace.stack) - 1)
        setattr(namespace, self.dest, [*getattr(namespace, self.dest), (index, text)])


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="collector", description="Record benchmark runs of this PyTorch stack.")
    parser.add_argument("--version", action="version", version=f"imagebench collector {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="measure a suite and record a run under --out/<label>/<run_id>/")
    run.add_argument("--suite", help="suite to run (default: cpu without a GPU, standard with one)")
    run.add_argument("--label", action="append", default=[], help="label the run is filed under (default: an image's repository:tag, else torch-<version>-<cuda|cpu>); one per stack")
    run.add_argument("--stack", action=_AddStack, default=[], metavar="KIND:TARGET",
                     help="a stack to measure: python:PATH, docker:IMAGE, podman:IMAGE or apptainer:FILE.sif; repeatable")
    run.add_argument("--python", action=_AddStack, dest="stack", metavar="PATH", help="the same as --stack python:PATH; repeatable")
    run.add_argument("--interleave", action="store_true", help="with several stacks, alternate cases between them (A B, then B A)")
    run.add_argument("--runtime-arg", action=_ForStack, default=[], metavar="ARG",
                     help="a flag for the container runtime of the preceding image stack, replacing a default of its name "
                          "(e.g. --runtime-arg=--gpus=device=0, --runtime-arg=--network=host); repeatable")
    run.add_argument("--interpreter", action=_ForStack, default=[], metavar="PATH",
                     help="the Python inside the preceding image stack (default: python3)")
    run.add_argument("--pull", action="store_true", help="pull the images of docker:/podman: stacks first (never done otherwise)")
    run.add_argument("--out", type=folder_path, help="archive folder, or a URL (s3://bucket/prefix, any pyarrow or fsspec filesystem) the run is uploaded to when it ends (default: runs)")
    run.add_argument("--stage", type=folder_path, help="with a URL --out: local folder the run is recorded in before its upload (default: $IMAGEBENCH_STAGE, else ~/.cache/imagebench/outbox)")
    run.add_argument("--device", choices=["auto", "cpu", "cuda"], help="device to measure (default: auto)")
    run.add_argument("--only", action="append", default=[], metavar="PATTERN", help="only this workload, or cases whose id matches a glob (e.g. 'matmul*n=4096*'); repeatable")
    run.add_argument("--processes", type=positive_int, help="independent worker processes per case (default: 3)")
    run.add_argument("--image", help="name of the image a run is recorded inside (default: $IMAGEBENCH_IMAGE); an image stack records its own")
    run.add_argument("--time-budget", type=positive_float, help="seconds of sampling per case and process before stopping (default: the suite's)")
    run.add_argument("--case-timeout", type=positive_float, help="seconds after which a case is killed and recorded as timeout (default: the workload's)")
    run.add_argument("--data-dir", type=folder_path, help="folder with real datasets in torchvision's format (never downloaded)")
    run.add_argument("--resume", metavar="RUN_DIR", type=folder_path, help="finish an interrupted run: run only its missing cases, same run id")
    run.add_argument("--env", action=_ForStack, default=[], metavar="NAME=VALUE",
                     help="set a variable for the preceding stack (or the only stack); repeatable")
    run.add_argument("--adaptive", type=positive_float, metavar="SECONDS",
                     help="after the planned processes, spend up to SECONDS adding processes to the cases with the widest CIs")
    run.add_argument("--max-processes", type=positive_int, help="with --adaptive, at most this many processes a case (default: twice --processes)")
    run.add_argument("--no-doctor", action="store_true", help="do not run the pre-flight checks first")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    dist = run.add_argument_group("multi-node DDP (passed through to torchrun; give the same values on every node but --node-rank)")
    dist.add_argument("--nnodes", type=int, default=1, help="nodes of the multi-node DDP cases (default: 1, none)")
    dist.add_argument("--node-rank", type=int, help="this node's rank, 0..nnodes-1 (the c10d rendezvous assigns ranks itself)")
    dist.add_argument("--rdzv-backend", default="c10d", help="torchrun rendezvous backend (default: c10d)")
    dist.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="rendezvous endpoint, the same on every node (e.g. the first node's address:29400)")
    dist.add_argument("--rdzv-id", help="rendezvous id shared by the nodes, e.g. the Slurm job id (default: imagebench); each case adds its own suffix")
    dist.add_argument("--nproc-per-node", type=int, help="DDP processes per node, the largest replica count (default: the GPU count; 2 on a CPU)")

    doc = sub.add_parser("doctor", help="pre-flight check: what would make a run here misleading, and how to fix it")
    doc.add_argument("--out", default="runs", help="archive folder whose disk is checked (default: runs)")
    doc.add_argument("--python", default=None, help="interpreter of the stack (default: this one)")
    doc.add_argument("--suite", help="suite to check for (default: the one `run` would pick)")
    doc.add_argument("--data-dir", help="the --data-dir a run would be given")
    doc.add_argument("--json", action="store_true", help="print JSON")

    lst = sub.add_parser("list", help="list the cases of a suite")
    lst.add_argument("--suite", help="suite (default: the one `run` would pick here)")
    lst.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    lst.add_argument("--only", action="append", default=[], metavar="PATTERN")
    lst.add_argument("--python", default=None, help="interpreter of the stack (default: this one)")
    lst.add_argument("--stack", default=None, metavar="KIND:TARGET", help="the stack, as `run --stack` takes it")
    lst.add_argument("--json", action="store_true", help="print JSON")

    up = sub.add_parser("upload", help="upload finished run folders to an archive URL (what `run --out URL` does at the end)")
    up.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a run folder, <label>/<run_id>/")
    up.add_argument("--out", required=True, help="archive URL, e.g. s3://bucket/prefix")

    fp = sub.add_parser("fingerprint", help="print this stack's environment fingerprint")
    fp.add_argument("--image", default=os.environ.get("IMAGEBENCH_IMAGE"))
    fp.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _check_run_args(args: argparse.Namespace) -> None:
    from runformat.schema import SchemaError, sanitize_label
    from collector.suites import SUITES

    if args.suite is not None and args.suite not in SUITES:
        raise CLIError(f"--suite {args.suite!r} is not a suite; choose one of: {', '.join(SUITES)}")
    for label in args.label:
        try:
            sanitize_label(label)
        except SchemaError:
            raise CLIError(f"--label {label!r} has no letters or digits to name a folder with") from None
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise CLIError(f"--data-dir {args.data_dir!r} is not a folder")
    if args.adaptive is not None and args.adaptive <= 0:
        raise CLIError(f"--adaptive {args.adaptive} must be positive")
    if args.max_processes is not None and args.max_processes < args.processes:
        raise CLIError(f"--max-processes {args.max_processes} must be at least --processes {args.processes}")
    if args.resume is not None and (args.stack or args.label or args.interleave or args.pull):
        raise CLIError("--resume takes the run's own settings; do not combine it with --stack, --python, --label, "
                       "--interleave or --pull")
    _check_stack_args(args)
    _check_distributed_args(args)
    if args.stage is not None and not _is_url(args.out):
        raise CLIError(f"--stage is for a URL --out; --out {args.out!r} is a folder, where the run is recorded directly")


def _stack_flag(args: argparse.Namespace) -> str:
    """How messages name the stacks: ``--python`` when the user gave only those, else ``--stack``."""
    return "--python" if args.stack and all(flag == "--python" for _, flag in args.stack) else "--stack"


def _check_stack_args(args: argparse.Namespace) -> None:
    """Stacks that parse, with runtimes that are installed, labels that pair, flags that fit."""
    flag = _stack_flag(args)
    if args.stack and args.label and len(args.label) != len(args.stack):
        raise CLIError(f"give one --label per {flag} ({len(args.stack)} {flag}, {len(args.label)} --label)")
    if len(args.stack) <= 1 and len(args.label) > 1:
        raise CLIError(f"--label was given {len(args.label)} times; give it once, or once per --stack")
    if args.interleave and len(args.stack) < 2:
        raise CLIError(f"--interleave needs at least two stacks (--stack or --python), not {len(args.stack)}")
    stacks = _stacks_from_args(args)
    images = [s for s in stacks if s.is_image]
    for index, text in [*args.runtime_arg, *args.interpreter]:
        if not stacks[index].is_image:
            option = "--runtime-arg" if (index, text) in args.runtime_arg else "--interpreter"
            raise CLIError(f"{option} {text!r} follows {stacks[index].spec}, which is not an image stack")
    if images and args.image:
        raise CLIError(f"--image names the image of a run recorded inside it; --stack {images[0].spec} records its own")
    if args.pull and not any(s.kind in ("docker", "podman") for s in stacks):
        raise CLIError("--pull is for docker: and podman: stacks; none was given")
    if args.nnodes > 1:
        for s in images:
            if s.kind != "apptainer" and not any(a.split("=", 1)[0] == "--network" for a in s.runtime_args):
                raise CLIError(f"--nnodes {args.nnodes} needs the network, which --stack {s.spec} does not have by default; "
                               "add --runtime-arg=--network=host after it")


def _stacks_from_args(args: argparse.Namespace) -> list[Any]:
    """The ``Stack`` of each ``--stack``/``--python`` with its label and settings (the host's
    Python when none was given); a stack that does not parse, or whose runtime is not
    installed, is a ``CLIError``."""
    from collector.stacks import Stack, StackError, parse_stack
    from collector.stacks.base import find_runtime

    specs = args.stack or [(f"python:{sys.executable}", "--python")]
    labels = args.label or [None] * len(specs)
    stacks = []
    for index, ((spec, flag), label) in enumerate(zip(specs, labels)):
        try:
            stack = parse_stack(spec)
            if stack.is_image:
                find_runtime(stack.kind, stack)
        except StackError as e:
            text = str(e)
            if flag == "--python" and "is not an executable file" in text:
                text = f"--python {spec.removeprefix('python:')!r} is not an executable file"
            raise CLIError(text) from None
        env = dict(v.split("=", 1) for i, v in args.env if i == index)
        runtime_args = tuple(v for i, v in args.runtime_arg if i == index)
        interpreter = next((v for i, v in reversed(args.interpreter) if i == index), None)
        stacks.append(Stack(stack.target, label, tuple(sorted(env.items())), stack.kind, runtime_args, interpreter))
    return stacks


def _is_url(text: str) -> bool:
    from runformat.remote import is_url

    return is_url(text)


def _check_distributed_args(args: argparse.Namespace) -> None:
    if args.nnodes < 1:
        raise CLIError(f"--nnodes {args.nnodes} must be at least 1")
    if args.nproc_per_node is not None and not 1 <= args.nproc_per_node <= 64:
        raise CLIError(f"--nproc-per-node {args.nproc_per_node} must be between 1 and 64")
    if args.nnodes == 1:
        given = [f"--{n.replace('_', '-')}" for n in ("node_rank", "rdzv_endpoint", "rdzv_id") if getattr(args, n) is not None]
        if given:
            raise CLIError(f"{', '.join(given)} need --nnodes 2 or more")
        return
    if args.node_rank is not None and not 0 <= args.node_rank < args.nnodes:
        raise CLIError(f"--node-rank {args.node_rank} must be between 0 and {args.nnodes - 1} (--nnodes {args.nnodes})")
    if not args.rdzv_endpoint:
        raise CLIError(f"--nnodes {args.nnodes} needs --rdzv-endpoint HOST:PORT, the same on every node")
    host, _, port = args.rdzv_endpoint.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise CLIError(f"--rdzv-endpoint {args.rdzv_endpoint!r} must be HOST:PORT with a port between 1 and 65535")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", args.rdzv_backend):
        raise CLIError(f"--rdzv-backend {args.rdzv_backend!r} is not a backend name (c10d, etcd-v2, static)")
    if args.rdzv_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", args.rdzv_id):
        raise CLIError(f"--rdzv-id {args.rdzv_id!r} must be letters, digits, '.', '_' or '-' (at most 64)")


def _torchrun_args(args: argparse.Namespace) -> str | None:
    """The multi-node options as torchrun arguments, after any already in the environment."""
    from collector.workloads.multigpu import TORCHRUN_ARGS_ENV

    ours: list[str] = []
    if args.nnodes > 1:
        ours += ["--nnodes", str(args.nnodes), "--rdzv_backend", args.rdzv_backend, "--rdzv_endpoint", args.rdzv_endpoint]
        if args.node_rank is not None:
            ours += ["--node_rank", str(args.node_rank)]
        if args.rdzv_id is not None:
            ours += ["--rdzv_id", args.rdzv_id]
    if args.nproc_per_node is not None:
        ours += ["--nproc_per_node", str(args.nproc_per_node)]
    if not ours:
        return None
    return " ".join(p for p in (os.environ.get(TORCHRUN_ARGS_ENV, ""), shlex.join(ours)) if p)


def cmd_run(args: argparse.Namespace) -> int:
    from runformat.archive import ArchiveError
    from collector.runner import Interrupted, RunError, execute
    from collector.workloads.multigpu import TORCHRUN_ARGS_ENV

    _check_run_args(args)
    torchrun = _torchrun_args(args)
    if torchrun is not None:
        os.environ[TORCHRUN_ARGS_ENV] = torchrun  # the workers inherit it; the fingerprint records it
    remote = args.out if _is_url(args.out) else None
    if remote is not None:
        from runformat.remote import open_filesystem

        open_filesystem(remote)  # a bad URL fails now, not after the run
    options = _run_options(args, remote)
    doctor_line = _doctor(args, options)
    resume = Path(args.resume) if args.resume else None
    if resume is not None and not resume.is_dir():
        raise CLIError(f"--resume {args.resume!r} is not a run folder")
    if resume is not None:
        _check_resume_flags(args, resume)
    started: list[Any] = []

    def on_start(planned: list[Any]) -> None:
        nonlocal doctor_line
        started.extend(planned)
        if doctor_line and any(p.writer.final is None for p in planned):
            # once a run exists: a bad flag or folder still gets its one error line
            print(doctor_line, file=sys.stderr, flush=True)
            doctor_line = ""

    try:
        planned = execute(options, resume=resume, progress=not args.no_progress and sys.stderr.isatty(), on_start=on_start)
    except RunError as e:
        raise CLIError(str(e) + _resume_hint(started) + _upload(started, remote)) from None
    except ArchiveError as e:  # the disk failed part-way: say what is kept and how to go on
        raise CLIError(str(e) + _resume_hint(started) + _upload(started, remote)) from None
    except Interrupted as e:
        uploaded = _upload(started, remote)  # an interrupted run is published as such
        print(inert(f"collector: interrupted by {e}; {_what_exists(started)}{uploaded}"), file=sys.stderr)
        return EXIT_SIGINT if e.signum == signal.SIGINT else EXIT_SIGTERM
    _print_summary(planned)
    if remote is not None:
        failed = _upload(planned, remote)
        if failed.startswith("; upload failed"):
            raise CLIError(f"the run finished{failed}")
    for p in planned:
        print(p.writer.folder)
    return 0


def _run_options(args: argparse.Namespace, remote: str | None) -> Any:
    from collector.runner import RunOptions
    from runformat.remote import default_stage

    return RunOptions(
        out=Path(args.stage) if args.stage else default_stage() if remote else Path(args.out or "runs"),
        stacks=_stacks_from_args(args),
        suite=args.suite,
        only=list(args.only),
        processes=args.processes or 3,
        device=args.device or "auto",
        image=args.image or os.environ.get("IMAGEBENCH_IMAGE"),  # an image stack records its own instead
        time_budget=args.time_budget,
        case_timeout=args.case_timeout,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
        interleave=args.interleave,
        argv=["collector", *sys.argv[1:]],
        adaptive_s=args.adaptive,
        max_processes=args.max_processes,
        pull=args.pull,
    )


def _doctor(args: argparse.Namespace, options: Any) -> str:
    """Run the pre-flight checks into the run's entries; the line to print once a run exists."""
    if args.no_doctor or args.resume is not None:
        return ""
    from collector.doctor import WARN, run_checks, run_entries, verdict

    checks = run_checks(out=options.out, suite=args.suite, data_dir=args.data_dir, with_torch=False)
    options.run_entries.update(run_entries(checks))
    warned = [c.name for c in checks if c.status == WARN]
    return f"collector: doctor: {verdict(checks)}" + (f" ({', '.join(warned)}; see `collector doctor`)" if warned else "")


def _check_resume_flags(args: argparse.Namespace, folder: Path) -> None:
    """Refuse flags that disagree with the run's record; name the ones used or ignored."""
    from runformat.archive import ArchiveError
    from collector.resume import check_resume_flags, recorded_settings

    try:
        run, image = recorded_settings(folder)
    except ArchiveError:
        return  # not a readable run: resuming it says why
    given = {
        "suite": args.suite, "processes": args.processes, "only": list(args.only), "device": args.device,
        "time_budget": args.time_budget, "image": args.image, "out": args.out, "case_timeout": args.case_timeout,
        "data_dir": args.data_dir,
    }
    conflicts, notes = check_resume_flags(run, image, given)
    if conflicts:
        raise CLIError(f"--resume {args.resume}: {'; '.join(conflicts)}; a resumed run keeps its recorded settings "
                       "(drop the flag, or start a new run)")
    for note in notes:
        print(inert(f"collector: note: {note}"), file=sys.stderr)


def _what_exists(planned: list[Any]) -> str:
    """After an interruption: exactly which run folders exist, what they hold, and how to go on."""
    folders = [p for p in planned if p.writer.final is None]
    if not folders:
        return "no run folder was created; nothing was recorded"
    parts = []
    for p in folders:
        done = sum(1 for r in p.records if r.status != "interrupted")
        parts.append(f"{p.writer.folder} holds {done} finished attempt(s)")
    return "; ".join(parts) + _resume_hint(planned)


def _upload(planned: list[Any], remote: str | None) -> str:
    """Upload each finished run to ``remote``; a remark for the message (empty without a URL)."""
    if remote is None:
        return ""
    from runformat.archive import ArchiveError
    from runformat.remote import upload_run

    done, failed = [], []
    for p in planned:
        if p.writer.final is not None:  # never published: nothing a reader could take
            continue
        try:
            u = upload_run(p.writer.folder, remote)
            done.append(f"{u.label}/{u.run_id} ({u.status})")
            print(f"collector: uploaded {u.label}/{u.run_id} ({u.status}, {u.files} files, {u.bytes:,} bytes) to {u.url}",
                  file=sys.stderr)
        except ArchiveError as e:
            failed.append(f"{e}; upload it later with: collector upload {shlex.quote(str(p.writer.folder))} --out {shlex.quote(remote)}")
    if failed:
        return "; upload failed: " + "; ".join(failed)
    return f"; uploaded {', '.join(done)}" if done else ""


def _resume_hint(planned: list[Any]) -> str:
    """``; resume with: collector run --resume <folder>`` for each run already on disk."""
    folders = [p.writer.folder for p in planned if p.writer.final is None]
    if not folders:
        return ""
    commands = " and ".join(f"collector run --resume {shlex.quote(str(f))}" for f in folders)
    return f"; the cases finished so far are kept; resume with: {commands}"


def _print_summary(planned: list[Any]) -> None:
    from collector.runner import summarize

    rows = []
    for p in planned:
        for row in summarize(p):
            statuses = ", ".join(f"{n} {s}" for s, n in sorted(row["statuses"].items()))
            first = next(iter(row["values"].items()), None)
            if first:
                (metric, unit), values = first
                shown = f"{metric} {_fmt(sorted(values)[len(values) // 2], unit)}"
            else:
                shown = row["error"] or ""
            rows.append(tuple(inert(x) for x in (p.writer.label, row["case"], statuses, shown)))
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title="recorded (medians over all processes; statistics come from `reporter`)")
        for col in ("label", "case", "status", "median"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(*map(Text, r))  # values as text: "[bold]" in a case id is not markup
        Console().print(table)
    except ImportError:
        for r in rows:
            print("  ".join(r))


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        for scale, suffix in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
            if value >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value * 1e9:.3g} ns"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:.4g} {unit}"


def cmd_list(args: argparse.Namespace) -> int:
    from collector.runner import RunError, RunOptions, check_stacks, plan_cases, probe
    from collector.suites import SUITES, default_suite

    if args.suite is not None and args.suite not in SUITES:
        raise CLIError(f"--suite {args.suite!r} is not a suite; choose one of: {', '.join(SUITES)}")
    import tempfile

    if args.python is not None and args.stack is not None:
        raise CLIError("give --stack or --python, not both")
    spec = args.stack or f"python:{args.python or sys.executable}"
    args_like = argparse.Namespace(stack=[(spec, "--python" if args.stack is None else "--stack")], label=[], env=[],
                                   runtime_arg=[], interpreter=[])
    options = RunOptions(out=Path("."), stacks=_stacks_from_args(args_like), device=args.device)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            (launcher,) = check_stacks(options)
            device, _ = probe(launcher, options, Path(tmp) / "probe.log")
            cases = plan_cases(args.suite or default_suite(device.type), device, list(args.only))
        except RunError as e:
            raise CLIError(str(e)) from None
    if args.json:
        print(json.dumps([{"case_id": c.case_id, "workload": c.workload, "params": dict(c.params)} for c in cases], indent=1))
    else:
        for c in cases:
            print(c.case_id)
        print(f"{len(cases)} cases on {device.type} ({device.name})", file=sys.stderr)
    return 0


def cmd_fingerprint(args: argparse.Namespace) -> int:
    from collector.fingerprint import collect_fingerprint

    entries = collect_fingerprint(image=args.image)
    if args.json:
        print(json.dumps([e.__dict__ for e in entries], indent=1))
        return 0
    section = None
    for e in entries:
        if e.section != section:
            section = e.section
            print(inert(f"[{section}]"))
        value = e.value if "\n" not in e.value else e.value.splitlines()[0] + " ..."
        print(inert(f"  {e.key} = {value}"))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from collector.doctor import print_checks, run_checks, verdict
    from collector.suites import SUITES

    if args.suite is not None and args.suite not in SUITES:
        raise CLIError(f"--suite {args.suite!r} is not a suite; choose one of: {', '.join(SUITES)}")
    if args.python is not None and not (Path(args.python).is_file() and os.access(args.python, os.X_OK)):
        raise CLIError(f"--python {args.python!r} is not an executable file")
    checks = run_checks(out=Path(args.out), python=args.python, suite=args.suite, data_dir=args.data_dir)
    if args.json:
        print(json.dumps({"verdict": verdict(checks), "checks": [c.__dict__ for c in checks]}, indent=1))
    else:
        print_checks(checks)
    return 0 if verdict(checks) == "fit" else 1


def cmd_upload(args: argparse.Namespace) -> int:
    from runformat.remote import upload_run

    if not _is_url(args.out):
        raise CLIError(f"--out {args.out!r} is not a URL (s3://bucket/prefix, file:///folder, ...)")
    for run in args.runs:
        u = upload_run(Path(run), args.out)
        print(f"uploaded {u.label}/{u.run_id} ({u.status}, {u.files} files, {u.bytes:,} bytes) to {u.url} as upload {u.upload_id}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    from runformat.archive import ArchiveError

    try:
        args = parser.parse_args(argv)
    except CLIError as e:
        print(f"collector: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    handlers = {"run": cmd_run, "list": cmd_list, "fingerprint": cmd_fingerprint, "doctor": cmd_doctor, "upload": cmd_upload}

    try:
        return handlers[args.command](args)
    except (CLIError, ArchiveError) as e:
        print(f"collector: error: {inert(e, keep_newlines=True)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
