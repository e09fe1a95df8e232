"""The reporter's rooms by stage: a stage imports only the stages below it, and no module imports itself back.

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


# Crossings still left, each a step of the redesign still to take: a row's English note text is
# written in the model, and the workload registry, the suites' timing policies and the GPU's
# throttle reasons are read from the collector instead of the shared vocabulary. The list may only shrink: a new crossing fails, and so
# does a listed one that is gone (take it off the list).
KNOWN_UPWARD = {
    "reporter.model.compare -> reporter.present.notes",
}
KNOWN_CROSSING = {
    "reporter.article.compute -> collector.suites",
    "reporter.article.compute -> collector.timing",
    "reporter.article.confounders -> collector.gpustate",
    "reporter.model.compare -> collector.workloads",
    "reporter.present.charts -> collector.workloads",
    "reporter.present.views -> collector.workloads",
}


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
