"""similarity.html and similarity.csv from a ClassSimilarity: the instructor's view of the
similarity check. Unlike summary.html these name students (a pair is two students), so they
are files of their own, which summary.html links to without naming anyone.

Students' text (folder and file names, kernel source) reaches the HTML only through the
template's finalize (grader.course.sinks.for_html) and the CSV only through grader.course.sinks.for_csv_cell."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

from grader import GRADER_VERSION
from grader.course.sinks import for_csv_cell
from lab.batch.html import environment
from lab.batch.similarity import ClassSimilarity

TEMPLATE = "similarity.html.j2"
CSV_COLUMNS = ("stage", "rank", "score", "shared_fingerprints", "student_a", "file_a", "share_a",
               "student_b", "file_b", "share_b")


def pair_anchor(stage: str, rank: int) -> str:
    return f"{stage}-pair-{rank}"


def render_similarity_csv(result: ClassSimilarity) -> str:
    """One row per reported pair, best first within each stage (stages in course order)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for stage in result.stages:
        for rank, pair in enumerate(stage.pairs, 1):
            writer.writerow([stage.stage, rank, f"{pair.score:.3f}", pair.shared,
                             for_csv_cell(pair.a.source.student), for_csv_cell(pair.a.source.file),
                             f"{pair.a.share:.3f}",
                             for_csv_cell(pair.b.source.student), for_csv_cell(pair.b.source.file),
                             f"{pair.b.share:.3f}"])
    return out.getvalue()


def render_similarity_html(result: ClassSimilarity) -> str:
    env = environment()
    env.globals["anchor"] = pair_anchor
    return env.get_template(TEMPLATE).render(
        r=result, generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        grader_version=GRADER_VERSION)
