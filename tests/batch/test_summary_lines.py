"""The class summary says what its numbers are: a mean over the final grades says over how many
where some are pending (on a CPU every correct kernel is pending), and the terminal's table
fits a narrow terminal with every cell whole. No device needed."""

from __future__ import annotations

import io

from rich.console import Console

from grader.results import FailureKind
from lab.batch.failures import Failure
from lab.batch.html import render_summary_html
from lab.batch.keys import batch_options
from lab.batch.outcome import Outcome
from lab.batch.summary import BatchStats, summarize
from lab.cli import batch_common
from tests.conftest import catalog

STAGE = "reduce_sequential"


def outcome(student: str, status: str, score: int | None, failure: Failure | None = None) -> Outcome:
    return Outcome(student, STAGE, f"{student}/{STAGE}.cl", status, score, 100, failure, None, None, None, False,
                   "Test CPU", "cpu", 1.0, True, {})


def class_summary(outcomes: list[Outcome]):
    stats = BatchStats(len(outcomes), len(outcomes), 0, 0, 6.0, 5.0, (), batch_options())
    return summarize([catalog().get(STAGE)], [o.student for o in outcomes], outcomes, [], stats)


def test_the_mean_says_it_is_over_the_final_grades_where_some_are_pending():
    cpu = class_summary([outcome("ann", "pending", 70), outcome("bob", "pending", 70), outcome("cy", "failed", 10)])
    assert cpu.stages[0].mean_text == "10% of 1 final"
    assert class_summary([outcome("ann", "pending", 70)]).stages[0].mean_text == "- (all pending)"
    gpu = class_summary([outcome("ann", "passed", 100), outcome("bob", "failed", 10)])
    assert gpu.stages[0].mean_text == "55%"


def test_the_terminal_table_fits_80_columns_and_leaves_out_empty_columns(monkeypatch, tmp_path):
    out = io.StringIO()
    monkeypatch.setattr(batch_common, "console", Console(file=out, width=80, highlight=False))
    batch_common.print_summary(
        class_summary([outcome("ann", "pending", 70), outcome("bob", "pending", 70), outcome("cy", "failed", 10)]),
        tmp_path)
    text = out.getvalue()
    assert "…" not in text and "10% of 1 final" in text
    assert "pending" in text and "speedup" not in text and "no grade" not in text  # no speedup on a CPU
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80


def test_the_summary_page_says_the_mean_and_that_a_handout_was_not_accepted():
    handout = Failure("compiles", FailureKind.UNCHANGED_HANDOUT, "unchanged handout",
                      "this file is the skeleton of reduce_sequential as handed out")
    page = render_summary_html(class_summary([outcome("ann", "pending", 70),
                                              outcome("bob", "failed", 0, handout)]))
    assert "0% of 1 final" in page
    assert "<td>accepted</td>" in page and "<td>compiles</td>" not in page
