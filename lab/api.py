"""Grading from Python, for notebooks (Jupyter, Colab): `lab.grade(stage, kernel)`.

    import lab
    lab.grade("transpose_coalesced", "mine.cu")      # a file: its suffix picks the backend
    lab.grade("reduce_interleaved", source)          # kernel source, as a str

`kernel` is a file (a `pathlib.Path`, or a `str` without a line break naming one) or the
kernel's source (a `str` holding a line break). Source is written to a temporary file named
`<stage>` and its backend's suffix (`<stage>.cu`), which is what the report and the compiler's
messages call it; its backend is `backend` where given (a backend's name: "cuda"), and with
"auto" (the default) the first backend in auto's order (grader.backends.registry.by_auto_rank:
CUDA, then OpenCL) whose entry-point declaration the source holds (CUDA's `__global__`), else
the backend whose kernels run without a GPU (OpenCL: registry.without_a_device). A file's
suffix picks its backend, and `backend` may only agree with it. The device is picked as `lab
grade` picks it (`device`: an index or part of a name).

The result is the grader's Report (a NotebookReport): Jupyter shows it as the HTML feedback
`lab grade --report` writes, a plain `repr` as the terminal's report without colours. What
`lab grade` calls a usage error (an unknown stage, a missing file, no device for the backend)
raises GradeError with the one-line reason.

Importing this module costs little: numpy, jinja2, rich and the GPU libraries load when a
grading or a rendering needs them.
"""

from __future__ import annotations

import html
import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from grader.report import Report

if TYPE_CHECKING:
    from grader.backends.registry import BackendKind

FRAME_HEIGHT = 560  # pixels of the HTML report's frame until it is sized to its content


class GradeError(ValueError):
    """The grading could not start (unknown stage, missing file, no device...): one line says why."""


class NotebookReport(Report):
    """A Report that notebooks show: HTML feedback in Jupyter, plain text elsewhere."""

    @classmethod
    def of(cls, report: Report) -> NotebookReport:
        return cls(**{f.name: getattr(report, f.name) for f in fields(report) if f.init})

    def _repr_html_(self) -> str:
        """The HTML feedback, in a frame of its own: its page styles stay off the notebook's.
        Student text in it went through grader.course.sinks.for_html; the whole page is escaped once more
        as the frame's srcdoc, and the frame runs no script."""
        from grader.feedback import render_html

        page = html.escape(render_html(self), quote=True)
        title = html.escape(f"{self.assignment}: {self.status}", quote=True)
        fit = "this.style.height=(this.contentDocument.documentElement.scrollHeight+24)+'px'"
        return (f'<iframe srcdoc="{page}" title="{title}" sandbox="allow-same-origin" '
                f'style="width:100%;height:{FRAME_HEIGHT}px;border:0" onload="{fit}"></iframe>')

    def __repr__(self) -> str:
        from grader.terminal import render_text

        return render_text(self).rstrip("\n")

    __str__ = __repr__

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython's plain text (it would show a dataclass field by field)."""
        printer.text(repr(self))


def source_backend(source: str) -> BackendKind:
    """The backend whose entry-point declaration the source holds (its comments left out): the
    first such row in auto's order; where none matches, the backend whose kernels run without a
    GPU (registry.without_a_device)."""
    from grader.backends import registry
    from grader.course.checks.source_checks import strip_comments

    code = strip_comments(source)
    return next((kind for kind in registry.by_auto_rank() if kind.syntax.declaration.search(code)),
                registry.without_a_device())


def _is_source(kernel: str | os.PathLike[str]) -> bool:
    return isinstance(kernel, str) and ("\n" in kernel or "\r" in kernel)


def grade(stage: str, kernel: str | os.PathLike[str], *, backend: str = "auto", device: str | None = None,
          seed: int | None = None, timing: bool = True, cpu_timing: bool = False,
          time_limit: float = 30.0, counters: bool | None = None) -> NotebookReport:
    """Grade `kernel` (a file, or source text) as a submission for `stage`, as `lab grade` does:
    in a child process with time limits. `timing=False` checks correctness only; `cpu_timing`
    times the kernels on a CPU device too (shown, never graded); `time_limit`: seconds one
    correctness case may run; `counters`: the GPU's hardware counters, None where this machine can
    read them (the stage's lesson line), True the whole table, False none. See the module's
    docstring for how the backend is chosen."""
    from grader.backends import registry
    from grader.course.catalog import UnknownStageError, default_catalog

    asked = None if backend == "auto" else registry.find(backend)  # the name becomes its row here
    if backend != "auto" and asked is None:
        raise GradeError(f"backend must be auto or one of {', '.join(registry.names())}, not {backend!r}")
    if time_limit <= 0:
        raise GradeError("time_limit must be positive")
    catalog = default_catalog()
    if not catalog.assignments.is_dir():
        raise GradeError(f"no assignments/ folder under {catalog.root} (set LAB_COURSE_ROOT to the course folder)")
    try:
        spec = catalog.get(stage)
    except UnknownStageError as error:
        raise GradeError(str(error)) from None

    def grade_as(path: Path, chosen: BackendKind, shown_as: str) -> NotebookReport:
        return _grade_path(catalog, spec, path, chosen, shown_as=shown_as, device=device, seed=seed,
                           timing=timing, cpu_timing=cpu_timing, time_limit=time_limit, counters=counters)

    if _is_source(kernel):
        assert isinstance(kernel, str)
        chosen = asked if asked is not None else source_backend(kernel)
        with tempfile.TemporaryDirectory(prefix="lab-notebook-") as folder:
            path = Path(folder) / f"{spec.id}{chosen.suffix}"
            path.write_text(kernel, encoding="utf-8")
            return grade_as(path, chosen, path.name)
    path = Path(kernel)
    if not path.exists():
        raise GradeError(f"{path}: no such file (kernel source given as a str must hold a line break)")
    own = registry.by_suffix(path.suffix)
    if own is None:
        raise GradeError(f"{path}: a submission is a {registry.suffix_list()} file")
    if asked is not None and own != asked:
        raise GradeError(f"{path.name} is {own.language} source: it cannot run on the {asked.name} backend")
    return grade_as(path, own, str(path))


def _grade_path(catalog, spec, path: Path, kind: BackendKind, *, shown_as: str, device: str | None,
                seed: int | None, timing: bool, cpu_timing: bool, time_limit: float,
                counters: bool | None) -> NotebookReport:
    from grader.course.checks.source_checks import SubmissionError
    from grader.grading import GradeOptions, GradeRequest, Limits, grade, not_started, not_started_message

    options = GradeOptions(seed=seed, timing=timing, cpu_timing=cpu_timing, limits=Limits(run_s=time_limit),
                           plugins={"counters": counters})
    try:
        report = grade(GradeRequest(catalog, spec, path, kind, device, shown_as, options))
    except SubmissionError as error:
        raise GradeError(str(error)) from None
    refused = not_started(report)
    if refused is not None:
        raise GradeError(not_started_message(refused, kind, spec.id, device_named=bool(device)))
    return NotebookReport.of(report)
