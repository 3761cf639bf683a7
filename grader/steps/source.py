"""Read and check the source, in the parent, before any process compiles or runs it: refuse
what cannot be a submission or is a kernel the course handed out unchanged; find barriers
that only some threads reach (which fail correctness on every device, whatever a device makes
of them), and reads of shared memory with no barrier after other threads' stores (which explain
a failure, whatever form it took on the device)."""

from __future__ import annotations

from pathlib import Path

from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.course.checks.divergent_barriers import find_divergent_barriers
from grader.course.checks.missing_barriers import find_unsynced_reads
from grader.course.checks.normalised_source import given_defines, given_names, token_digest
from grader.course.checks.source_checks import SubmissionError, check_source
from grader.course.handouts import Handout, find_handout, is_own_reference
from grader.course.spec import Spec
from grader.results import FailureKind, SourceResult


def check_submission_source(spec: Spec, source: str, backend: BackendKind, filename: str,
                            catalog: Catalog | None = None, accept_reference: bool = False) -> SourceResult:
    """`catalog`: the course whose handed-out kernels an unchanged copy is refused as, and whose
    reference for this stage is refused even with its names changed (none: not looked for).
    `accept_reference`: the file graded is the course's own reference file (the instructor's
    checkout grading it in place), not a submission."""
    try:
        check_source(source, backend, spec.kernels, spec.allowed_headers, filename,
                     dynamic_shared=spec.dynamic_shared is not None)
    except SubmissionError as error:
        return SourceResult(refused=str(error))
    if catalog is not None:
        handout = _handout(catalog, spec, source, backend)
        if handout is not None:
            return SourceResult(refused=unchanged_message(spec, handout), failure=FailureKind.UNCHANGED_HANDOUT)
        suffix = backend.suffix
        shipped = catalog.release.digests if catalog.release is not None else None
        if not accept_reference and is_own_reference(source, catalog.reference_file(spec.id, suffix), shipped,
                                                     spec.id, suffix, given_names(spec), given_defines(spec)):
            return SourceResult(refused=reference_message(spec), failure=FailureKind.REFERENCE_COPY)
    barrier = backend.syntax.barrier
    return SourceResult(divergent_barriers=tuple(found.message() for found in find_divergent_barriers(source)),
                        unsynced_reads=tuple(found.message(barrier) for found in find_unsynced_reads(source)))


def _handout(catalog: Catalog, spec: Spec, source: str, backend: BackendKind) -> Handout | None:
    """The handed-out kernel `source` is: by its source where the course holds it, else (a
    students' copy, which holds another stage's held-back reference only as a digest) by the
    digest of that reference's tokens (whitespace and comments apart, as find_handout)."""
    suffix = backend.suffix
    references: dict[str, Path] = {}
    for stage in catalog.ids():
        references[stage] = catalog.reference_file(stage, suffix)
    found = find_handout(source, suffix, spec.id, spec.skeleton(suffix), references)
    if found is not None or catalog.release is None:
        return found
    mine = token_digest(source)
    for stage, by_suffix in catalog.release.handout_digests.items():
        if stage == spec.id or references.get(stage, Path()).is_file():
            continue
        if mine and by_suffix.get(suffix) == mine:
            return Handout(stage, "reference")
    return None


def unchanged_message(spec: Spec, handout: Handout) -> str:
    """What the student sees: what the file is, and what the stage asks of it."""
    what = handout.describe(spec.id)
    words = (f"this file is {what}, unchanged apart from whitespace and comments: "
             f"{spec.id} asks for {spec.concept}")
    if spec.graded_for_speed:
        if spec.threshold is not None:
            need = f"at least {spec.threshold:g} times the reference's speedup over {spec.baseline}"
        else:
            need = f"a speedup of at least {spec.min_speedup:g}x over {spec.baseline}"
        words += f"; on a GPU your kernel must be correct and reach {need}"
    return words


def reference_message(spec: Spec) -> str:
    """What the student sees for a copy of the stage's own reference."""
    return (f"this file is the reference solution of {spec.id}, unchanged apart from whitespace, comments, "
            f"macros and names: a submission must be your own kernel ({spec.id} asks for {spec.concept})")

