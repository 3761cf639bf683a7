"""What `lab batch`'s commands share (grading here, or through Slurm): the backends they take,
the folder checks, SIGTERM as an interrupt, and the class summary printed at the end."""

from __future__ import annotations

import signal
import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from rich.table import Table

from grader.backends import registry
from grader.course.sinks import for_terminal
from lab.batch.html import duration_text
from lab.batch.outputs import GRADEBOOK, SIMILARITY_HTML, SUMMARY
from lab.batch.summary import ClassSummary
from lab.cli.app import console, fail

EXIT_INTERRUPTED = 130


def check_backend(backend: str) -> None:
    """--backend: auto or a backend's name."""
    if backend != "auto" and registry.find(backend) is None:
        fail(f"--backend must be one of auto, {', '.join(registry.names())}, not {backend!r}")


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
