"""No import runs back up the layers (tests/layers.py): front doors, the waist, the engine,
course content and backends. Every import of a project module is read with `ast`, at the top
of a module, inside functions and under TYPE_CHECKING alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.layers import LAYERS, Import, imports, layer_index, modules

ROOT = Path(__file__).resolve().parents[2]

# Back-imports left for now, each with why: (importer, imported) -> reason. Remove an entry
# once its import is gone (test_each_known_exception_still_exists says when).
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}

# Names the layer table gives to modules that are not written yet: name -> who adds it.
NOT_YET_WRITTEN: dict[str, str] = {}


def back_imports(found: list[Import]) -> list[Import]:
    return [i for i in found if layer_index(i.imported) < layer_index(i.importer)]


def describe(i: Import) -> str:
    where = "in a function" if i.in_function else "under TYPE_CHECKING" if i.type_checking else "at the top"
    return (f"{i.importer} (line {i.line}, {where}), in {LAYERS[layer_index(i.importer)].name}, imports "
            f"{i.imported}, in {LAYERS[layer_index(i.imported)].name} above it")


def test_no_import_runs_back_up_the_layers():
    found = [i for i in back_imports(imports(ROOT)) if (i.importer, i.imported) not in KNOWN_EXCEPTIONS]
    assert not found, "imports that run back up the layers:\n" + "\n".join(map(describe, found))


def test_each_known_exception_still_exists():
    present = {(i.importer, i.imported) for i in back_imports(imports(ROOT))}
    gone = [f"{a} -> {b}" for a, b in KNOWN_EXCEPTIONS if (a, b) not in present]
    assert not gone, "known exceptions no longer found (remove them from KNOWN_EXCEPTIONS): " + ", ".join(gone)


def test_grader_imports_nothing_from_lab():
    """The packages read as the layers do: lab/ holds the front doors alone, so the grader,
    the course and the backends below them never reach into it."""
    found = [i for i in imports(ROOT) if i.importer.split(".")[0] == "grader" and i.imported.split(".")[0] == "lab"]
    assert not found, "grader imports lab:\n" + "\n".join(map(describe, found))


def test_every_name_in_the_layer_table_is_a_module_or_package():
    known = modules(ROOT)
    stale = [name for layer in LAYERS for name in layer.modules
             if name not in known and name not in NOT_YET_WRITTEN]
    assert not stale, f"the layer table names modules that do not exist: {stale}"


def test_every_module_has_one_layer():
    for name in modules(ROOT):
        assert 0 <= layer_index(name) < len(LAYERS)


@pytest.mark.parametrize(("module", "layer"), [
    ("lab", "front doors"), ("lab.cli.grade", "front doors"), ("lab.api", "front doors"),
    ("lab.autograder.run", "front doors"), ("lab.batch.runner", "front doors"),
    ("lab.batch.exports.canvas", "front doors"), ("lab.server.grading_lane", "front doors"),
    ("grader.grading", "waist"), ("grader.pipeline", "engine"), ("grader.worker", "engine"), ("grader.steps.compile", "engine"),
    ("grader.counters.runner", "engine"), ("grader.course.spec", "course and backends"),
    ("grader.course.problems.mlp", "course and backends"), ("grader.backends.opencl", "course and backends"),
    ("grader.settings", "settings"),
])
def test_layer_of_a_module(module, layer):
    assert LAYERS[layer_index(module)].name == layer


def test_a_back_import_inside_a_function_is_found(tmp_path):
    """The reader finds what the test is for: an import inside a function, a relative one, and
    one under TYPE_CHECKING, each of the engine from the bottom layer."""
    problems = tmp_path / "grader" / "course" / "problems"
    problems.mkdir(parents=True)
    for init in ("lab/__init__.py", "grader/__init__.py", "grader/course/__init__.py", "grader/course/problems/__init__.py"):
        (tmp_path / init).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / init).write_text("")
    (tmp_path / "grader" / "launching.py").write_text("class Launch: ...\n")
    (tmp_path / "grader" / "pipeline.py").write_text("from grader.course.problems import toy\n")
    (problems / "toy.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import other\n"
        "if TYPE_CHECKING:\n"
        "    from grader import pipeline\n"
        "def plan(setup):\n"
        "    from grader.launching import Launch\n"
        "    return [Launch()]\n")
    (problems / "other.py").write_text("")
    toy, other = "grader.course.problems.toy", "grader.course.problems.other"
    found = {(i.importer, i.imported): i for i in imports(tmp_path)}
    assert set(found) == {("grader.pipeline", toy), (toy, other), (toy, "grader.pipeline"), (toy, "grader.launching")}
    assert found[toy, "grader.launching"].in_function
    assert found[toy, "grader.pipeline"].type_checking
    assert {(i.importer, i.imported) for i in back_imports(list(found.values()))} == {
        (toy, "grader.pipeline"), (toy, "grader.launching")}
