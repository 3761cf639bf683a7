"""Every timed launch does the work: fresh input values before each timed launch of every kernel,
and each timed launch of the submission checked against the reference kernel on the same values.

A kernel that remembers its inputs (by buffer, by value, per block or per grid), counts its
launches, stashes a result in its own input, detects that it is being timed, or copies another
kernel's output out of a neighbouring buffer has nothing to gain: no two timed launches see the
same input values, no kernel that ran before the submission in its round saw its values (the
reference sees them only after it, as its check), and any timed launch
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

from grader.backends.base import Backend
from grader.correctness import CaseBuffers
from grader.reference_agreement import agrees, elementwise_tolerance, oracle_verdict
from grader.results import CaseResult, FailureKind


class TimedLaunchWrong(Exception):
    """A timed launch of the submission did not do its work; `result` says how."""

    def __init__(self, result: CaseResult):
        super().__init__(result.message)
        self.result = result


@dataclass(frozen=True)
class Queued:
    """A comparison queued on the device after a timed launch (LaunchAudit._compare)."""

    launch: int  # the submission's timed launch it checks, from 1
    name: str  # the buffer compared
    is_input: bool  # an input compared with its pristine copy (else an output with the reference's)
    count: int  # elements compared


@dataclass
class LaunchAudit:
    """Fresh inputs for every timed launch, and the check of each of the submission's: by the
    reference's timed launch where it follows the submission's in the round (on the same
    inputs), else by an untimed reference launch at the round's end.

    `roles`: grader.timing.TimedRole by role, "submission" and "reference" among them;
    `rng`: where the seeds come from (the grading's own generator). Inputs, and outputs where the
    problem compares them element by element, are compared on the device, their counts read
    back before the submission's next launch and at `settle()`; other outputs are read back and
    compared on the host at once."""

    backend: Backend
    problem: Any
    ops: Any  # grader.device_ops.DeviceOps
    roles: dict[str, Any]
    rng: np.random.Generator
    label: str  # the benchmark case, as the report names it
    capacity: int = 4  # launches whose comparisons the device record holds (one is queued at a time)
    checked: int = 0  # the submission's timed launches checked so far
    _seed: int = 0  # the submission's inputs' seed, for the check after its launch
    _awaiting: int | None = None  # the placement whose submission launch awaits its check
    _tally: Any = None  # grader.device_ops.Tally, made on first use
    _queued: list[Queued] = field(default_factory=list)

    def before(self, role: str, placement: int) -> None:
        """Before `role`'s timed launch on `placement`: new input values from a seed no other
        launch uses, except that the reference's launch right after the submission's in the
        round takes the submission's seed (it is then the submission's check)."""
        if role == "submission":
            self._read()  # the counts are back before the submission runs again (it could overwrite them)
        if role == "reference" and self._awaiting == placement:
            seed = self._seed
        else:
            seed = int(self.rng.integers(1 << 62))
        self.roles[role].placements[placement].refill(self.ops, seed)
        if role == "submission":
            self._seed = seed

    def after(self, role: str, placement: int) -> None:
        """After `role`'s timed launch: the submission's now awaits its check; the reference's,
        where it ran on the submission's inputs, is that check."""
        if role == "submission":
            self.checked += 1
            self._awaiting = placement
        elif role == "reference" and self._awaiting == placement:
            self._awaiting = None
            self._compare(placement)

    def end_round(self) -> None:
        """After a round whose reference ran before the submission: the reference runs again,
        untimed, on the submission's inputs (refilled into its own buffers), and is compared."""
        if self._awaiting is None:
            return
        placement, self._awaiting = self._awaiting, None
        witness = self.roles["reference"]
        pristine: CaseBuffers = witness.placements[placement]
        pristine.refill(self.ops, self._seed)
        pristine.reset_outputs()
        witness.run(self.backend, placement=placement)
        self._compare(placement)

    def _compare(self, placement: int) -> None:
        """The submission's inputs and outputs against the reference's on the same seed.
        Raises TimedLaunchWrong on a finding (where the comparisons are queued: when read)."""
        own: CaseBuffers = self.roles["submission"].placements[placement]
        pristine: CaseBuffers = self.roles["reference"].placements[placement]
        tolerance = elementwise_tolerance(self.problem, own.setup)
        self._queue(own, pristine, tolerance)
        if tolerance is None and not agrees(self.problem, self.ops, own, pristine):
            self._read()  # a changed input explains wrong outputs first
            verdict = oracle_verdict(self.problem, own)
            if not verdict.ok:
                self._fail(FailureKind.BENCHMARK_WRONG, f"timed launch {self.checked}, on fresh inputs: "
                           f"{verdict.message}", verdict.details)

    def settle(self) -> None:
        """Read what is queued; raises TimedLaunchWrong on the first finding. Frees the device
        record. (Guard bands are checked by the correctness cases and the size check.)"""
        try:
            self._read()
        finally:
            if self._tally is not None:
                self._tally.release()
                self._tally = None

    def _queue(self, own: CaseBuffers, pristine: CaseBuffers,
               tolerance: dict[str, tuple[float, float]] | None) -> None:
        """Queue the comparison of every input with its pristine copy and, with `tolerance`
        (rtol, atol by output), of every output with the reference's."""
        wanted = [(name, True, guarded.inner, pristine.guarded_inputs[name][1].inner, guarded.count, 0.0, 0.0)
                  for name, (_, guarded) in own.guarded_inputs.items()]
        if tolerance is not None:
            wanted += [(name, False, guarded.inner, pristine.outputs[name].inner, guarded.count, *tolerance[name])
                       for name, guarded in own.outputs.items()]
        if self._tally is None:
            self._tally = self.ops.tally(self.capacity * len(wanted))
        elif len(self._queued) + len(wanted) > self._tally.slots:
            self._read()
        for name, is_input, got, want, count, rtol, atol in wanted:
            # The slot zeroed after the submission's launch, just before its comparison: a launch
            # that wrote into the grader's record (far outside its buffers) cannot forge the counts.
            self.backend.fill32(self._tally.slot(len(self._queued)), 0)
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
        raise input_changed(self.label, launch, names)

    def _fail(self, kind: FailureKind, message: str, details: dict[str, Any] | None = None) -> None:
        raise launch_wrong(self.label, kind, message, details)


def launch_wrong(label: str, kind: FailureKind, message: str, details: dict[str, Any] | None = None
                 ) -> TimedLaunchWrong:
    """A timed launch's failed check at the benchmark case `label`, as a finding to raise."""
    return TimedLaunchWrong(CaseResult(f"timed launches at the benchmark size ({label})", False, kind, message,
                                       dict(details or {}), benchmark_size=True))


def input_changed(label: str, launch: int, names: list[str]) -> TimedLaunchWrong:
    """Timed launch `launch` (from 1) changed the inputs `names`."""
    listed = ", ".join(f"`{name}`" for name in names)
    return launch_wrong(label, FailureKind.INPUT_MODIFIED, f"timed launch {launch} changed its input {listed}: "
                        f"inputs are read-only, and every launch computes its output from them alone")
