"""The reporter's rooms by stage: a stage imports only the stages below it, no module imports itself back,
and no function of a stage is longer than a reader can hold (``MAX_FUNCTION_LINES``).

Stages, lowest first: the shared run format; the reporter's base (its error type and option types);
``data``; ``model``; ``article``; ``present``; ``site``; the command line. The collector and the reporter
share the run format and nothing else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["runformat", "reporter.errors", "reporter.options", "reporter.data", "reporter.model",
          "reporter.article", "reporter.present", "reporter.site", "reporter.cli"]


# Every stage imports only the stages below it: the list of upward imports is empty and may stay
# so. The reporter reads the workloads' descriptions, the suites' timing policies and the GPU's
# throttle reasons from the run format, as the collector does: none crosses to the collector.
KNOWN_UPWARD: set[str] = set()
KNOWN_CROSSING: set[str] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _stage(module: str) -> int | None:
    best = None
    for rank, prefix in enumerate(STAGES):
        if module == prefix or module.startswith(prefix + "."):
            best = rank
    return best


def _graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    modules = {_module_name(p): p for pkg in packages for p in (ROOT / pkg).rglob("*.py")}
    return {name: {m for m in _imports(path) if m in modules} for name, path in modules.items()}


def test_each_reporter_stage_imports_only_the_stages_below_it():
    graph = _graph(("runformat", "reporter"))
    upward = []
    for module, imported in graph.items():
        own = _stage(module)
        for other in imported:
            theirs = _stage(other)
            if own is not None and theirs is not None and theirs > own:
                upward.append(f"{module} -> {other}")
    assert set(upward) == KNOWN_UPWARD, "imports that reach up a stage:\n" + "\n".join(sorted(set(upward) ^ KNOWN_UPWARD))



@pytest.mark.parametrize("half, other", [("reporter", "collector"), ("collector", "reporter"), ("runformat", "collector"), ("runformat", "reporter")])
def test_the_halves_share_only_the_run_format(half, other):
    modules = {_module_name(p) for p in (ROOT / other).rglob("*.py")}
    crossing = {
        f"{_module_name(p)} -> {m if m in modules else m.rsplit('.', 1)[0]}"
        for p in (ROOT / half).rglob("*.py") for m in _imports(p) if m == other or m.startswith(other + ".")
    }
    known = KNOWN_CROSSING if half == "reporter" else set()
    assert crossing == known, "\n".join(sorted(crossing ^ known))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components: a component of more than one module is an import circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _parent_packages_removed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    # ``from reporter.data import load`` names the package and the module; a package's own __init__
    # imports nothing here, so only module-to-module edges count.
    packages = {name for name in graph if any(other.startswith(name + ".") for other in graph)}
    return {name: {m for m in edges if m not in packages} for name, edges in graph.items() if name not in packages}


@pytest.mark.parametrize("packages", [("runformat", "reporter"), ("runformat", "collector")])
def test_no_import_circles(packages):
    assert _cycles(_parent_packages_removed(_graph(packages))) == []


# A function longer than this does more than one job: split it into pieces named for theirs.
MAX_FUNCTION_LINES = 80


def _long_functions(package: str, root: Path = ROOT) -> list[str]:
    """``path:function (lines)`` for every function of ``package`` (methods and nested ones too)
    longer than ``MAX_FUNCTION_LINES``, from its ``def`` line to its last, docstring included."""
    found = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root).as_posix()}:{node.name} ({lines} lines)")
    return found


def test_the_long_function_check_finds_a_long_method(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "pkg" / "mod.py").write_text(
        f"def short():\n    return 1\n\n\nclass A:\n    def fits(self):\n{body}\n    def long(self):\n{body}        return 0\n"
    )
    assert _long_functions("pkg", tmp_path) == [f"pkg/mod.py:long ({MAX_FUNCTION_LINES + 1} lines)"]


# Material's search parser, forked: it goes once tables are rendered as HTML, exempt until then.
LONG_FUNCTIONS_LEFT = {"reporter/site/search_speed.py:tag_counting_parser"}


# Every function of both halves and of the run format keeps within MAX_FUNCTION_LINES.
@pytest.mark.parametrize("package", ["runformat", "reporter", "collector"])
def test_no_function_of_a_stage_is_over_the_limit(package):
    too_long = [f for f in _long_functions(package) if f.split(" (")[0] not in LONG_FUNCTIONS_LEFT]
    assert too_long == [], "split into pieces that each do one job:\n" + "\n".join(too_long)
