"""Feedback from a Report: terminal (rich), Markdown and HTML (jinja2 templates), JSON.

Everything shown is computed in the report or here from it; templates only display values.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.backends.base import KernelResources
from grader.course.sinks import (
    for_json,
    for_markdown_code,
    for_markdown_inline_code,
    html_finalize,
    markdown_finalize,
)
from grader.mismatch_view import mismatch_view
from grader.report import ERROR, FAILED, PASSED, PENDING, REVIEW, SKIPPED, Check, Report
from grader.results import FailureKind

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).resolve().parent / "templates"

# What to look at when a check fails, by the kind of failure; a stage's README says more.
GENERIC_HINTS = {
    FailureKind.REFUSED_SOURCE: "A submission is one UTF-8 kernel file for this stage, with the entry point "
                                "the stage names: the reason above says what to change.",
    FailureKind.COMPILE_ERROR: "Read the first error: the line number is in your file.",
    FailureKind.WRONG: "Compare your index arithmetic with the layout in the stage's README; try the "
                       "smallest shape by hand.",
    FailureKind.OUT_OF_BOUNDS: "Some thread computes an index outside the buffer: check the bounds of each "
                               "loop and which of width/height each index is multiplied by.",
    FailureKind.READ_OUT_OF_BOUNDS: "Some thread reads outside an input: check the bounds of each loop and "
                                    "the index arithmetic of every load.",
    FailureKind.MEMORY: "The kernel or its launch needed far more memory than the buffers the stage gives it.",
    FailureKind.RACE: "Threads read shared memory before others wrote it (or after they overwrote it): put a "
                      "barrier between the writes and the reads.",
    FailureKind.INPUT_MODIFIED: "Inputs are read-only: write only to the output buffer.",
    FailureKind.REFUSED_LAUNCH: "The launch shape is fixed by the stage: make the kernel fit it.",
    FailureKind.LAUNCH_FAILED: "The device stopped the kernel: an out-of-bounds access is the usual cause.",
    FailureKind.BENCHMARK_WRONG: "Results must not depend on the size or on earlier launches: compute every "
                                 "element every time.",
    FailureKind.CRASH: "An access out of bounds crashes the grading process: check every index.",
    FailureKind.TIMEOUT: "A loop that never ends, or a barrier that only some threads reach, hangs.",
    FailureKind.DIVERGENT_BARRIER: "Keep barriers where every thread gets to them: put the `if` inside the "
                                   "barrier-separated phases, not the barrier inside the `if`.",
    FailureKind.SANITIZER: "compute-sanitizer names the line of its first finding: start there.",
    FailureKind.TOO_SLOW: "Compare your memory access pattern with the stage's idea in its README.",
    FailureKind.IMPOSSIBLE_TIME: "Every launch must compute its whole output from its inputs: the grader "
                                 "gives each timed launch new input values and checks what it wrote.",
    FailureKind.CONCEPT: "The counters beside the reference's show what differs: compare your memory access "
                         "pattern with the stage's idea in its README.",
    FailureKind.REFERENCE_COPY: "Write the stage's kernel yourself, from the skeleton and the stage's README: "
                                "`lab show <stage>` prints it.",
    FailureKind.UNCHANGED_HANDOUT: "Start from this file, but make the change the stage's README describes: "
                                   "`lab show <stage>` prints it.",
}
# A stage's own hints ([feedback] in assignment.toml) are keyed by these names.
# (A refused file gets the generic hint: a stage's compile hint speaks of compiler errors.)
SPEC_HINT_KEY = {FailureKind.COMPILE_ERROR: "compile"}


@dataclass(frozen=True)
class Bar:
    label: str
    time_ms: float
    width_pct: float
    css: str


def hint(report: Report) -> str | None:
    """The one thing to look at first, for the first failed check: the stage's own hint for
    that kind of failure where its spec gives one ([feedback] in assignment.toml)."""
    for check in report.checks:
        if check.status != FAILED or check.failure is None:
            continue
        key = SPEC_HINT_KEY.get(check.failure, check.failure.value)
        found = report.hints.get(key) or GENERIC_HINTS.get(check.failure, GENERIC_HINTS[FailureKind.WRONG])
        return in_submission_language(found.replace("<stage>", report.assignment), report.backend)
    return None


def score_text(report: Report) -> str:
    """The score as a person is told it: pending points are still to come, an ungraded
    submission has no score."""
    if report.status == ERROR or report.score is None:
        return "no score: the submission could not be graded (the reason is above)"
    pending = sum(c.max_points for c in report.checks if c.status == PENDING)
    if pending:
        names = ", ".join(c.name for c in report.checks if c.status == PENDING)
        return (f"score {report.score} / {report.max_score} so far: {names} ({pending} points) "
                f"still to be graded on a GPU")
    held = sum(c.max_points for c in report.checks if c.status == REVIEW)
    if held:
        return (f"score {report.score} / {report.max_score} so far: {held} points for speed held until "
                f"a person has looked at the kernel")
    return f"score {report.score} / {report.max_score}"


def points_text(check: Check) -> str:
    if check.status == REVIEW:
        return "held for review"
    return "to be graded" if check.status == PENDING else f"{check.points} / {check.max_points}"


def in_submission_language(text: str, backend: str) -> str:
    """A hint written in CUDA's words, in those of the submission's language (grader.course.dialect)."""
    from grader.backends import registry
    from grader.course.dialect import in_dialect

    try:
        return in_dialect(text, registry.by_name(backend).syntax)
    except ValueError:  # a backend this grader does not know: the hint as written
        return text


def bars(report: Report) -> list[Bar]:
    """Baseline, yours, reference (and the ceiling kernel) as bars scaled to the slowest."""
    perf = report.performance
    if perf is None:
        return []
    rows = [("baseline", perf.baseline_time_ms, "baseline"), ("yours", perf.time_ms, "yours"),
            ("reference", perf.reference_time_ms, "reference"),
            (perf.ceiling_name or "ceiling", perf.ceiling_time_ms, "ceiling")]
    measured = [(label, t, css) for label, t, css in rows if t]
    longest = max(t for _, t, _ in measured)
    return [Bar(label, t, 100.0 * t / longest, css) for label, t, css in measured]


def rate_text(report: Report) -> str:
    perf = report.performance
    if perf is None:
        return ""
    if perf.gflops is not None:
        return f"{perf.gflops / 1000:.2f} TFLOP/s" if perf.gflops >= 1000 else f"{perf.gflops:.1f} GFLOP/s"
    if perf.gbps is not None:
        return f"{perf.gbps:.1f} GB/s"
    return ""


def _environment(markdown: bool) -> Environment:
    """HTML templates: autoescape on and every value through grader.course.sinks.for_html; Markdown ones:
    every value through grader.course.sinks.for_markdown (code through the `code_block`/`code` filters)."""
    # jinja2 is imported here: `lab grade` shows its terminal report without it.
    from jinja2 import Environment, FileSystemLoader

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=not markdown,
                      finalize=markdown_finalize if markdown else html_finalize,
                      trim_blocks=True, lstrip_blocks=True)
    if markdown:
        env.filters["code_block"] = for_markdown_code
        env.filters["code"] = for_markdown_inline_code
    env.filters["ms"] = lambda v: "-" if v is None else f"{v:.3f} ms"
    env.filters["x"] = lambda v: "-" if v is None else f"{v:.2f}x"
    env.filters["pct"] = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    env.globals["beside_occupancy"] = _beside_occupancy
    return env


def _beside_occupancy(name: str) -> bool:
    """Whether the plugin `name` shows its section beside the occupancy (grader.plugins)."""
    from grader.plugins import named

    plugin = named(name)
    return plugin is not None and plugin.beside_occupancy


REFUSED = (FailureKind.REFUSED_SOURCE, FailureKind.UNCHANGED_HANDOUT, FailureKind.REFERENCE_COPY)


def device_text(report: Report) -> str:
    """Where it was graded: "opencl on NAME (cpu)", and that nothing ran there where the file
    was refused first."""
    name, kind = report.device_name, report.device_kind
    if kind == "none":  # no device was opened: the name says why
        return f"{report.backend}: {name}"
    if not report.device_ran:
        return f"{report.backend} on {name} ({kind}), where nothing ran: the file was refused"
    return f"{report.backend} on {name} ({kind})"


def check_label(check: Check) -> str:
    """A check's name as the feedback shows it: `compiles` is `accepted` where the file was
    refused before any compiler saw it (not a kernel file the stage takes, or a handout
    unchanged): it did not fail to compile."""
    return label_of(check.name, check.failure)


def label_of(check: str, failure: str | None) -> str:
    """check_label() for a check's name and its failure kind (a FailureKind, or its value)."""
    if check == "compiles" and failure is not None and str(failure) in {str(kind) for kind in REFUSED}:
        return "accepted"
    return check


_RESOURCES = (("registers", "registers per thread", "registers"),
              ("shared_bytes", "bytes of shared memory per block", "shared memory"),
              ("spill_bytes", "bytes spilled", "spills"))


def resources_text(resources: KernelResources, device_kind: str) -> str:
    """A kernel's registers, shared memory and spills in words; what the device did not report
    is named as such, with why, never shown as '?'."""
    known = [f"{getattr(resources, key)} {words}" for key, words, _ in _RESOURCES
             if getattr(resources, key) is not None]
    missing = [short for key, _, short in _RESOURCES if getattr(resources, key) is None]
    text = ", ".join(known)
    if missing:
        why = ("OpenCL on a CPU does not report them" if device_kind == "cpu"
               else "this device's driver does not report them")
        text += ("; " if text else "") + f"{' and '.join(missing)}: not known ({why})"
    return text


def context(report: Report) -> dict[str, Any]:
    kind = report.device_kind
    return {"r": report, "bars": bars(report), "rate": rate_text(report), "hint": hint(report),
            "resources_text": lambda res: resources_text(res, kind), "label": check_label,
            "device": device_text(report),
            "score": score_text(report), "points": points_text, "mismatch": mismatch_view(report),
            "PASSED": PASSED, "FAILED": FAILED, "SKIPPED": SKIPPED}


def render_markdown(report: Report) -> str:
    return _environment(markdown=True).get_template("report.md.j2").render(**context(report))


def render_html(report: Report) -> str:
    return _environment(markdown=False).get_template("report.html.j2").render(**context(report))


def render_json(report: Report) -> str:
    return for_json(report.to_json())


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as an ordinary file would be, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

