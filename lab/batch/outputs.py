"""The batch's output table: the files each result's folder holds beside result.json (each a
format of grader.outputs, rendered from the Report), and the class files at the top of RESULTS,
written atomically when a batch completes (each rendered from ClassResults: the typed outcomes
read from every stored result, the summary, the similarity check and the LMS view). An entry is
a file name and a render function; the writers below and lab.batch.store only walk the table.

The class files: gradebook.csv, summary.html, not_graded.csv and not_graded.json; the similarity
check's similarity.html and similarity.csv (for the instructor: they name students); and where
asked for, the LMS files (lab.batch.lms_outputs).

Every class file's name ends in one of grader.course.sinks.RESULTS_FILE_SUFFIXES (.csv, .html, .json),
and no student's results folder ever does (grader.course.sinks.for_path_component): a student folder
named like a class file is graded like any other, and a new class file must keep to them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.outputs import GRADESCOPE, HTML, MARKDOWN, ReportFormat
from lab.batch.gradebook import render_gradebook
from lab.batch.gradebook_formats import (
    CANVAS_FILE,
    MOODLE_FILE,
    canvas_text,
    moodle_text,
    render_roster_check,
)
from lab.batch.html import render_summary_html
from lab.batch.layout import Layout
from lab.batch.lms_outputs import ROSTER_CHECK, LmsOptions, LmsView, lms_view
from lab.batch.not_graded import render_not_graded_csv, render_not_graded_json
from lab.batch.outcome import Outcome
from lab.batch.similarity import ClassSimilarity, compare_class
from lab.batch.similarity_report import render_similarity_csv, render_similarity_html
from lab.batch.summary import BatchStats, ClassSummary, summarize

if TYPE_CHECKING:
    from lab.batch.store import ResultStore

GRADEBOOK, SUMMARY, NOT_GRADED_CSV, NOT_GRADED_JSON = (
    "gradebook.csv", "summary.html", "not_graded.csv", "not_graded.json")
SIMILARITY_HTML, SIMILARITY_CSV = "similarity.html", "similarity.csv"
FEEDBACK_MD, FEEDBACK_HTML, GRADESCOPE_RESULTS = "feedback.md", "feedback.html", "results.json"


@dataclass(frozen=True)
class ResultFile:
    """A file of each result's folder: its name and the report format it holds."""

    name: str
    format: ReportFormat


# Written in this order, before result.json (lab.batch.store).
RESULT_FILES = (ResultFile(FEEDBACK_MD, MARKDOWN), ResultFile(FEEDBACK_HTML, HTML),
                ResultFile(GRADESCOPE_RESULTS, GRADESCOPE))


@dataclass(frozen=True)
class ClassResults:
    """What the class files are rendered from."""

    stages: tuple[Spec, ...]  # those with a submission, in course order
    layout: Layout
    outcomes: tuple[Outcome, ...]  # one per graded or stored submission
    summary: ClassSummary
    similarity: ClassSimilarity
    lms: LmsView | None = None  # None: no LMS file asked for (no --gradebook, no --roster)


@dataclass(frozen=True)
class ClassFile:
    name: str
    render: Callable[[ClassResults], str | None]  # the file's text; None: not written for this class


def _gradebook(c: ClassResults) -> str:
    return render_gradebook(c.layout.students, [s.id for s in c.stages], c.outcomes,
                            late=None if c.layout.kind == "folders" else c.layout.late)


def _canvas(c: ClassResults) -> str | None:
    if c.lms is None or CANVAS_FILE not in c.lms.files:
        return None
    return canvas_text(c.lms.people, c.stages, c.lms.canvas_headers, c.outcomes)


def _moodle(c: ClassResults) -> str | None:
    if c.lms is None or MOODLE_FILE not in c.lms.files:
        return None
    return moodle_text(c.lms.people, c.stages, c.outcomes, c.lms.options.moodle_identifier)


def _roster_check(c: ClassResults) -> str | None:
    return None if c.lms is None else render_roster_check(c.lms.warnings)


# Written in this order.
CLASS_FILES = (
    ClassFile(NOT_GRADED_CSV, lambda c: render_not_graded_csv(c.layout.not_graded)),
    ClassFile(NOT_GRADED_JSON, lambda c: render_not_graded_json(c.layout.not_graded)),
    ClassFile(GRADEBOOK, _gradebook),
    ClassFile(SIMILARITY_CSV, lambda c: render_similarity_csv(c.similarity)),
    ClassFile(SIMILARITY_HTML, lambda c: render_similarity_html(c.similarity)),
    ClassFile(SUMMARY, lambda c: render_summary_html(c.summary, c.similarity)),
    ClassFile(CANVAS_FILE, _canvas),
    ClassFile(MOODLE_FILE, _moodle),
    ClassFile(ROSTER_CHECK, _roster_check),
)


def class_results(catalog: Catalog, layout: Layout, outcomes: Sequence[Outcome], stats: BatchStats,
                  lms: LmsOptions | None = None, unsandboxed: str = "") -> ClassResults:
    """The class as its files show it. `unsandboxed`: why the class's code ran without the
    sandbox ("" where it ran in it), for the LMS files' notes (the summary has it in `stats`)."""
    present = {o.stage for o in outcomes}
    stages = tuple(spec for spec in catalog.stages if spec.id in present)
    return ClassResults(stages, layout, tuple(outcomes),
                        summarize(stages, layout.students, outcomes, layout.not_graded, stats),
                        compare_class(catalog, layout.submissions),
                        lms_view(stages, layout, lms, unsandboxed) if lms is not None else None)


def write_class_files(store: ResultStore, results: ClassResults) -> tuple[str, ...]:
    """Write every class file `results` has; return their names, in the order written. Raises OSError."""
    written = []
    for entry in CLASS_FILES:
        text = entry.render(results)
        if text is not None:
            store.write_class_file(entry.name, text)
            written.append(entry.name)
    return tuple(written)


def write_class_outputs(store: ResultStore, catalog: Catalog, layout: Layout, outcomes: Sequence[Outcome],
                        stats: BatchStats, lms: LmsOptions | None = None, unsandboxed: str = "") -> ClassResults:
    """class_results, written (write_class_files); return them. Raises OSError."""
    results = class_results(catalog, layout, outcomes, stats, lms, unsandboxed)
    write_class_files(store, results)
    return results
