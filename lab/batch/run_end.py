"""The end of a class run: its statistics, then the class files (gradebook, summary, the
not-graded lists, the similarity check, the LMS files), written once every submission has a
result or a note that it has none. One end for every kind of run: `lab batch run` at the end
of its gradings (RunEnd.of_local), and a Slurm run's final job, or its submitting command when
there is nothing to grade (lab.batch.cluster_gather.Gathered.run_end)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.course.catalog import Catalog
from grader.grade_options import GradeOptions
from grader.results import FailureKind
from lab.batch.layout import Layout
from lab.batch.lms_outputs import LmsOptions
from lab.batch.outcome import Outcome
from lab.batch.outputs import ClassResults, write_class_outputs
from lab.batch.plan import Plan
from lab.batch.runner import RunResult
from lab.batch.store import ResultStore
from lab.batch.summary import BatchStats, add_up_phases


@dataclass(frozen=True)
class RunEnd:
    """How a class run ended, as its class files need it."""

    outcomes: tuple[Outcome, ...]  # every submission of the class: a result, or a note that it has none
    this_run: tuple[Outcome, ...]  # those this run recorded: their durations and phases are its time
    graded_now: int  # of `this_run`, the gradings this run set out to do (not "no device here" notes)
    up_to_date: int  # results kept from earlier runs
    elapsed_s: float  # the run's wall time (0: not known)
    workers: tuple[str, ...]  # what graded, one line each (the devices, or the cluster's shares)

    @staticmethod
    def of_local(plan: Plan, result: RunResult, workers: Sequence[str]) -> RunEnd:
        """The end of a run on this machine (lab.batch.runner): the results kept by the plan and
        those the run recorded, in student and stage order."""
        planned = {job.submission.relative for job in plan.to_grade}
        return RunEnd(
            outcomes=tuple(sorted([*plan.up_to_date, *result.outcomes], key=lambda o: (o.student, o.stage))),
            this_run=result.outcomes,
            graded_now=sum(o.file in planned for o in result.outcomes),
            up_to_date=len(plan.up_to_date),
            elapsed_s=result.elapsed_s,
            workers=tuple(workers),
        )

    def stats(self, layout: Layout, options: GradeOptions, unsandboxed: str = "") -> BatchStats:
        """The run's statistics, as the summary shows them, for the class `layout`. `unsandboxed`:
        why the students' code ran without the sandbox ("" where it ran in it, or where the run
        cannot tell)."""
        return BatchStats(
            submissions=len(layout.submissions),
            graded_now=self.graded_now,
            up_to_date=self.up_to_date,
            could_not_grade=sum(not o.graded for o in self.outcomes),
            elapsed_s=self.elapsed_s,
            grading_s=sum(o.duration_s for o in self.this_run),
            workers=self.workers,
            options=options,
            phase_s=add_up_phases(self.this_run),
            unsandboxed=unsandboxed,
            in_session=sum(o.timed_with > 0 for o in self.this_run),
        )

    @property
    def grader_errors(self) -> int:
        """How many submissions have no grade because the grader failed on them (the next run
        grades them again), as opposed to having no device for their backend."""
        return sum(1 for o in self.outcomes if not o.graded and o.failure is not None
                   and o.failure.kind == FailureKind.GRADER_ERROR)


@dataclass(frozen=True)
class FinishedRun:
    """A class run once its class files are written."""

    end: RunEnd
    stats: BatchStats
    results: ClassResults  # what the class files were rendered from (the summary, the LMS view)


def finish_run(store: ResultStore, catalog: Catalog, layout: Layout, end: RunEnd, options: GradeOptions,
               lms: LmsOptions | None = None, unsandboxed: str = "") -> FinishedRun:
    """Write the class files of a run that ended as `end` into `store` (the caller holds its
    lock). `layout`: the class as read (every submission of it is in `end.outcomes`); `lms`: the
    LMS files asked for, if any. Raises OSError where a file cannot be written."""
    stats = end.stats(layout, options, unsandboxed)
    return FinishedRun(end, stats, write_class_outputs(store, catalog, layout, end.outcomes, stats, lms, unsandboxed))
