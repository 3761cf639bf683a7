"""Every timed launch of a session member does the work, checked against a reference kernel
that runs in another process: the session's anchor (grader.timing_session).

In a timing session the reference kernel is timed once for all members, by the anchor, on the
same fresh inputs as each member's submission: the session draws one seed per launch of a block,
and every process fills its buffers from it (lab_fill_uniform: the same values everywhere). A
member checks each of its submission's timed launches as grader.timed_audit checks it alone:

- **inputs**, all of them, against a pristine copy refilled from the same seed, on the device;
- **outputs** against the reference's, read at places drawn from a seed that stays in the
  grader's host code (DeviceOps.sample_into): an output of at most WHOLE elements whole, a
  larger one at PICKS places; compared by the problem's element-wise tolerance (its
  `reference_tolerance`) or, whole, by its `agrees_with_reference`. An output larger than
  WHOLE that the problem compares only whole cannot be checked this way (`checkable`): such a
  grading is timed alone;
- **one launch of each block, whole**: the one the session draws (`whole`, told to no kernel):
  its outputs are copied on the device right after it (`Kept`), and once the member's timed
  rounds are over and its session turn ended (`check_kept`: in a shared turn) the reference
  kernel runs, untimed, in the member's own process on the pristine copy refilled from that
  launch's seed, and every output is compared with the copy (grader.reference_agreement), as
  every timed launch is when timed alone. A kernel wrong at a few places only when timed, which
  PICKS places would miss, fails then, with the launch named. The copies lie in device memory,
  where a later launch of the kernel could write: each copy's checksums (lab_checksum) are read
  back before that next launch and compared again before the check, and a copy that changed is
  the kernel's write outside its buffers. Past KEPT_BLOCKS copies (or `kept_bytes` of them, or
  where the device has no room for one) a launch is checked whole at once.

A launch's counts and samples are read back before the submission's next launch, so that no
launch can forge an earlier one's. The reference's samples come from the anchor through the
parent with the member's next command (`expect`); a finding raises TimedLaunchWrong then, with
the launch named. Guard bands are the size check's, as alone.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader import memory
from grader.backends.base import Backend, Buffer
from grader.correctness import CaseBuffers
from grader.device_ops import chunks, sample_indices
from grader.reference_agreement import agrees, elementwise_tolerance, oracle_verdict
from grader.results import FailureKind
from grader.timed_audit import input_changed, launch_wrong

WHOLE = 1 << 16  # an output of at most this many elements is read whole
PICKS = 4096  # places a larger output is read at
KEPT_BLOCKS = 8  # launches whose whole check waits for the end of the timed rounds, at most ...
KEPT_BYTES = 1 << 30  # ... and the device memory their outputs' copies take, at most, ...
KEPT_SHARE = 64  # ... and at most 1/KEPT_SHARE of the device's memory (a session's members each keep theirs)

Samples = dict[str, np.ndarray]  # output name -> its words read (uint32), in pick order


def kept_bytes(backend: Backend) -> int:
    """The device memory a member's kept copies may take: KEPT_BYTES, and at most 1/KEPT_SHARE of
    the device's memory where it is known (a small GPU's session leaves room for its members)."""
    known = backend.info.memory_bytes
    return min(KEPT_BYTES, known // KEPT_SHARE) if known else KEPT_BYTES


def picks(count: int) -> int:
    """How many of an output's `count` elements are read: all of them up to WHOLE, else PICKS."""
    return count if count <= WHOLE else PICKS


def checkable(problem: Any, setup: Any) -> bool:
    """Whether every output of `setup` can be checked from samples: read whole, or compared
    element by element."""
    tolerance = elementwise_tolerance(problem, setup) or {}
    whole = hasattr(problem, "agrees_with_reference")
    return all(name in tolerance or (whole and int(np.prod(shape)) <= WHOLE)
               for name, (shape, _) in problem.outputs(setup).items())


def take_samples(backend: Backend, ops: Any, buffers: CaseBuffers, seed: int, scratch: Buffer) -> Samples:
    """Every output of `buffers` read at the places `seed` draws (`picks` of them), through
    `scratch` (PICKS or WHOLE words at least); waits for them."""
    found: Samples = {}
    for number, (name, guarded) in enumerate(buffers.outputs.items()):
        taken = picks(guarded.count)
        ops.sample_into(scratch, guarded.inner, guarded.count, seed + number, taken)
        words = np.empty(taken, dtype=np.uint32)
        backend.download(scratch, words)
        found[name] = words
    return found


def scratch_words(buffers: CaseBuffers) -> int:
    """The words take_samples' scratch buffer needs for `buffers`' outputs."""
    return max([picks(guarded.count) for guarded in buffers.outputs.values()] or [1])


def pack(samples: Samples) -> dict[str, str]:
    """Samples as text for a message: each output's words, little-endian, in base64."""
    return {name: base64.b64encode(words.astype("<u4").tobytes()).decode("ascii") for name, words in samples.items()}


def unpack(packed: Any) -> Samples:
    """pack's inverse; raises ValueError for anything pack would not have written."""
    if not isinstance(packed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in packed.items()):
        raise ValueError("samples are not a mapping of output names to text")
    try:
        return {name: np.frombuffer(base64.b64decode(text, validate=True), dtype="<u4").astype(np.uint32)
                for name, text in packed.items()}
    except (binascii.Error, ValueError) as bad:
        raise ValueError(f"samples are not base64 words: {bad}") from None


@dataclass(frozen=True)
class Taken:
    """One checked launch's outputs, awaiting the reference's."""

    launch: int  # the submission's timed launch, from 1
    seed: int  # the places' seed
    samples: Samples


@dataclass(frozen=True)
class Kept:
    """A launch drawn for a whole check, its outputs copied for `check_kept`."""

    launch: int  # the submission's timed launch, from 1
    seed: int  # its inputs' seed
    copies: dict[str, Buffer]  # output name -> its words, copied right after the launch
    sums: dict[str, np.ndarray]  # output name -> its copy's checksums, read back before the next launch
    nbytes: int


@dataclass
class SessionAudit:
    """A member's check of its submission's timed launches (the module's doc): `before` and
    `after` each launch, `expect` with the reference's samples of those launches."""

    backend: Backend
    problem: Any
    ops: Any  # grader.device_ops.DeviceOps
    submission: Any  # grader.timing.TimedRole
    pristine: CaseBuffers  # inputs of the same shapes, refilled for each check (the reference's buffers)
    reference: Any  # grader.timing.TimedRole: the reference kernel on `pristine`, for the whole check
    label: str  # the benchmark case, as the report names it
    checked: int = 0  # the submission's timed launches checked so far
    _scratch: Buffer | None = None
    _tally: Any = None
    _taken: list[Taken] = field(default_factory=list)
    _kept: list[Kept] = field(default_factory=list)
    _sums: Buffer | None = None  # a copy's checksums, on their way back

    def __post_init__(self) -> None:
        own: CaseBuffers = self.submission.placements[0]
        self._scratch = self.backend.alloc(4 * scratch_words(own))
        try:
            self._tally = self.ops.tally(max(1, len(own.guarded_inputs)))
            pairs = max([chunks(guarded.inner.nbytes // 4) for guarded in own.outputs.values()] or [1])
            self._sums = self.backend.alloc(8 * max(1, pairs))
        except BaseException:
            self.release()
            raise

    def before(self, placement: int, seed: int) -> None:
        """The submission's inputs on `placement`, fresh from `seed` (the session's for this launch)."""
        self.submission.placements[placement].refill(self.ops, seed)

    def after(self, placement: int, seed: int, places: int, whole: bool = False) -> None:
        """After the submission's timed launch on `placement` (its inputs from `seed`): its inputs
        compared with a pristine copy (raises TimedLaunchWrong where one changed), its outputs
        read at the places `places` draws, kept for `expect`; with `whole`, its outputs also
        copied for the whole check (`check_kept`), or, past KEPT_BLOCKS or `kept_bytes`, compared
        whole at once with the reference kernel's on the pristine copy (raises TimedLaunchWrong
        where they differ)."""
        self.checked += 1
        own: CaseBuffers = self.submission.placements[placement]
        self.pristine.refill(self.ops, seed)
        names = list(own.guarded_inputs)
        self.backend.fill32(self._tally.buffer, 0)  # zeroed after the launch: it cannot forge them
        for slot, name in enumerate(names):
            got = own.guarded_inputs[name][1]
            want = self.pristine.guarded_inputs[name][1]
            self.ops.compare_into(self._tally, slot, got.inner, want.inner, got.count, 0.0, 0.0)
        assert self._scratch is not None
        samples = take_samples(self.backend, self.ops, own, places, self._scratch)
        found = self._tally.read([own.guarded_inputs[name][1].count for name in names])
        changed = [name for name, comparison in zip(names, found) if not comparison.ok]
        if changed:
            raise input_changed(self.label, self.checked, changed)
        if whole and not self._keep(own, seed):
            self._whole(own, self.checked)
        self._taken.append(Taken(self.checked, places, samples))

    def _keep(self, own: CaseBuffers, seed: int) -> bool:
        """Copy `own`'s outputs (the launch just checked) for check_kept; False where it is past
        KEPT_BLOCKS or `kept_bytes`, or the device has no room for the copies (check it at once)."""
        nbytes = sum(guarded.inner.nbytes for guarded in own.outputs.values())
        if len(self._kept) >= KEPT_BLOCKS or sum(kept.nbytes for kept in self._kept) + nbytes > kept_bytes(self.backend):
            return False
        copies: dict[str, Buffer] = {}
        try:
            for name, guarded in own.outputs.items():
                copies[name] = self.backend.alloc(guarded.inner.nbytes)
                self.backend.copy(copies[name], guarded.inner)
        except Exception:  # noqa: BLE001 - no room for a copy: the launch is checked at once
            self._free(copies.values())
            return False
        sums = {name: self._checksums(copy) for name, copy in copies.items()}  # (waits: before the next launch)
        self._kept.append(Kept(self.checked, seed, copies, sums, nbytes))
        return True

    def _checksums(self, buffer: Buffer) -> np.ndarray:
        """lab_checksum's pairs of `buffer`'s words, read back (waits for them)."""
        assert self._sums is not None
        words = buffer.nbytes // 4
        self.ops.checksum_into(buffer, words, self._sums, 0)
        found = np.empty(2 * chunks(words), dtype=np.uint32)
        self.backend.download(self._sums, found)
        return found

    def check_kept(self) -> None:
        """The whole checks of the launches kept (`_keep`), in order, on the submission's first
        placement (its inputs refilled from the launch's seed, its outputs the copies): raises
        TimedLaunchWrong on the first that differs. Every copy is freed, whatever happens."""
        own: CaseBuffers = self.submission.placements[0]
        kept, self._kept = self._kept, []
        try:
            for launch in kept:
                changed = [name for name, copy in launch.copies.items()
                           if not np.array_equal(self._checksums(copy), launch.sums[name])]
                if changed:
                    listed = ", ".join(f"`{name}`" for name in changed)
                    self._fail(FailureKind.OUT_OF_BOUNDS, f"a timed launch after launch {launch.launch} wrote outside "
                               f"its buffers, into the grader's copy of that launch's {listed} (kept for its "
                               f"check): a kernel writes only its own outputs")
                own.refill(self.ops, launch.seed)
                own.reset_outputs()  # (its guard bands as made: the copy holds the interior only)
                for name, copy in launch.copies.items():
                    self.backend.copy(own.outputs[name].inner, copy)
                self.pristine.refill(self.ops, launch.seed)
                self._whole(own, launch.launch)
        finally:
            for launch in kept:
                self._free(launch.copies.values())

    def _whole(self, own: CaseBuffers, launch: int) -> None:
        """The reference on the pristine copy (its inputs those of `own`'s outputs), every output
        compared: where they disagree, the problem's own oracle decides and words the finding."""
        self.pristine.reset_outputs()
        self.reference.run(self.backend, placement=0)
        if not agrees(self.problem, self.ops, own, self.pristine):
            verdict = oracle_verdict(self.problem, own)
            if not verdict.ok:
                self._fail(FailureKind.BENCHMARK_WRONG, f"timed launch {launch}, on fresh inputs: "
                           f"{verdict.message}", verdict.details)

    def expect(self, expected: list[Samples]) -> None:
        """The reference's samples of the launches taken since the last call, in order: each
        launch's outputs compared with them. Raises TimedLaunchWrong on the first finding;
        ValueError where `expected` does not match those launches (the session's fault)."""
        taken, self._taken = self._taken, []
        if len(expected) != len(taken):
            raise ValueError(f"{len(expected)} reference samples for {len(taken)} launches")
        for launch, want in zip(taken, expected):
            self._compare(launch, want)

    def _compare(self, launch: Taken, want: Samples) -> None:
        own: CaseBuffers = self.submission.placements[0]
        tolerance = elementwise_tolerance(self.problem, own.setup)
        if set(want) != set(launch.samples) or any(want[n].shape != launch.samples[n].shape for n in want):
            raise ValueError("the reference's samples are not of the same outputs")
        whole: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for number, (name, words) in enumerate(launch.samples.items()):
            count = own.outputs[name].count
            if tolerance is None or name not in tolerance:
                shape = own.outputs[name].shape
                whole[name] = (words.view(np.float32).reshape(shape), want[name].view(np.float32).reshape(shape))
                continue
            got, ref = words.view(np.float32), want[name].view(np.float32)
            rtol, atol = (np.float32(v) for v in tolerance[name])
            with np.errstate(invalid="ignore", over="ignore"):
                bad = ~(np.abs(got - ref) <= atol + rtol * np.abs(ref))  # NaN never matches
            if not bad.any():
                continue
            unwritten = int((words == memory.POISON_BITS).sum())
            places = sample_indices(count, launch.seed + number, words.size)[bad]
            sampled = "" if words.size == count else " sampled"
            never = f" ({unwritten} never written)" if unwritten else ""
            self._fail(FailureKind.BENCHMARK_WRONG,
                       f"timed launch {launch.launch}, on fresh inputs: {int(bad.sum())} of {words.size}{sampled} "
                       f"elements of `{name}` differ from the reference kernel's on the same inputs{never}",
                       {"mismatches": int(bad.sum()), "unwritten": unwritten, "checked": int(words.size),
                        "indices": sorted(int(i) for i in places[:8])})
        if whole:
            verdict = self.problem.agrees_with_reference(own.setup, {n: g for n, (g, _) in whole.items()},
                                                         {n: w for n, (_, w) in whole.items()})
            if not verdict.ok:
                self._fail(FailureKind.BENCHMARK_WRONG, f"timed launch {launch.launch}, on fresh inputs: "
                           f"{verdict.message}", verdict.details)

    def _fail(self, kind: FailureKind, message: str, details: dict[str, Any] | None = None) -> None:
        raise launch_wrong(self.label, kind, message, details)

    def release(self) -> None:
        """Its own buffers freed (not the roles'), the copies kept among them; never raises."""
        self._free([self._scratch, self._tally.buffer if self._tally is not None else None, self._sums,
                    *(copy for kept in self._kept for copy in kept.copies.values())])
        self._scratch = self._tally = self._sums = None
        self._kept = []

    def _free(self, buffers: Any) -> None:
        for buffer in buffers:
            if buffer is not None:
                try:
                    self.backend.release(buffer)
                except Exception:  # noqa: BLE001 - freeing on the way out never raises
                    pass
