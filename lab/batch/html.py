"""summary.html from a ClassSummary, through templates/batch_summary.html.j2."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from jinja2 import Environment, FileSystemLoader

from grader.course.sinks import html_finalize
from grader.feedback import TEMPLATES, label_of
from lab.batch.charts import speedup_histogram, speedup_text
from lab.batch.concept_chart import concept_histogram
from lab.batch.similarity import ClassSimilarity
from lab.batch.summary import SANDBOX_ADVICE, ClassSummary

TEMPLATE = "batch_summary.html.j2"


def duration_text(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 90:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, finalize=html_finalize,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["x"] = lambda v: "-" if v is None else speedup_text(v)
    env.filters["pct"] = lambda v: "-" if v is None else f"{100 * v:.0f}%"
    env.filters["rate"] = lambda v: "-" if v is None else (f"{v:.1f}" if v < 100 else f"{v:.0f}")
    env.filters["duration"] = duration_text
    env.filters["median"] = _median
    env.filters["check_label"] = lambda reason: label_of(reason.check, reason.kind)
    return env


def render_summary_html(summary: ClassSummary, similarity: ClassSimilarity | None = None) -> str:
    """`similarity`: the similarity check's result, shown by counts only (no names) with a link
    to similarity.html; None leaves the section out."""
    charts = {
        st.stage: speedup_histogram(st.speedups, st.reference_speedup, st.required_speedup,
                                    title=f"{st.stage}: speedups of {len(st.speedups)} submissions")
        for st in summary.stages
    }
    concept_charts = {
        st.stage: concept_histogram(st.concept, title=f"{st.stage}: {st.concept.title} of "
                                    f"{st.concept.distribution.count} submissions")
        for st in summary.stages if st.concept is not None and st.concept.distribution is not None
    }
    return environment().get_template(TEMPLATE).render(s=summary, charts=charts, concept_charts=concept_charts,
                                                       similarity=similarity, sandbox_hint=SANDBOX_ADVICE)
