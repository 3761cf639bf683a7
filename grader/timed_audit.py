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

from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.correctness import CaseBuffers
from grader.reference_agreement import agrees, changed_inputs, oracle_verdict
from grader.results import CaseResult, FailureKind
from lab.backends.base import Backend


class TimedLaunchWrong(Exception):
    """A timed launch of the submission did not do its work; `result` says how."""

    def __init__(self, result: CaseResult):
        super().__init__(result.message)
        self.result = result


@dataclass
class LaunchAudit:
    """Fresh inputs for every timed launch, and the check of each of the submission's.

    `roles`: grader.timing.TimedRole by role, "submission" and "reference" among them;
    `rng`: where the seeds come from (the grading's own generator)."""

    backend: Backend
    problem: Any
    ops: Any  # grader.device_ops.DeviceOps
    roles: dict[str, Any]
    rng: np.random.Generator
    label: str  # the benchmark case, as the report names it
    checked: int = 0  # the submission's timed launches checked so far
    _seed: int = 0  # the submission's inputs' seed, for the check after its launch

    def fresh_inputs(self, role: str, placement: int) -> None:
        """New input values for `role`'s next timed launch, from a seed no other launch uses."""
        seed = int(self.rng.integers(1 << 62))
        self.roles[role].placements[placement].refill(self.ops, seed)
        if role == "submission":
            self._seed = seed

    def check_submission(self, placement: int) -> None:
        """After the submission's timed launch on `placement`: the reference runs on the same
        input values (refilled into its own buffers), then the submission's guard bands, its
        inputs and its outputs are checked. Raises TimedLaunchWrong on the first finding."""
        self.checked += 1
        own: CaseBuffers = self.roles["submission"].placements[placement]
        witness = self.roles["reference"]
        pristine: CaseBuffers = witness.placements[placement]
        pristine.refill(self.ops, self._seed)
        pristine.reset_outputs()
        witness.run(self.backend, placement=placement)
        which = f"timed launch {self.checked}"
        hit = own.guards_hit()
        if hit:
            self._fail(FailureKind.OUT_OF_BOUNDS, f"{which}, on fresh inputs: " + "; ".join(hit))
        changed = changed_inputs(self.ops, own, pristine)
        if changed:
            names = ", ".join(f"`{name}`" for name in changed)
            self._fail(FailureKind.INPUT_MODIFIED,
                       f"{which} changed its input {names}: inputs are read-only, and every launch "
                       f"computes its output from them alone")
        if not agrees(self.problem, self.ops, own, pristine):
            verdict = oracle_verdict(self.problem, own)
            if not verdict.ok:
                self._fail(FailureKind.BENCHMARK_WRONG, f"{which}, on fresh inputs: {verdict.message}",
                           verdict.details)

    def _fail(self, kind: FailureKind, message: str, details: dict[str, Any] | None = None) -> None:
        raise TimedLaunchWrong(CaseResult(f"timed launches at the benchmark size ({self.label})", False, kind, message,
                                          dict(details or {}), benchmark_size=True))
