"""A submission's life on the server: queued, grading, then done (a report) or failed (the
grader could not grade it: a fault of the grader or the machine, never the student's grade)."""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    QUEUED = "queued"  # stored, waiting for a device
    GRADING = "grading"  # a lane took it; a restart puts it back in the queue
    DONE = "done"  # graded: its report is stored
    FAILED = "failed"  # the grader could not grade it; `error` says why (an instructor may regrade)

    @property
    def finished(self) -> bool:
        return self in (State.DONE, State.FAILED)


class Mark(StrEnum):
    """An instructor's mark on a graded submission."""

    HELD = "held"  # held for review: shown, not counted until the mark is lifted
    CHEATED = "cheated"  # kept and shown, never counted


MARK_NOTE_LIMIT = 1000  # characters of an instructor's note on a mark (the API's and the page's form)


class Role(StrEnum):
    STUDENT = "student"  # sees only their own submissions
    INSTRUCTOR = "instructor"  # sees every submission, may regrade
    WORKER = "worker"  # a grading machine: takes submissions to grade, sees nothing else
    GRADER = "grader"  # an autograder (Gradescope's): submits a named student's file and reads that
    # submission's result, nothing else
