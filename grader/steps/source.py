"""Read and check the source, in the parent, before any process compiles or runs it: refuse
what cannot be a submission or is a kernel the course handed out unchanged; find barriers
that only some threads reach (which fail correctness on every device, whatever a device makes
of them), and reads of shared memory with no barrier after other threads' stores (which explain
a failure, whatever form it took on the device)."""

from __future__ import annotations

from pathlib import Path

from grader.results import FailureKind, SourceResult
from lab.backends import registry
from lab.catalog import Catalog
from lab.divergent_barriers import find_divergent_barriers
from lab.handouts import Handout, find_handout
from lab.missing_barriers import find_unsynced_reads
from lab.source_checks import SubmissionError, check_source
from lab.spec import Spec


def check_submission_source(spec: Spec, source: str, backend: str, filename: str,
                            catalog: Catalog | None = None) -> SourceResult:
    """`catalog`: the course whose handed-out kernels an unchanged copy is refused as (none: not looked for)."""
    try:
        check_source(source, backend, spec.kernels, spec.allowed_headers, filename,
                     dynamic_shared=spec.dynamic_shared is not None)
    except SubmissionError as error:
        return SourceResult(refused=str(error))
    if catalog is not None:
        handout = _handout(catalog, spec, source, backend)
        if handout is not None:
            return SourceResult(refused=unchanged_message(spec, handout), failure=FailureKind.UNCHANGED_HANDOUT)
    barrier = registry.by_name(backend).syntax.barrier
    return SourceResult(divergent_barriers=tuple(found.message() for found in find_divergent_barriers(source)),
                        unsynced_reads=tuple(found.message(barrier) for found in find_unsynced_reads(source)))


def _handout(catalog: Catalog, spec: Spec, source: str, backend: str) -> Handout | None:
    suffix = registry.by_name(backend).suffix
    references: dict[str, Path] = {}
    for stage in catalog.ids():
        references[stage] = catalog.reference_file(stage, suffix)
    return find_handout(source, suffix, spec.id, spec.skeleton(suffix), references)


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
