"""The class after a cluster run, as the final job writes it: every submission's outcome read
from the results store, what no task finished (the next run grades it), and which devices
graded which share of the class.

A submission whose result is not up to date once every array task has ended gets an outcome
that says so ("not graded yet") and no grade; nothing is written to its folder, so the next
run grades it and a result from an earlier run is never overwritten by that note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from grader import GRADER_VERSION
from grader.course.catalog import Catalog
from grader.grade_options import GradeOptions
from grader.results import FailureKind
from grader.scoring import not_graded
from lab.batch.cluster_plan import Fingerprints, fresh_anywhere
from lab.batch.layout import Submission
from lab.batch.outcome import Outcome, outcome_of
from lab.batch.plan import submission_digest
from lab.batch.run_end import RunEnd
from lab.batch.store import ResultStore
from lab.batch.stored import BatchInfo, StoredResult

LOST = ("not graded yet: the Slurm array task that had it ended first (node failure, time limit, "
        "preemption or scancel)")
NEW = "not graded yet: new or changed since the Slurm run was submitted"
RERUN = "Rerun the same `lab batch slurm` command: it grades what is left."


@dataclass(frozen=True)
class Share:
    """The submissions one device model graded."""

    device: str
    kind: str  # gpu | cpu | ...
    nodes: tuple[str, ...]  # where cluster tasks recorded it
    count: int

    def describe(self) -> str:
        where = f" on {', '.join(self.nodes)}" if self.nodes else ""
        return f"{self.device} ({self.kind}){where}: {self.count} submission{'s' if self.count != 1 else ''}"


@dataclass(frozen=True)
class Gathered:
    """The class as a cluster run left it in the results store."""

    outcomes: tuple[Outcome, ...]  # every submission of the layout, in its order
    graded_now: tuple[Outcome, ...]  # graded by this run
    left: tuple[str, ...]  # submissions (paths inside SUBMISSIONS) no task of this run finished
    shares: tuple[Share, ...]  # by device model, most submissions first

    def run_end(self, how: str, elapsed_s: float) -> RunEnd:
        """The run's end, for its class files (lab.batch.run_end): `how` it ran, in one line,
        before the shares of the device models that graded it."""
        return RunEnd(outcomes=self.outcomes, this_run=self.graded_now, graded_now=len(self.graded_now),
                      up_to_date=len(self.outcomes) - len(self.graded_now) - len(self.left), elapsed_s=elapsed_s,
                      workers=(how, *(share.describe() for share in self.shares)))


def _run_of(stored: StoredResult) -> str:
    return stored.slurm.run if stored.slurm is not None else ""


def _not_graded_yet(catalog: Catalog, sub: Submission, why: str) -> Outcome:
    report = not_graded(catalog.get(sub.stage), why, FailureKind.GRADER_ERROR, file=sub.relative, backend=sub.backend,
                        grader_version=GRADER_VERSION, note=RERUN)
    batch = BatchInfo(sub.student, sub.stage, sub.relative, graded=False)
    return outcome_of(sub, StoredResult(report, batch), graded_now=False)


def gather(submissions: Sequence[Submission], catalog: Catalog, store: ResultStore, options: GradeOptions,
           run_id: str, in_run: set[str]) -> Gathered:
    """`in_run`: the submissions (paths inside SUBMISSIONS) the run was given to grade."""
    fingerprint = Fingerprints(catalog)
    outcomes: list[Outcome] = []
    now: list[Outcome] = []
    left: list[str] = []
    devices: Counter[tuple[str, str]] = Counter()
    nodes: dict[tuple[str, str], set[str]] = {}
    for sub in submissions:
        digest = submission_digest(sub)
        data = fresh_anywhere(store, sub, fingerprint(sub), options, digest)
        if data is None:
            stored = store.load(sub)
            batch = stored.batch if stored is not None else None
            if stored is not None and batch is not None and digest is not None \
                    and batch.submission_sha256 == digest and not batch.graded and _run_of(stored) == run_id:
                data = stored  # this run's verdict that it cannot be graded here (no device, ...)
        if data is None:
            left.append(sub.relative)
            outcomes.append(_not_graded_yet(catalog, sub, LOST if sub.relative in in_run else NEW))
            continue
        graded_now = _run_of(data) == run_id
        outcome = outcome_of(sub, data, graded_now=graded_now)
        outcomes.append(outcome)
        if graded_now:
            now.append(outcome)
        if outcome.graded:
            model = (outcome.device, outcome.device_kind)
            devices[model] += 1
            node = data.slurm.node if data.slurm is not None else ""
            if node:
                nodes.setdefault(model, set()).add(node)
    shares = tuple(Share(device, kind, tuple(sorted(nodes.get((device, kind), ()))), count)
                   for (device, kind), count in sorted(devices.items(), key=lambda item: (-item[1], item[0])))
    return Gathered(tuple(outcomes), tuple(now), tuple(left), shares)
