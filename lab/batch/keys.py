"""The cache key of a result: a hash of everything the verdict depends on.

The submission's bytes; the stage's assignment.toml and the reference kernels the grader runs
beside it (the stage's solution, the baseline stage's solution, the ceiling kernel); the
grader's version; the backend and the device's name; and the grading options (timing on or
off, the time limit, counters asked for: options_key). A result whose key differs from the
one computed now is regraded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grader import GRADER_VERSION
from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.course.checks.source_checks import SubmissionTooBig, read_submission_bytes
from grader.course.spec import Spec
from grader.grade_options import GradeOptions
from grader.pipeline import Limits

NO_DEVICE = "(no device)"
COUNTERS = "counters"  # the plugin that reads the hardware counters (grader.plugins.counters)


def batch_options(timing: bool = True, run_limit_s: float = 30.0, cpu_timing: bool = False,
                  counters: bool = False, sessions: bool = True) -> GradeOptions:
    """The GradeOptions of a batch's gradings: a fresh seed for each, `run_limit_s` the limit of
    one correctness case (--time-limit; the other limits their defaults), the counters plugin's
    option a bool (asked for or not; never None, "where this machine can", which a key could
    not say), the other plugins' their defaults; timed in timing sessions where they can be
    (`sessions`: grader.timing_session; no part of a result's key: a verdict is the same either
    way). Raises ValueError for a limit that is not positive."""
    return GradeOptions(timing=timing, cpu_timing=cpu_timing, limits=Limits(run_s=run_limit_s),
                        plugins={COUNTERS: counters}, session=sessions)


def counters_asked(options: GradeOptions) -> bool:
    """Whether the batch's gradings read the hardware counters (lab batch run --counters)."""
    return bool(options.plugin(COUNTERS))


def options_key(options: GradeOptions) -> dict[str, object]:
    """What of a batch grading's options changes its verdict, as a result's key holds it (and
    result.json's batch.options, and a Slurm run's manifest): timing, the limit of a
    correctness case, CPU timing, and the counters where they are asked for."""
    data: dict[str, object] = {"timing": options.timing, "run_limit_s": options.limits.run_s,
                               "cpu_timing": options.cpu_timing}
    if counters_asked(options):  # only when on: the keys of results graded without them stay as they were
        data["counters"] = True
    return data


def options_from_key(data: Mapping[str, Any]) -> GradeOptions:
    """The batch options that options_key wrote `data` from. Raises ValueError (a key it does
    not know, a value of the wrong type, a limit that is not positive)."""
    for name, value in data.items():
        if name not in ("timing", "run_limit_s", "cpu_timing", "counters"):
            raise ValueError(f"options: unknown option {name!r}")
        number = name == "run_limit_s"
        if isinstance(value, bool) == number or (number and not isinstance(value, int | float)):
            raise ValueError(f"options: {name} is {value!r}")
    return batch_options(**data)


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


def stage_digest(catalog: Catalog, spec: Spec, backend: BackendKind) -> str:
    """sha256 over the stage's spec and the reference kernels timed beside a submission of `backend`."""
    suffix = backend.suffix
    parts = {"assignment.toml": _digest_or_missing(spec.folder / "assignment.toml"),
             "solution": _digest_or_missing(catalog.reference_file(spec.id, suffix))}
    if spec.baseline:
        parts["baseline"] = _digest_or_missing(catalog.reference_file(spec.baseline, suffix))
    if spec.ceiling:
        parts["ceiling"] = _digest_or_missing(catalog.reference_file(spec.id, suffix, spec.ceiling))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def result_key(submission_digest: str, stage_fingerprint: str, backend: str, device_name: str,
               options: GradeOptions) -> str:
    """The key a result graded from these inputs carries (`stage_fingerprint`: stage_digest)."""
    material = {"submission": submission_digest, "stage": stage_fingerprint, "grader": GRADER_VERSION,
                "backend": backend, "device": device_name, "options": options_key(options)}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
