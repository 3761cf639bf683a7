"""Whether a submission's benchmark-size output agrees with the reference kernel's on the same
inputs, and the problem's own oracle for the message where it does not.

Outputs compared element by element are compared on the device by a kernel that sends back only
counts (the problem's `reference_tolerance`, where it gives one for the setup); others are read
back and compared on the host (the problem's `agrees_with_reference`). Only a disagreement brings the inputs to the host, for the problem's
float64 oracle, which decides and words the verdict.
"""

from __future__ import annotations

from typing import Any

from grader.correctness import CaseBuffers, explain_nans
from grader.course.problems.base import Verdict


def compares_with_reference(problem: Any) -> bool:
    """Whether the problem says how close its output must be to the reference kernel's."""
    return hasattr(problem, "reference_tolerance") or hasattr(problem, "agrees_with_reference")


def elementwise_tolerance(problem: Any, setup: Any) -> dict[str, tuple[float, float]] | None:
    """(rtol, atol) by output where the problem compares this setup's outputs with the
    reference's element by element; None where it compares them another way."""
    return problem.reference_tolerance(setup) if hasattr(problem, "reference_tolerance") else None


def agrees(problem: Any, ops: Any, own: CaseBuffers, reference: CaseBuffers) -> bool:
    """Whether every output of `own` is within the problem's tolerance of `reference`'s (both
    computed from the same input values)."""
    tolerance = elementwise_tolerance(problem, own.setup)
    if tolerance is None:
        mine, _ = own.read_outputs()
        theirs, _ = reference.read_outputs()
        return problem.agrees_with_reference(own.setup, mine, theirs).ok
    for name, guarded in own.outputs.items():
        rtol, atol = tolerance[name]
        if not ops.compare(guarded.inner, reference.outputs[name].inner, guarded.count, rtol, atol).ok:
            return False
    return True


def oracle_verdict(problem: Any, buffers: CaseBuffers, expected: Any = None) -> Verdict:
    """The problem's own oracle on the host: bounds, then the values (against `expected`, the
    problem's `expect` for these inputs, where it was computed ahead)."""
    outputs, out_of_bounds = buffers.read_outputs()
    out_of_bounds += buffers.inputs_out_of_bounds()
    if out_of_bounds:
        return Verdict(False, "; ".join(out_of_bounds))
    read_past = buffers.read_out_of_bounds(outputs)
    if read_past:
        return Verdict(False, read_past)
    if expected is not None:
        verdict = problem.check(buffers.setup, buffers.host_inputs(), outputs, expected)
    else:
        verdict = problem.check(buffers.setup, buffers.host_inputs(), outputs)
    return verdict if verdict.ok else explain_nans(verdict, outputs)
