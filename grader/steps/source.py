"""Read and check the source, in the parent, before any process compiles or runs it: refuse
what cannot be a submission, and find barriers that only some threads reach (which fail
correctness on every device, whatever a device makes of them)."""

from __future__ import annotations

from grader.results import SourceResult
from lab.divergent_barriers import find_divergent_barriers
from lab.source_checks import SubmissionError, check_source
from lab.spec import Spec


def check_submission_source(spec: Spec, source: str, backend: str, filename: str) -> SourceResult:
    try:
        check_source(source, backend, spec.kernels, spec.allowed_headers, filename)
    except SubmissionError as error:
        return SourceResult(refused=str(error))
    return SourceResult(divergent_barriers=tuple(found.message() for found in find_divergent_barriers(source)))
