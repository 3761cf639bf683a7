"""The cache key of a result: a hash of everything the verdict depends on.

The submission's bytes; the stage's assignment.toml and the reference kernels the grader runs
beside it (the stage's solution, the baseline stage's solution, the ceiling kernel); the
grader's version; the backend and the device's name; and the grading options (timing on or
off, the time limit, counters asked for). A result whose key differs from the one computed
now is regraded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from grader import GRADER_VERSION
from grader.backends import registry
from grader.course.catalog import Catalog
from grader.course.checks.source_checks import SubmissionTooBig, read_submission_bytes
from grader.course.spec import Spec

NO_DEVICE = "(no device)"


@dataclass(frozen=True)
class GradingOptions:
    """The options of a grading (grader.grading.GradeOptions) that change a verdict."""

    timing: bool = True
    run_limit_s: float = 30.0
    cpu_timing: bool = False  # on a CPU device, time the kernels too (shown, never graded)
    counters: bool = False  # read the hardware counters after each grading (lab grade --counters)

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"timing": self.timing, "run_limit_s": self.run_limit_s,
                                   "cpu_timing": self.cpu_timing}
        if self.counters:  # only when on: the keys of results graded without them stay as they were
            data["counters"] = True
        return data


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read in pieces. Raises OSError."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def submission_file_digest(path: Path) -> str:
    """sha256 of a submission's bytes, read the way grading reads them (never a FIFO or a
    device, never past the size limit: grader.course.checks.source_checks.read_submission_bytes). A file over
    the limit is refused for its size whatever its bytes are: its digest is of the size alone,
    from one fstat, nothing read. Raises SubmissionError (not a regular file, unreadable)."""
    try:
        data = read_submission_bytes(path)
    except SubmissionTooBig as error:
        return hashlib.sha256(f"over the size limit: {error.size} bytes".encode()).hexdigest()
    return hashlib.sha256(data).hexdigest()


def _digest_or_missing(path: Path) -> str:
    try:
        return file_digest(path)
    except FileNotFoundError:
        return "missing"


def stage_digest(catalog: Catalog, spec: Spec, backend: str) -> str:
    """sha256 over the stage's spec and the reference kernels timed beside a submission."""
    suffix = registry.by_name(backend).suffix
    parts = {"assignment.toml": _digest_or_missing(spec.folder / "assignment.toml"),
             "solution": _digest_or_missing(catalog.reference_file(spec.id, suffix))}
    if spec.baseline:
        parts["baseline"] = _digest_or_missing(catalog.reference_file(spec.baseline, suffix))
    if spec.ceiling:
        parts["ceiling"] = _digest_or_missing(catalog.reference_file(spec.id, suffix, spec.ceiling))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def result_key(submission_digest: str, stage_fingerprint: str, backend: str, device_name: str,
               options: GradingOptions) -> str:
    """The key a result graded from these inputs carries (`stage_fingerprint`: stage_digest)."""
    material = {"submission": submission_digest, "stage": stage_fingerprint, "grader": GRADER_VERSION,
                "backend": backend, "device": device_name, "options": options.as_dict()}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
