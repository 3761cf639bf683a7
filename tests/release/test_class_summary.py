"""The class summary counts, per stage, the submissions refused as a copy of its reference (the
terminal's and the HTML page's), naming no student; the similarity report (for the instructor)
names them. No device needed."""

from __future__ import annotations

import io

from rich.console import Console

from grader.results import FailureKind
from lab.batch.failures import Failure
from lab.batch.html import render_summary_html
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


def test_the_similarity_report_names_the_copies_of_the_reference(tmp_path) -> None:
    from lab.batch.layout import scan
    from lab.batch.similarity import compare_class
    from lab.batch.similarity_report import render_similarity_html
    from tests.conftest import as_submission, catalog
    from tests.release.test_release_grading import renamed

    stage = "transpose_coalesced"
    reference = catalog().reference_file(stage, ".cu").read_text(encoding="utf-8")
    for student, text in {"ann": renamed(reference), "bob": as_submission(reference),
                          "cy": catalog().reference_file(stage, ".cl").read_text(encoding="utf-8")}.items():
        suffix = ".cl" if student == "cy" else ".cu"
        (tmp_path / student).mkdir()
        (tmp_path / student / f"{stage}{suffix}").write_text(text, encoding="utf-8")
    result = compare_class(catalog(), scan(tmp_path, catalog().ids()).submissions)
    (found,) = result.stages
    assert sorted(found.reference_copies) == [f"ann/{stage}.cu", f"cy/{stage}.cl"]
    page = render_similarity_html(result)
    assert "The stage's own reference" in page and f"ann/{stage}.cu" in page and f"bob/{stage}.cu" not in page
