"""What a batch run does with each submission: nothing (its result is up to date), grade it,
or record that it cannot be graded here (no device for its backend on this run).

A submission with no device here keeps a real grade of the same bytes from an earlier run (on
a machine that had the device), even under --force: it is never replaced by "no device"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grader.course.catalog import Catalog
from grader.course.checks.source_checks import SubmissionError
from grader.course.spec import Spec
from grader.grade_options import GradeOptions
from lab.batch.devices import Pool
from lab.batch.keys import result_key, stage_digest, submission_file_digest
from lab.batch.layout import Submission
from lab.batch.outcome import Outcome, outcome_of
from lab.batch.store import ResultStore
from lab.batch.stored import StoredResult


@dataclass(frozen=True)
class Job:
    submission: Submission
    spec: Spec
    stage_fingerprint: str  # keys.stage_digest of its stage and backend


@dataclass(frozen=True)
class Unavailable:
    job: Job
    why: str  # e.g. "no CUDA device on this machine (...)"

    @property
    def device_name(self) -> str:
        """Stands for the device in the key, so the result is redone once a device is there."""
        return f"(none: {self.why})"


@dataclass(frozen=True)
class Plan:
    to_grade: tuple[Job, ...]
    up_to_date: tuple[Outcome, ...]
    unavailable: tuple[Unavailable, ...]

    @property
    def total(self) -> int:
        return len(self.to_grade) + len(self.up_to_date) + len(self.unavailable)


def submission_digest(submission: Submission) -> str | None:
    """None when the file cannot be read: its result is then never taken as up to date."""
    try:
        return submission_file_digest(submission.path)
    except (OSError, SubmissionError):
        return None


def _graded_elsewhere(store: ResultStore, sub: Submission, digest: str | None) -> StoredResult | None:
    """A real grade of exactly this file, from a run that had a device for it: a run without
    one keeps it rather than replace it with "no device here"."""
    stored = store.load(sub)
    if stored is None or stored.batch is None or digest is None:
        return None
    key = stored.cache_key
    if (stored.batch.graded and stored.batch.submission_sha256 == digest and key
            and store.fresh(sub, {key}) is not None):
        return stored
    return None


def make_plan(submissions: Iterable[Submission], catalog: Catalog, pool: Pool, store: ResultStore,
              options: GradeOptions, force: bool = False) -> Plan:
    stage_digests: dict[tuple[str, str], str] = {}
    to_grade: list[Job] = []
    fresh: list[Outcome] = []
    unavailable: list[Unavailable] = []
    for sub in submissions:
        spec = catalog.get(sub.stage)
        fingerprint = stage_digests.setdefault(
            (sub.stage, sub.backend), stage_digest(catalog, spec, sub.kind))
        job = Job(sub, spec, fingerprint)
        missing = None
        if not pool.lanes_of(sub.kind):
            missing = Unavailable(job, pool.why_missing(sub.kind) or f"no device grades {sub.backend} here")
        names = [missing.device_name] if missing else sorted(pool.device_names(sub.kind))
        digest = submission_digest(sub)
        if not force and digest is not None:
            keys = {result_key(digest, fingerprint, sub.backend, name, options) for name in names}
            data = store.fresh(sub, keys)
            if data is not None:
                fresh.append(outcome_of(sub, data, graded_now=False))
                continue
        if missing is not None:
            kept = _graded_elsewhere(store, sub, digest)
            if kept is not None:  # graded from these very bytes on a machine that had the device
                fresh.append(outcome_of(sub, kept, graded_now=False))
            else:
                unavailable.append(missing)
        else:
            to_grade.append(job)
    return Plan(tuple(to_grade), tuple(fresh), tuple(unavailable))
