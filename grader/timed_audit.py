"""Every timed launch does the work: fresh input values before each timed launch of every kernel,
and each timed launch of the submission checked against the reference kernel on the same values.

A kernel that remembers its inputs (by buffer, by value, per block or per grid), counts its
launches, stashes a result in its own input, detects that it is being timed, or copies another
kernel's output out of a neighbouring buffer has nothing to gain: no two timed launches see the
same input values, no two kernels of a round see the same values either, and any timed launch
whose output is wrong, whose input it changed or whose guard bands it wrote is a failed check,
with the launch named. The checks run between timed launches and are never timed.

Used where the benchmark's inputs are made on the device (`Context.inputs_on_device`) and the
problem says how close an output must be to the reference kernel's
(`reference_agreement.compares_with_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.correctness import CaseBuffers
from grader.reference_agreement import agrees, oracle_verdict
from grader.results import CaseResult, FailureKind
from lab.backends.base import Backend


class TimedLaunchWrong(Exception):
    """A timed launch of the submission did not do its work; `result` says how."""

    def __init__(self, result: CaseResult):
        super().__init__(result.message)
        self.result = result


@dataclass(frozen=True)
class Queued:
    """A comparison queued on the device after a timed launch (LaunchAudit.check_submission)."""

    launch: int  # the submission's timed launch it checks, from 1
    name: str  # the buffer compared
    is_input: bool  # an input compared with its pristine copy (else an output with the reference's)
    count: int  # elements compared


@dataclass
class LaunchAudit:
    """Fresh inputs for every timed launch, and the check of each of the submission's.

    `roles`: grader.timing.TimedRole by role, "submission" and "reference" among them;
    `rng`: where the seeds come from (the grading's own generator). Where the problem compares
    outputs element by element, the comparisons are queued on the device and their counts read
    back every `capacity` launches and at `settle()`; elsewhere each launch's outputs are read
    back and compared on the host at once."""

    backend: Backend
    problem: Any
    ops: Any  # grader.device_ops.DeviceOps
    roles: dict[str, Any]
    rng: np.random.Generator
    label: str  # the benchmark case, as the report names it
    capacity: int = 64  # launches whose comparisons are queued before they are read
    checked: int = 0  # the submission's timed launches checked so far
    _seed: int = 0  # the submission's inputs' seed, for the check after its launch
    _tally: Any = None  # grader.device_ops.Tally, made on first use
    _queued: list[Queued] = field(default_factory=list)

    def fresh_inputs(self, role: str, placement: int) -> None:
        """New input values for `role`'s next timed launch, from a seed no other launch uses."""
        seed = int(self.rng.integers(1 << 62))
        self.roles[role].placements[placement].refill(self.ops, seed)
        if role == "submission":
            self._seed = seed

    def check_submission(self, placement: int) -> None:
        """After the submission's timed launch on `placement`: the reference runs on the same
        input values (refilled into its own buffers), then the submission's inputs and outputs
        are compared with the reference's. Raises TimedLaunchWrong on a finding (where the
        comparisons are queued: when they are read)."""
        self.checked += 1
        own: CaseBuffers = self.roles["submission"].placements[placement]
        witness = self.roles["reference"]
        pristine: CaseBuffers = witness.placements[placement]
        pristine.refill(self.ops, self._seed)
        pristine.reset_outputs()
        witness.run(self.backend, placement=placement)
        elementwise = hasattr(self.problem, "reference_tolerance")
        self._queue(own, pristine, outputs=elementwise)
        if not elementwise and not agrees(self.problem, self.ops, own, pristine):
            self._read()  # a changed input explains wrong outputs first
            verdict = oracle_verdict(self.problem, own)
            if not verdict.ok:
                self._fail(FailureKind.BENCHMARK_WRONG, f"timed launch {self.checked}, on fresh inputs: "
                           f"{verdict.message}", verdict.details)

    def settle(self) -> None:
        """Read what is queued, and every placement's guard bands; raises TimedLaunchWrong on
        the first finding. Frees the device record."""
        try:
            self._read()
            for number, own in enumerate(self.roles["submission"].placements):
                hit = own.guards_hit()
                if hit:
                    self._fail(FailureKind.OUT_OF_BOUNDS, f"a timed launch on buffer set {number + 1}: "
                               + "; ".join(hit))
        finally:
            if self._tally is not None:
                self._tally.release()
                self._tally = None

    def _queue(self, own: CaseBuffers, pristine: CaseBuffers, outputs: bool) -> None:
        """Queue the comparison of every input with its pristine copy and, with `outputs`, of
        every output with the reference's (the problem's reference_tolerance)."""
        wanted = [(name, True, guarded.inner, pristine.guarded_inputs[name][1].inner, guarded.count, 0.0, 0.0)
                  for name, (_, guarded) in own.guarded_inputs.items()]
        if outputs:
            tolerance = self.problem.reference_tolerance(own.setup)
            wanted += [(name, False, guarded.inner, pristine.outputs[name].inner, guarded.count, *tolerance[name])
                       for name, guarded in own.outputs.items()]
        if self._tally is None:
            self._tally = self.ops.tally(self.capacity * len(wanted))
        elif len(self._queued) + len(wanted) > self._tally.slots:
            self._read()
        for name, is_input, got, want, count, rtol, atol in wanted:
            self.ops.compare_into(self._tally, len(self._queued), got, want, count, rtol, atol)
            self._queued.append(Queued(self.checked, name, is_input, count))

    def _read(self) -> None:
        if not self._queued:
            return
        found = self._tally.read([q.count for q in self._queued])
        queued, self._queued = self._queued, []
        self._tally.clear()
        for q, comparison in zip(queued, found):
            if comparison.ok:
                continue
            if q.is_input:
                self._changed(q.launch, [q.name])
            never = f" ({comparison.unwritten} never written)" if comparison.unwritten else ""
            self._fail(FailureKind.BENCHMARK_WRONG,
                       f"timed launch {q.launch}, on fresh inputs: {comparison.mismatches} of {q.count} "
                       f"elements of `{q.name}` differ from the reference kernel's on the same inputs{never}",
                       {"mismatches": comparison.mismatches, "unwritten": comparison.unwritten,
                        "indices": list(comparison.indices)})

    def _changed(self, launch: int, names: list[str]) -> None:
        listed = ", ".join(f"`{name}`" for name in names)
        self._fail(FailureKind.INPUT_MODIFIED, f"timed launch {launch} changed its input {listed}: inputs "
                   f"are read-only, and every launch computes its output from them alone")

    def _fail(self, kind: FailureKind, message: str, details: dict[str, Any] | None = None) -> None:
        raise TimedLaunchWrong(CaseResult(f"timed launches at the benchmark size ({self.label})", False, kind,
                                          message, dict(details or {}), benchmark_size=True))
