"""The class outputs at the top of RESULTS, written atomically when a batch completes:
gradebook.csv, summary.html, not_graded.csv and not_graded.json; and the similarity check's
similarity.html and similarity.csv (for the instructor: they name students).

Every class file's name ends in one of lab.sinks.RESULTS_FILE_SUFFIXES (.csv, .html, .json),
and no student's results folder ever does (lab.sinks.for_path_component): a student folder
named like a class file is graded like any other, and a new class file must keep to them."""

from __future__ import annotations

from collections.abc import Sequence

from grader.batch.gradebook import render_gradebook
from grader.batch.html import render_summary_html
from grader.batch.layout import Layout
from grader.batch.not_graded import render_not_graded_csv, render_not_graded_json
from grader.batch.outcome import Outcome
from grader.batch.similarity import compare_class
from grader.batch.similarity_report import render_similarity_csv, render_similarity_html
from grader.batch.store import ResultStore
from grader.batch.summary import BatchStats, ClassSummary, summarize
from lab.catalog import Catalog

GRADEBOOK, SUMMARY, NOT_GRADED_CSV, NOT_GRADED_JSON = (
    "gradebook.csv", "summary.html", "not_graded.csv", "not_graded.json")
SIMILARITY_HTML, SIMILARITY_CSV = "similarity.html", "similarity.csv"


def write_class_outputs(store: ResultStore, catalog: Catalog, layout: Layout,
                        outcomes: Sequence[Outcome], stats: BatchStats) -> ClassSummary:
    """Write the class files; return the summary they show. Raises OSError."""
    present = {o.stage for o in outcomes}
    stages = [spec for spec in catalog.stages if spec.id in present]
    summary = summarize(stages, layout.students, outcomes, layout.not_graded, stats)
    store.write_class_file(NOT_GRADED_CSV, render_not_graded_csv(layout.not_graded))
    store.write_class_file(NOT_GRADED_JSON, render_not_graded_json(layout.not_graded))
    store.write_class_file(GRADEBOOK, render_gradebook(layout.students, [s.id for s in stages], outcomes,
                                                       late=None if layout.kind == "folders" else layout.late))
    similarity = compare_class(catalog, layout.submissions)
    store.write_class_file(SIMILARITY_CSV, render_similarity_csv(similarity))
    store.write_class_file(SIMILARITY_HTML, render_similarity_html(similarity))
    store.write_class_file(SUMMARY, render_summary_html(summary, similarity))
    return summary
