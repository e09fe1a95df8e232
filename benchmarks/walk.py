"""The walk of ``runs_dir`` from ``build_command``: which project modules the archive's path passes through.

Runs ``reporter build --runs RUNS --site TMP/site --public TMP/public`` in this process
(``reporter.cli``, as the command line does; a fresh, empty ``$IMAGEBENCH_CACHE`` unless
``--keep-cache``, so the build computes everything) with a trace function on every Python
call (``sys.settrace`` and ``threading.settrace``; forked children inherit it), and
prints the walk and its counts. A local ``RUNS`` is given to the build as an absolute
path, so that a path made from it is absolute too and a word that merely reads like it
(a message's parameter named ``runs``) is not taken for it:

* A **step** is a call, made after ``reporter.site.build.build_command`` is entered (its own
  call is the first step), of a function defined in a project module (one whose
  ``__name__`` is ``reporter``, ``runformat`` or below them) that receives the archive's
  path as an argument: a positional, keyword, ``*args`` or ``**kwargs`` parameter whose
  value, at the call, is a ``str`` or ``os.PathLike`` holding an absolute path of the
  same folder as ``RUNS`` (``os.path.abspath`` of it equal to ``RUNS``'s, or to its
  ``os.path.realpath``), or, for a URL, the same string. Values that merely hold it (an ``Archive`` with its
  ``root``, a list of run folders) do not count; neither do calls of library code
  (pathlib, pyarrow, click) or calls of the project before ``build_command``, such as
  the ``--runs`` option's own check. Where it ends is where the path is opened or read:
  the last project function that receives it, the library calls below it not counted.
* The **walk** is the steps' modules in the order of the calls, process by process: the
  build's own process first (its threads' steps in the order they happened), then each
  forked child in the order it began. A process started afresh (spawned) is not traced.
* A **stay** is a maximal run of consecutive steps in one module; **modules entered** is
  how many distinct modules the walk holds; a **return** is a stay in a module that an
  earlier stay was in (entering a module already left): returns = stays - modules.

``--inside`` also counts, in a second set of figures, the calls that receive a path
inside the archive (a label's or a run's folder, one of its files): the walk of what
is derived from ``runs_dir`` as well as of ``runs_dir`` itself.

    .venv/bin/python benchmarks/walk.py [--runs runs] [--no-mkdocs] [--keep-cache] [--inside] [--calls]

``--calls`` prints every step (pid, module, function, parameter) instead of the stays.
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROJECT = ("reporter", "runformat")
START = ("reporter.site.build", "build_command")


@dataclass(frozen=True)
class Step:
    pid: int
    seq: int
    module: str
    function: str
    parameter: str
    inside: bool  # a path inside the archive, not the archive's own


class Tracer:
    """A trace function that writes a line per step to ``log`` (one ``os.write`` on an
    ``O_APPEND`` descriptor: forked children write to the same file without mixing lines)."""

    def __init__(self, runs: str, log: Path, inside: bool) -> None:
        self.url = "://" in runs
        self.runs = runs
        self.targets = set() if self.url else {os.path.abspath(runs), os.path.realpath(runs)}
        self.prefixes = tuple(t.rstrip(os.sep) + os.sep for t in self.targets)
        self.inside = inside
        self.fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.started = False
        self.seq = 0
        self.lock = threading.Lock()
        self.modules: dict[object, str | None] = {}  # code object -> its project module, or None

    def _module(self, frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.split(".")[0] in PROJECT else None

    def _kind(self, value: object) -> str | None:
        """'root' for the archive's path itself, 'inside' for a path within it, else None."""
        if isinstance(value, os.PathLike):
            try:
                value = os.fspath(value)
            except TypeError:
                return None
        if not isinstance(value, str) or not value or len(value) > 4096 or "\n" in value:
            return None
        if self.url:
            if value == self.runs:
                return "root"
            return "inside" if self.inside and value.startswith(self.runs.rstrip("/") + "/") else None
        if "://" in value or not os.path.isabs(value):
            return None
        path = os.path.abspath(value)
        if path in self.targets:
            return "root"
        if self.inside and path.startswith(self.prefixes):
            return "inside"
        return None

    def _argument(self, code, local: dict) -> tuple[str, str] | None:
        """(parameter, 'root' or 'inside') of the first parameter that is the archive's path (else one inside it), or None."""
        n = code.co_argcount + code.co_kwonlyargcount
        star = code.co_varnames[n:n + bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)]
        found = None
        for name in (*code.co_varnames[:n], *star):
            if name not in local:
                continue
            value = local[name]
            values = (value.values() if isinstance(value, dict) else value) if name in star else (value,)
            for v in values:
                kind = self._kind(v)
                if kind == "root":
                    return name, kind
                if kind == "inside" and found is None:
                    found = (name, kind)
        return found

    def __call__(self, frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        module = self.modules.get(code, "")
        if module == "":
            module = self.modules[code] = self._module(frame)
        if module is None:
            return None
        if not self.started:
            if (module, code.co_name) != START:
                return None
            self.started = True
        found = self._argument(code, frame.f_locals)
        if found is None:
            return None
        with self.lock:
            self.seq += 1
            line = f"{os.getpid()}\t{self.seq}\t{module}\t{code.co_qualname}\t{found[0]}\t{found[1]}\n"
        os.write(self.fd, line.encode())
        return None


def read_steps(log: Path) -> list[Step]:
    """The steps of ``log`` in walk order: the first process's (the build's own) first, then each other process's."""
    steps = []
    for line in log.read_text().splitlines():
        pid, seq, module, function, parameter, kind = line.split("\t")
        steps.append(Step(int(pid), int(seq), module, function, parameter, kind == "inside"))
    first_seen: dict[int, int] = {}
    for i, s in enumerate(steps):
        first_seen.setdefault(s.pid, i)
    # Within a process the file's order is the calls' order (one writer per line, appended).
    return sorted(steps, key=lambda s: first_seen[s.pid])


def stays(modules: list[str]) -> list[tuple[str, int]]:
    """Maximal runs of one module: (module, steps)."""
    out: list[tuple[str, int]] = []
    for m in modules:
        if out and out[-1][0] == m:
            out[-1] = (m, out[-1][1] + 1)
        else:
            out.append((m, 1))
    return out


def counts(modules: list[str]) -> dict[str, int]:
    runs = stays(modules)
    distinct = len({m for m, _ in runs})
    return {"steps": len(modules), "modules entered": distinct, "stays": len(runs), "returns": len(runs) - distinct}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="the archive to build from (default: runs)")
    parser.add_argument("--no-mkdocs", action="store_true", help="pass --no-mkdocs to the build")
    parser.add_argument("--keep-cache", action="store_true", help="use $IMAGEBENCH_CACHE as it is, not a fresh one")
    parser.add_argument("--inside", action="store_true", help="also count the calls that receive a path inside the archive")
    parser.add_argument("--calls", action="store_true", help="print every step, not the stays")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="imagebench-walk-"))
    try:
        if not args.keep_cache:
            os.environ["IMAGEBENCH_CACHE"] = str(tmp / "cache")
        log = tmp / "steps.tsv"
        runs = args.runs if "://" in args.runs else os.path.abspath(args.runs)
        tracer = Tracer(runs, log, args.inside)
        from reporter.cli import cli

        command = ["build", "--runs", runs, "--site", str(tmp / "site"), "--public", str(tmp / "public")]
        if args.no_mkdocs:
            command.append("--no-mkdocs")
        threading.settrace(tracer)
        sys.settrace(tracer)
        try:
            cli.main(command, standalone_mode=False)
        finally:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
        steps = read_steps(log)
        print(f"\nthe walk of --runs {args.runs} from {'.'.join(START)} (`reporter build --runs {args.runs} --site TMP/site --public TMP/public`):")
        for title, chosen in (("runs_dir itself", [s for s in steps if not s.inside]),
                              *((("runs_dir and the paths inside it", steps),) if args.inside else ())):
            print(f"\n{title}:")
            if args.calls:
                for s in chosen:
                    print(f"  pid {s.pid}  {s.module}.{s.function}({s.parameter}=...)")
            else:
                for module, n in stays([s.module for s in chosen]):
                    print(f"  {module}" + (f" x{n}" if n > 1 else ""))
            pids = sorted({s.pid for s in chosen}, key=[s.pid for s in chosen].index)
            print(f"  processes: {len(pids)} (the build's own first); steps in each: "
                  + ", ".join(str(sum(s.pid == pid for s in chosen)) for pid in pids))
            own = [s.module for s in chosen if s.pid == pids[0]]
            print("  the build's own process alone: " + ", ".join(f"{k} {v}" for k, v in counts(own).items()))
            for name, value in counts([s.module for s in chosen]).items():
                print(f"  {name}: {value}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
