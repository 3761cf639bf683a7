"""Every line of the feedback is true: a refused file is "not accepted" (not "did not compile")
on a device where nothing ran, and what a device does not report is said in words, never '?'.
Reports are built from recorded step results (no device)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from grader.backends.base import KernelResources
from grader.course.spec import load_spec
from grader.feedback import check_label, device_text, render_html, render_markdown, resources_text
from grader.report import DeviceShown
from grader.results import CompileResult, DeviceOpened, FailureKind, Grading, SourceResult
from grader.scoring import build_report
from grader.terminal import render
from tests.unit.test_spec import GOOD, write


@pytest.fixture
def spec(tmp_path):
    return load_spec(write(tmp_path, "st", GOOD.format(id="st")))


def terminal(report) -> str:
    out = io.StringIO()
    render(report, Console(file=out, width=160, highlight=False, emoji=False))
    return out.getvalue()


@pytest.mark.parametrize("failure", [FailureKind.UNCHANGED_HANDOUT, FailureKind.REFUSED_SOURCE])
def test_a_refused_file_is_not_accepted_and_nothing_ran(spec, failure):
    g = Grading(source=SourceResult(refused="this file is the skeleton of st as handed out", failure=failure))
    report = build_report(spec, g, file="st.cl", backend="opencl", seed=1, grader_version="1",
                          device=DeviceShown("Test CPU", "cpu", ran=False))
    assert check_label(report.check("compiles")) == "accepted"
    assert device_text(report) == "opencl on Test CPU (cpu), where nothing ran: the file was refused"
    shown = terminal(report)
    assert "✘ accepted" in shown and "compiles" not in shown and "refused before it ran" not in shown
    assert "| accepted | failed |" in render_markdown(report) and "<td>accepted</td>" in render_html(report)
    assert "not run: the file was refused before it was compiled" in shown


def test_a_compile_error_is_still_compiles(spec):
    g = Grading()
    g.add(DeviceOpened("Test CPU", "cpu"))
    g.add(CompileResult(False, "st.cl:3: error: expected ';'", {}))
    report = build_report(spec, g, file="st.cl", backend="opencl", seed=1, grader_version="1")
    assert check_label(report.check("compiles")) == "compiles"
    assert device_text(report) == "opencl on Test CPU (cpu)"


def test_what_a_device_does_not_report_is_said_in_words(spec):
    assert resources_text(KernelResources(registers=32, shared_bytes=4224, spill_bytes=0), "gpu") == (
        "32 registers per thread, 4224 bytes of shared memory per block, 0 bytes spilled")
    assert resources_text(KernelResources(shared_bytes=1024), "cpu") == (
        "1024 bytes of shared memory per block; registers and spills: not known (OpenCL on a CPU does not "
        "report them)")
    g = Grading()
    for result in (DeviceOpened("Test CPU", "cpu"),
                   CompileResult(True, "", {"k": {"registers": None, "shared_bytes": 0, "spill_bytes": None}})):
        g.add(result)
    report = build_report(spec, g, file="st.cl", backend="opencl", seed=1, grader_version="1")
    for text in (terminal(report), render_markdown(report), render_html(report)):
        assert "registers and spills: not known" in text and "? registers" not in text and "? B" not in text
