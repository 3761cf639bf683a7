"""What a cluster run grades, and which results count as up to date there.

On one machine a result is up to date when its key (lab.batch.keys) matches the key of a
device this machine has. On a cluster the node a submission lands on is Slurm's choice, and
the nodes may hold different GPU models, so a result counts as up to date when its key
matches the device it was graded on: the same bytes, stage, grader version and options,
graded on any GPU of the cluster. The speedup is fair whichever GPU it was (the baseline and
the reference are timed beside the submission, on the same GPU), so regrading it because
the next run's task landed on another model would only cost time. `--force` grades again.
A result that is not a grade (no device for its backend, the batch failed on it) is never up
to date: the next run tries again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grader.course.catalog import Catalog
from grader.grade_options import GradeOptions
from lab.batch.keys import result_key, stage_digest
from lab.batch.layout import Submission
from lab.batch.outcome import Outcome, outcome_of
from lab.batch.plan import submission_digest
from lab.batch.store import ResultStore
from lab.batch.stored import StoredResult


def graded_on(stored: StoredResult) -> set[str]:
    """The device names a stored result may have been keyed with: the report's device, and
    the name a cluster task recorded for the device it graded on."""
    names = {stored.report.device_name}
    if stored.slurm is not None:
        names.add(stored.slurm.device_name or "")
    return {n for n in names if n}


def fresh_anywhere(store: ResultStore, sub: Submission, fingerprint: str, options: GradeOptions,
                   digest: str | None) -> StoredResult | None:
    """The stored result when it is a grade of exactly these inputs, on whatever device."""
    stored = store.load(sub)
    if stored is None or digest is None or stored.batch is None or not stored.batch.graded:
        return None
    keys = {result_key(digest, fingerprint, sub.backend, name, options) for name in graded_on(stored)}
    return store.fresh(sub, keys) if keys else None


class Fingerprints:
    """keys.stage_digest for each (stage, backend), computed once."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self._known: dict[tuple[str, str], str] = {}

    def __call__(self, sub: Submission) -> str:
        key = (sub.stage, sub.backend)
        if key not in self._known:
            self._known[key] = stage_digest(self.catalog, self.catalog.get(sub.stage), sub.kind)
        return self._known[key]


@dataclass(frozen=True)
class ClusterPlan:
    to_grade: tuple[tuple[Submission, str | None], ...]  # (submission, its digest now), layout order
    up_to_date: tuple[Outcome, ...]


def make_cluster_plan(submissions: Iterable[Submission], catalog: Catalog, store: ResultStore,
                      options: GradeOptions, force: bool = False) -> ClusterPlan:
    fingerprint = Fingerprints(catalog)
    to_grade: list[tuple[Submission, str | None]] = []
    fresh: list[Outcome] = []
    for sub in submissions:
        digest = submission_digest(sub)
        data = None if force else fresh_anywhere(store, sub, fingerprint(sub), options, digest)
        if data is not None:
            fresh.append(outcome_of(sub, data, graded_now=False))
        else:
            to_grade.append((sub, digest))
    return ClusterPlan(tuple(to_grade), tuple(fresh))
