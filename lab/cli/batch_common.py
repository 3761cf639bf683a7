"""What `lab batch`'s commands share (grading here, or through Slurm): the grading options and
the backends they take, the folder checks, SIGTERM as an interrupt, and what the terminal says
at the end of a class run (the summary, then why some submission has no grade)."""

from __future__ import annotations

import signal
import statistics
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from rich.table import Table

from grader.course.sinks import for_terminal
from grader.grade_options import GradeOptions
from lab.batch.html import duration_text
from lab.batch.keys import batch_options
from lab.batch.layout import Layout
from lab.batch.outputs import GRADEBOOK, SIMILARITY_HTML, SUMMARY
from lab.batch.run_end import FinishedRun
from lab.batch.summary import ClassSummary, unsandboxed_line
from lab.cli.typer_app import EXIT_GRADER_ERROR, console, errors, fail, say_error

EXIT_INTERRUPTED = 130


def grading_options(no_timing: bool, cpu_timing: bool, time_limit: float, counters: bool,
                    jobs: int | None, sessions: bool = True) -> GradeOptions:
    """The batch's grading options from the command line (lab.batch.keys.batch_options), and
    --jobs checked beside them: each bad value is one line, exit 2."""
    if time_limit <= 0:
        fail("--time-limit must be positive")
    if jobs is not None and jobs < 1:
        fail("--jobs must be at least 1")
    return batch_options(timing=not no_timing, run_limit_s=time_limit, cpu_timing=cpu_timing, counters=counters,
                         sessions=sessions)


def check_folders(submissions: Path, out: Path) -> None:
    sub, res = submissions.resolve(), out.resolve()
    if res == sub or sub in res.parents:
        fail(f"--out {out}: put the results outside SUBMISSIONS (it would be read as a student's folder)")
    if res in sub.parents:
        fail(f"--out {out}: SUBMISSIONS is inside it; put the results in a folder of their own")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: is a file, not a folder")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the batch the way Ctrl-C does: in-flight gradings are dropped cleanly."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def print_summary(summary: ClassSummary, out: Path) -> None:
    table = Table(header_style="bold", box=None, title="class summary", title_justify="left")
    stages = summary.stages
    # A column that would be "0" or "-" on every row (no speedup on a CPU, nothing pending on a
    # GPU, nothing held for review) is left out: the table fits a narrow terminal, each cell whole.
    cells: dict[str, list[str]] = {
        "submitted": [str(st.submitted) for st in stages],
        "passed": [f"{st.passed} ({100 * st.pass_rate:.0f}%)" if st.pass_rate is not None else "-" for st in stages],
        "pending": [str(st.pending) for st in stages],
        "review": [str(st.review) for st in stages],
        "failed": [str(st.failed) for st in stages],
        "no grade": [str(st.not_graded) for st in stages],
        "mean": [st.mean_text for st in stages],
        "speedup": [f"{statistics.median(st.speedups):.2f}x" if st.speedups else "-" for st in stages],
    }
    shown = [name for name, column in cells.items()
             if name not in ("pending", "review", "no grade", "speedup") or any(c not in ("0", "-") for c in column)]
    table.add_column("stage", no_wrap=True)
    for name in shown:  # in a narrow terminal a cell wraps between words, never cut to "…"
        table.add_column(name, justify="right", min_width=max(len(word) for word in name.split()))
    for row, st in enumerate(stages):
        table.add_row(st.stage, *(cells[name][row] for name in shown))
    console.print(table)
    copies = [f"{st.stage} {st.reference_copies}" for st in stages if st.reference_copies]
    if copies:
        console.print(f"refused as a copy of the stage's reference: {', '.join(copies)} "
                      f"(their results in {GRADEBOOK} say so)")
    stats = summary.stats
    pace = f" ({stats.per_minute:.1f} per minute)" if stats.per_minute else ""
    console.print(f"graded {stats.graded_now} in {duration_text(stats.elapsed_s)}{pace}; "
                  f"{stats.up_to_date} up to date" + (f"; {summary.not_graded_paths} paths not graded"
                                                      if summary.not_graded_paths else ""))
    split = stats.time_split()
    if split:
        console.print(f"grading time {duration_text(stats.grading_s)}: " + ", ".join(
            f"{label} {100 * share:.1f}%" for label, _, share in split))
    console.print(f"results in {for_terminal(str(out))}: {GRADEBOOK}, {SUMMARY}, {SIMILARITY_HTML}, "
                  "<student>/<stage>/")


def say_end(finished: FinishedRun, out: Path, layout: Layout, problems: Sequence[str] = ()) -> int:
    """What the terminal (or a Slurm job's log) says once a class run's files are written: the
    results that could not be written (`problems`), the class summary, the LMS files, how many
    submissions met a grader error, a class graded without the sandbox. Its exit code: 0, or
    EXIT_GRADER_ERROR (with the reason on its last line) where a submission has no grade or a
    result could not be written."""
    from lab.cli.batch_lms import report_lms

    for problem in problems:
        errors.print(f"[yellow]warning:[/yellow] {for_terminal(problem)}")
    print_summary(finished.results.summary, out)
    report_lms(layout, finished.results.lms)
    faults = finished.end.grader_errors
    if faults:
        errors.print(f"{faults} submission(s) hit a grader error (a fault of the grader or this machine, "
                     f"not a grade): rerun the same command to grade them again")
    unsandboxed = finished.stats.unsandboxed
    if unsandboxed:
        errors.print(f"[yellow]warning:[/yellow] {for_terminal(unsandboxed_line(unsandboxed))} ({SUMMARY} says so too)")
    could_not_grade = finished.stats.could_not_grade
    if could_not_grade or problems:
        say_error(f"{could_not_grade} submission(s) could not be graded: see {SUMMARY} and their feedback")
        return EXIT_GRADER_ERROR
    return 0
