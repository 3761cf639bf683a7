"""Grading from Python (lab.grade, lab/api.py) and the example notebook, executed as Jupyter
runs it (nbclient and ipykernel, the dev extra), on PoCL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import lab
from grader.report import Report
from lab.api import GradeError, NotebookReport, source_backend
from tests.conftest import targets

PROJECT = Path(__file__).resolve().parents[2]
NOTEBOOK = PROJECT / "examples" / "grade_in_a_notebook.ipynb"
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")


def test_import_lab_stays_light_and_grade_is_there_on_first_use():
    code = ("import sys, lab; before = set(sys.modules); lab.grade; "
            "print([m for m in ('numpy', 'jinja2', 'rich', 'typer', 'pyopencl', 'grader.pipeline') if m in before]); "
            "print([m for m in ('numpy', 'jinja2', 'pyopencl') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"]
    with pytest.raises(AttributeError):
        lab.no_such_thing  # noqa: B018


def test_source_text_is_cuda_only_with_a_global_function():
    assert source_backend("extern \"C\" __global__ void k(float *o) {}\n").name == "cuda"
    assert source_backend("__kernel void k(__global float *o) {}\n").name == "opencl"
    assert source_backend("// a comment naming __global__ is not a declaration\n__kernel void k() {}").name == "opencl"


@pytest.mark.parametrize(("stage", "kernel", "options", "words"), [
    ("reduce_interleavd", "x.cl", {}, "did you mean reduce_interleaved"),
    ("reduce_interleaved", "missing.cl", {}, "missing.cl: no such file"),
    ("reduce_interleaved", "pyproject.toml", {}, "a submission is a"),
    ("reduce_interleaved", "examples/transpose_coalesced.cu", {"backend": "opencl"}, "cannot run on the opencl"),
    ("reduce_interleaved", "__kernel void reduce() {}\n", {"backend": "metal"}, "backend must be auto"),
])
def test_what_cannot_be_graded_is_a_one_line_grade_error(monkeypatch, stage, kernel, options, words):
    monkeypatch.chdir(PROJECT)
    with pytest.raises(GradeError) as raised:
        lab.grade(stage, kernel, **options)
    assert words in str(raised.value) and "\n" not in str(raised.value)


@needs_opencl
def test_source_text_is_graded_under_the_stages_file_name_and_shown_two_ways():
    source = (PROJECT / "reference/reduce_interleaved/solution.cl").read_text()
    report = lab.grade("reduce_interleaved", source.replace("partialSum[t] += ", "partialSum[t] += 0 * "))
    assert isinstance(report, NotebookReport) and isinstance(report, Report)
    assert report.file == "reduce_interleaved.cl" and report.status == "failed"
    text = repr(report)
    assert "reduce_interleaved" in text and "\x1b" not in text and str(report) == text
    page = report._repr_html_()
    assert page.startswith("<iframe srcdoc=") and "<h1>" not in page and "&lt;h1&gt;" in page
    assert json.loads(json.dumps(report.to_json()))["file"] == "reduce_interleaved.cl"


@needs_opencl
def test_the_example_notebook_runs_and_shows_the_html_feedback(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # A kernel of this very Python, whatever `python` is on PATH.
    spec = tmp_path / "kernels" / "lab-test-python"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "lab test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="lab-test-python",
                                     resources={"metadata": {"path": str(PROJECT)}})
    client.execute()  # raises CellExecutionError for a cell that fails
    shown = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
             if output.get("output_type") == "execute_result"]
    assert len(shown) == 2
    kinds = {output["output_type"] for cell in notebook.cells for output in cell.get("outputs", [])}
    assert kinds <= {"execute_result", "stream"}, kinds  # no error, nothing rich displayed by itself
    right, wrong = (output["data"] for output in shown)
    assert right["text/html"].startswith("<iframe srcdoc=") and "PASSED" in right["text/plain"]
    assert "FAILED" in wrong["text/plain"] and "wrong" in wrong["text/plain"]
    printed = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", []))
    assert "passed 100 / 100" in printed
