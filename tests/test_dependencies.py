"""The dependency rule of docs/architecture.md, read from the import statements of src/iclab."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "iclab"
FORBIDDEN = {
    "training": {"analysis", "theory", "experiments", "cli", "runs"},
    "tasks": {"models", "training", "analysis", "experiments", "cli", "runs", "theory",
              "algorithms"},
    "theory": {"training", "analysis", "experiments", "cli", "runs", "models"},
    "models": {"training", "analysis", "experiments", "cli", "runs"},
    "analysis": {"training", "experiments", "cli", "runs"},
    "config": {"training", "analysis", "theory", "experiments", "cli", "runs"},
    "runs": {"experiments", "cli"},
    "experiments": {"cli"},
}


def package_of(path: Path) -> str:
    parts = path.relative_to(SOURCE).parts
    return parts[0] if len(parts) > 1 else path.stem


def imported_packages(path: Path) -> set[str]:
    """The iclab packages (first component after iclab.) that ``path`` imports, anywhere."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "iclab" and len(parts) > 1:
                found.add(parts[1])
    return found


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCE.rglob("*.py"):
        package = package_of(path)
        graph.setdefault(package, set()).update(imported_packages(path) - {package})
    return graph


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_what_the_rule_forbids(package: str) -> None:
    for path in (SOURCE / package).rglob("*.py"):
        bad = imported_packages(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(SOURCE)} imports iclab.{', iclab.'.join(bad)}"


def test_there_is_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for successor in graph.get(node, ()):
            if state.get(successor) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, node, successor]))
            if successor not in state:
                visit(successor, [*trail, node])
        state[node] = 2

    for package in sorted(graph):
        if package not in state:
            visit(package, [])


def test_the_walker_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from iclab.analysis.evaluate import evaluate\n")
    assert imported_packages(module) == {"analysis"}
