"""A Report read back from its JSON renders as the Report itself does (terminal, HTML, JSON)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from grader.feedback import render_html, render_json
from grader.terminal import render
from lab.server.report_json import ReportJsonError, report_from_json
from tests.server.running import EXAMPLE, ROOT, STAGE

WRONG = ROOT / "reference" / STAGE / "wrong" / "reads_tile_untransposed.cl"


def terminal_text(report) -> str:
    out = io.StringIO()
    render(report, Console(file=out, width=100, color_system=None, force_terminal=False))
    return out.getvalue()


@pytest.mark.parametrize("kernel", [EXAMPLE, WRONG, Path("refused.cl")], ids=["correct", "wrong", "refused"])
def test_a_report_read_back_renders_the_same(kernel, tmp_path):
    from lab.api import grade

    if kernel.name == "refused.cl":
        kernel = tmp_path / "refused.cl"
        kernel.write_text("__kernel void not_it() {}\n")
    report = grade(STAGE, kernel)
    back = report_from_json(json.loads(render_json(report)))
    assert back.status == report.status and back.score == report.score
    assert terminal_text(back) == terminal_text(report)
    assert render_html(back) == render_html(report)
    assert render_json(back) == render_json(report)


def test_json_that_is_no_report_is_refused_in_one_line():
    with pytest.raises(ReportJsonError, match="not a report"):
        report_from_json({"status": "passed"})
