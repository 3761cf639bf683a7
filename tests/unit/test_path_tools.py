"""benchmarks/grading_path.py (its tracer, the rooms and the counts) and
benchmarks/batch_outputs_compare.py (what it takes as the same), on small made-up inputs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


grading_path = load("grading_path")
compare_tool = load("batch_outputs_compare")


def test_crossings_and_returns_of_a_room_path():
    rooms = grading_path.collapse(["lab/cli", "lab/cli", "lab", "grader", "grader/steps", "lab", "grader"])
    assert rooms == ["lab/cli", "lab", "grader", "grader/steps", "lab", "grader"]
    assert grading_path.crossings(rooms) == 3  # lab -> grader, grader/steps -> lab, lab -> grader
    assert grading_path.returns(rooms) == 2  # lab and grader again


def test_another_layout_places_modules_by_their_longest_name():
    layout = grading_path.LAYOUTS["four packages"]
    assert grading_path.proposed_room("grader/course/problems/mlp.py", layout) == "course/problems"
    assert grading_path.proposed_room("grader/course/checks/macros.py", layout) == "course/checks"
    assert grading_path.proposed_room("grader/course/spec.py", layout) == "course"
    assert grading_path.proposed_room("grader/course/__init__.py", layout) == "course"
    assert grading_path.proposed_room("grader/backends/opencl.py", layout) == "backends"
    assert grading_path.proposed_room("lab/batch/__init__.py", layout) == "lab/batch"  # no name matches: its own room
    assert grading_path.proposed_room("grader/pipeline.py", layout) == "grader"


def test_the_tracer_records_first_calls_and_leaves_imports_out(tmp_path):
    project, site, traces = tmp_path / "project", tmp_path / "site", tmp_path / "traces"
    (project / "lab").mkdir(parents=True)
    site.mkdir()
    traces.mkdir()
    (project / "lab" / "__init__.py").write_text("")
    (project / "lab" / "table.py").write_text(
        "def build():\n    return 1\n\n"
        "TABLE = build()  # run while importing: not on the path\n\n"
        "def helper():\n    return 2\n\n"
        "def used():\n    return helper()\n")
    (site / "sitecustomize.py").write_text(
        grading_path.TRACER.replace("{packages!r}", repr(grading_path.PACKAGES)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(site)]),
           "LAB_PATH_TRACE": str(traces), "LAB_PATH_TRACE_ROOT": str(project)}
    process = subprocess.Popen([sys.executable, "-c", "import lab.table as t; t.used(); t.used()"],
                               cwd=project, env=env)
    assert process.wait(timeout=60) == 0
    (path,) = grading_path.read_traces(traces, process.pid)
    assert path.role == "parent"
    assert path.functions == (("lab/table.py", "used"), ("lab/table.py", "helper"))


def test_idle_and_grading_workers_are_told_apart(tmp_path):
    (tmp_path / "100.trace").write_text("# ppid 1\nlab/cli/grade.py\tgrade\n")
    (tmp_path / "101.trace").write_text("# ppid 100\ngrader/worker.py\tmain\nlab/problems/transpose.py\tinputs\n")
    (tmp_path / "102.trace").write_text("# ppid 100\ngrader/worker.py\tmain\nlab/problems/base.py\tf\n")
    (tmp_path / "103.trace").write_text("# ppid 7\ngrader/worker.py\tmain\n")  # another command's
    roles = [(p.pid, p.role) for p in grading_path.read_traces(tmp_path, 100)]
    assert roles == [(100, "parent"), (101, "worker"), (102, "idle worker")]


def test_times_and_dates_are_the_same_and_a_changed_hint_is_not(tmp_path):
    places = {"/tmp/x/first": "<OUT>"}

    def lines(name: str, text: str) -> list[str]:
        (tmp_path / name).write_text(text)
        return compare_tool.normalised_lines(tmp_path / name, places)

    one = {"duration_s": 1.5, "phases": {"startup": 0.1}, "batch": {"graded_at": "2026-11-26T17:56:54+00:00"},
           "hints": {"wrong": "look at the stride"}, "output": "graded in 2.5 s at /tmp/x/first/a"}
    two = {**one, "duration_s": 2.5, "phases": {"startup": 0.3}, "batch": {"graded_at": "2026-11-27T01:00:00+00:00"},
           "output": "graded in 3.1 s at /tmp/x/first/a"}
    assert lines("a.json", json.dumps(one)) == lines("b.json", json.dumps(two))
    changed = {**one, "hints": {"wrong": "look at the block offset"}}
    assert lines("a.json", json.dumps(one)) != lines("c.json", json.dumps(changed))
    assert (lines("a.html", "<b>20.9</b>submissions per minute; compiling 4.1 s (55.8%)")
            == lines("b.html", "<b>16.9</b>submissions per minute; compiling 3.9 s (53.1%)"))
    assert lines("a.csv", "alice,10\n") != lines("b.csv", "alice,70\n")
