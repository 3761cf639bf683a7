"""The project's layers, top to bottom, and the imports between its modules as written.

A layer may import its own modules and those of the layers below it, never one above
(tests/unit/test_layers.py holds the code to that). From the top:

- front doors, lab/: what a person or a program starts a grading from (the `lab` command and
  its entry point, the notebook API, the Gradescope autograder, `lab batch` and its Slurm jobs,
  `lab release`, the course server);
- the waist: the one grading entry every front door calls (grader.grading);
- the engine: the rest of grader/ (the worker and its steps, results, scoring, the report and
  its rendering, the sandbox, the device queue, the hardware counters);
- course content and backends, grader/course/ and grader/backends/: what a stage is and how a
  kernel runs (the spec, the catalog, the problems' oracles, the source checks, the safe sinks
  for student text and the bounds on what is kept of it (grader.text_limits); the backends and
  PoCL's cache folder (grader.pocl_scratch));
- settings, grader/settings.py: the environment variables the lab reads, which every layer
  reads through it.

A module's room is the folder its file is in (lab, lab/cli, grader/steps, grader/course, ...): what a reader
opens. benchmarks/grading_path.py follows a submission through the rooms and the layers;
scripts/import_graph.py draws the rooms' imports (docs/layers.svg). Standard library only,
so both run against any checkout.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("lab", "grader")  # the project's own import packages


@dataclass(frozen=True)
class Layer:
    name: str
    holds: str  # what lives in it, in a few words
    modules: tuple[str, ...]  # module names, or packages (every module under them)


# The first layer whose list names a module or a package above it (the longest such name
# wins across layers) holds that module. The packages read as the layers do: lab/ is the front
# doors alone, grader/ the waist, the engine and, in folders of their own, the course and the
# backends; `grader` catches the engine.
LAYERS: tuple[Layer, ...] = (
    Layer("front doors", "the lab command, the notebook API, the autograder, lab batch and Slurm, lab release, "
          "the course server", ("lab",)),
    Layer("waist", "the one grading entry every front door calls", ("grader.grading",)),
    Layer("engine", "the worker and its steps, results, scoring, the report and its rendering, the sandbox, "
          "the device queue, the hardware counters", ("grader",)),
    Layer("course and backends", "what a stage is and how a kernel runs: spec, catalog, problems' oracles, "
          "backends, source checks, the sinks for student text and their bounds, PoCL's cache folder",
          ("grader.course", "grader.backends", "grader.text_limits", "grader.pocl_scratch")),
    Layer("settings", "the environment variables the lab reads, one table", ("grader.settings",)),
)


def layer_index(module: str) -> int:
    """The index in LAYERS (0: the top) of the layer that holds `module`, a dotted name of
    lab or grader. Raises KeyError for a module of neither."""
    best: tuple[int, int] | None = None  # (length of the matching name, layer index)
    for index, layer in enumerate(LAYERS):
        for name in layer.modules:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[0]):
                best = (len(name), index)
    if best is None:
        raise KeyError(f"{module}: not a module of {' or '.join(PACKAGES)}")
    return best[1]


def layer_of(module: str) -> Layer:
    return LAYERS[layer_index(module)]


@dataclass(frozen=True)
class Module:
    name: str  # dotted: lab.cli.grade
    path: Path  # relative to the checkout: lab/cli/grade.py

    @property
    def room(self) -> str:
        """The folder the module's file is in, relative to the checkout: lab/cli."""
        return room_of(self.path)

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def modules(root: Path) -> dict[str, Module]:
    """Every Python module of the project's packages in the checkout at `root`, by name (the
    server's Alembic migrations are scripts Alembic loads, not modules: left out)."""
    found: dict[str, Module] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if "migrations" in relative.parts:
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = Module(".".join(parts), relative)
    return found


def room_of(path: Path) -> str:
    """The room of a module file at `path` (relative to the checkout)."""
    return path.parent.as_posix()


@dataclass(frozen=True)
class Import:
    importer: str  # the module whose code imports
    imported: str  # the project module it names (the longest known module name)
    line: int
    in_function: bool  # inside a def: run when called, not when the importer is loaded
    type_checking: bool  # under `if TYPE_CHECKING:`: never run


def _resolve(name: str, known: dict[str, Module]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        lines.add(sub.lineno)
    return lines


def _function_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    lines.add(sub.lineno)
    return lines


def imports(root: Path) -> list[Import]:
    """Every import of a project module written in the project's modules at `root`: at the top,
    in functions, under TYPE_CHECKING; `from package import module` names the module."""
    known = modules(root)
    found: list[Import] = []
    for module in known.values():
        tree = ast.parse((root / module.path).read_text(encoding="utf-8"), filename=str(module.path))
        in_function = _function_lines(tree)
        typing_only = _type_checking_lines(tree)
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                         for alias in node.names]
            for name in names:
                if name.split(".")[0] not in PACKAGES:
                    continue
                target = _resolve(name, known)
                if target is not None and target != module.name:
                    found.append(Import(module.name, target, node.lineno, node.lineno in in_function,
                                        node.lineno in typing_only))
    return found
