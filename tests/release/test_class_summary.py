"""The class summary counts, per stage, the submissions refused as a copy of its reference (the
terminal's and the HTML page's), naming no student. No device needed."""

from __future__ import annotations

import io

from rich.console import Console

from grader.batch.failures import Failure
from grader.batch.html import render_summary_html
from grader.results import FailureKind
from lab.cli import batch_common
from tests.batch.test_summary_lines import class_summary, outcome

COPY = Failure("compiles", FailureKind.REFERENCE_COPY, "this file is the reference solution",
               "this file is the reference solution of reduce_sequential, unchanged apart from whitespace, "
               "comments and names")


def test_the_summary_counts_the_reference_copies(tmp_path, monkeypatch) -> None:
    summary = class_summary([outcome("ann", "failed", 0, COPY), outcome("bob", "failed", 0, COPY),
                             outcome("cy", "pending", 70)])
    assert summary.stages[0].reference_copies == 2
    page = render_summary_html(summary)
    assert "2 submissions refused as a copy of this stage's reference" in page
    assert "ann" not in page and "bob" not in page
    out = io.StringIO()
    monkeypatch.setattr(batch_common, "console", Console(file=out, width=100, highlight=False))
    batch_common.print_summary(summary, tmp_path)
    assert "refused as a copy of the stage's reference: reduce_sequential 2" in " ".join(out.getvalue().split())


def test_no_line_where_there_is_no_copy() -> None:
    summary = class_summary([outcome("cy", "pending", 70)])
    assert summary.stages[0].reference_copies == 0
    assert "copy of this stage's reference" not in render_summary_html(summary)
