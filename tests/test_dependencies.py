"""The dependency rule of docs/architecture.md, read from the import statements of src/iclab:
no forbidden arrow between packages (the core imports no study; a study imports no other study
it does not declare), no cycle between packages nor between files (imports inside functions
included), and the size limits (at most 12 modules a package and no package of one module
alone, 300 lines a module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "iclab"
MAX_MODULES = 12
"""The most modules (``__init__.py`` aside) one package may hold."""
MAX_LINES = 300
"""The most lines one module may have."""
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
    "algorithms": {"training", "analysis", "experiments", "cli", "runs"},
    "tracking": {"tasks", "models", "training", "analysis", "theory", "algorithms", "config",
                 "runs", "experiments", "cli"},
}
"""iclab.tracking (the experiment trackers) sits on iclab.utils alone: runs calls it."""
PACKAGES = {"tasks", "models", "training", "analysis", "theory", "algorithms", "config", "runs",
            "experiments", "cli", "api", "tracking"}
FORBIDDEN["utils"] = PACKAGES
"""The small utilities (iclab.utils) import no other package."""
FORBIDDEN["cli"] = set()
for _forbidden in FORBIDDEN.values():
    _forbidden.add("api")
"""iclab.api (the Python API) is the top of the core, beside the CLI: no package imports it."""
FORBIDDEN["api"] = set()
for _forbidden in FORBIDDEN.values():
    _forbidden.add("studies")
"""The core (every package but iclab.studies) imports no study."""
EXPERIMENTS_FORBIDDEN = {
    "executors": {"specs", "claims", "figures", "report", "registries"},
    "specs": {"claims", "figures", "report", "registries"},
    "figures": {"claims", "report", "registries"},
    "claims": {"report", "registries"},
}
"""The layers inside iclab.experiments (docs/architecture.md)."""


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


def files_of(package: str, source: Path = SOURCE) -> list[Path]:
    """The files of a package (or of a one-file module at the top, if any)."""
    module = source / f"{package}.py"
    return [module] if module.is_file() else sorted((source / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_what_the_rule_forbids(package: str) -> None:
    assert files_of(package), f"no package or module {package}"
    for path in files_of(package):
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


def module_name(path: Path, source: Path = SOURCE) -> str:
    """``iclab.experiments.claims.kind`` for src/iclab/experiments/claims/kind.py (a package's
    ``__init__.py`` is the package)."""
    parts = path.relative_to(source.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the import statements under ``if TYPE_CHECKING:`` (never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The iclab modules (files) that ``path`` imports when it runs, lazy imports included
    (those under ``if TYPE_CHECKING:`` are for the type checker alone): ``from iclab.a import
    b`` is module ``iclab.a.b`` where that is a file, else ``iclab.a``."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in known}


def module_graph(source: Path = SOURCE) -> dict[str, set[str]]:
    paths = {module_name(path, source): path for path in source.rglob("*.py")}
    known = set(paths)
    return {name: imported_modules(path, known) - {name} for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first = last), or None."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        trail.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == 1:
                return [*trail[trail.index(successor):], successor]
            if successor not in state:
                cycle = visit(successor)
                if cycle:
                    return cycle
        state[node] = 2
        trail.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_there_is_no_import_cycle_between_files() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_file_walker_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    package = tmp_path / "iclab" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "iclab" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from iclab.pkg.b import g\n")
    (package / "b.py").write_text("def g():\n    from iclab.pkg import a\n")
    (package / "c.py").write_text("import iclab.pkg.a\n")
    graph = module_graph(tmp_path / "iclab")
    assert graph["iclab.pkg.c"] == {"iclab.pkg.a"}
    assert find_cycle(graph) == ["iclab.pkg.a", "iclab.pkg.b", "iclab.pkg.a"]
    (package / "b.py").write_text("def g():\n    pass\n")
    assert find_cycle(module_graph(tmp_path / "iclab")) is None



def study_imports(path: Path) -> set[str]:
    """The studies (``iclab.studies.NAME``) that ``path`` imports anywhere."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["iclab", "studies"] and len(parts) > 2:
                found.add(parts[2])
    return found


def declared_requirements() -> dict[str, set[str]]:
    """Each built-in study's folder name -> the studies its declaration requires."""
    import importlib

    out = {}
    for folder in sorted(p for p in (SOURCE / "studies").iterdir() if (p / "study.py").is_file()):
        study = importlib.import_module(f"iclab.studies.{folder.name}.study").STUDY
        assert study.name.replace("-", "_") == folder.name, folder
        out[folder.name] = set(study.requires)
    return out


def test_the_core_imports_no_study_and_no_study_an_undeclared_one() -> None:
    requirements = declared_requirements()
    assert {"shift", "covariates", "softmax", "pool", "asymptotic", "transformer", "garg",
            "dynamics", "development"} <= set(requirements)
    for path in SOURCE.rglob("*.py"):
        relative = path.relative_to(SOURCE).parts
        imported = study_imports(path)
        if relative[0] != "studies":
            assert not imported, f"core module {path.relative_to(SOURCE)} imports {imported}"
        elif len(relative) > 2:
            own = relative[1]
            undeclared = imported - {own} - requirements[own]
            assert not undeclared, f"{path.relative_to(SOURCE)} imports undeclared {undeclared}"


def test_the_study_walker_sees_lazy_and_from_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import iclab.studies.pool.loss\n"
                      "def f():\n    from iclab.studies import shift\n")
    assert study_imports(module) == {"pool", "shift"}


def test_no_package_holds_a_single_module() -> None:
    lonely = [str(folder.relative_to(SOURCE.parent)) for folder in SOURCE.rglob("*")
              if folder.is_dir() and (folder / "__init__.py").is_file()
              and len([p for p in folder.glob("*.py") if p.name != "__init__.py"]) == 1
              and not any((sub / "__init__.py").is_file() for sub in folder.iterdir())]
    assert not lonely, f"packages of one module: {lonely}"


def test_no_package_has_more_than_12_modules() -> None:
    crowded = {}
    for folder in [SOURCE, *(p for p in SOURCE.rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            crowded[str(folder.relative_to(SOURCE.parent))] = len(modules)
    assert not crowded, f"packages with more than {MAX_MODULES} modules: {crowded}"


def test_no_module_is_longer_than_300_lines() -> None:
    long = {str(p.relative_to(SOURCE.parent)): n for p in SOURCE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("subpackage", sorted(EXPERIMENTS_FORBIDDEN))
def test_the_experiments_subpackages_are_layered(subpackage: str) -> None:
    known = set(module_graph())
    for path in files_of(subpackage, SOURCE / "experiments"):
        imported = {name.split(".")[2] for name in imported_modules(path, known)
                    if name.startswith("iclab.experiments.") and name.count(".") >= 2}
        bad = imported & EXPERIMENTS_FORBIDDEN[subpackage]
        assert not bad, f"{path.relative_to(SOURCE)} imports iclab.experiments.{bad}"
