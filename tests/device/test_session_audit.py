"""A session member's check of its timed launches against a reference timed elsewhere
(grader.session_audit), on every device present: the reference's launch and the member's on
the same seed agree; a launch wrong at a few places, one that leaves its output unwritten, and
one that changes its input are each found, with the launch named; an output read whole is
judged by the problem's own comparison; a launch drawn for the whole check is checked after the
rounds, on a copy of its outputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from grader.backends import open_backend
from grader.course.problems import load_problem
from grader.device_ops import DeviceOps
from grader.results import FailureKind
from grader.session_audit import PICKS, WHOLE, SessionAudit, checkable, pack, picks, take_samples, unpack
from grader.timed_audit import TimedLaunchWrong
from grader.timing import TimedRole, prepare_roles, release_roles
from tests.conftest import SUFFIX, catalog, target_params

CASES = {"transpose_coalesced": {"width": 512, "height": 320},  # 163,840 elements: read at PICKS places
         "reduce_unrolled": {"n": 1 << 20}}  # 256 partials, compared whole (partials = "total")


@dataclass
class Pair:
    """A member (its submission: the stage's reference kernel) and an anchor's reference, apart."""

    backend: Any
    ops: DeviceOps
    problem: Any
    member: dict[str, TimedRole]
    anchor: TimedRole
    audit: SessionAudit
    scratch: Any

    def launch(self, number: int, seed: int, places: int, spoil=None, whole: bool = False) -> dict[str, str]:
        """The member's timed launch `number` (on placement number % 2) and the anchor's on the
        same seed; `spoil(buffers)` runs after the member's launch; `whole`: that launch is the
        block's whole check. Returns the anchor's samples."""
        placement = number % 2
        self.audit.before(placement, seed)
        self.member["submission"].timed_launch(self.backend, placement)
        if spoil is not None:
            spoil(self.member["submission"].placements[placement])
        self.audit.after(placement, seed, places, whole)
        self.anchor.placements[0].refill(self.ops, seed)
        self.anchor.timed_launch(self.backend, 0)
        return pack(take_samples(self.backend, self.ops, self.anchor.placements[0], places, self.scratch))


@pytest.fixture(scope="module", params=target_params())
def opened(request: pytest.FixtureRequest) -> Iterator[tuple[Any, DeviceOps, dict[str, Any]]]:
    """One backend per device for the module (its kernels compiled once per stage)."""
    target = request.param
    backend = open_backend(target.backend, target.index)
    try:
        yield backend, DeviceOps(backend), {"suffix": SUFFIX[target.backend]}
    finally:
        backend.close()


@pytest.fixture(params=list(CASES))
def pair(request: pytest.FixtureRequest, opened: tuple[Any, DeviceOps, dict[str, Any]]) -> Iterator[Pair]:
    stage = request.param
    backend, ops, compiled = opened
    course = catalog()
    spec = course.get(stage)
    problem = load_problem(spec.problem)
    if stage not in compiled:
        path = course.reference_file(stage, compiled["suffix"])
        compiled[stage] = backend.compile(path.read_text(), [k.name for k in spec.kernels], spec.defines, str(path))
    kernels = compiled[stage]
    case = CASES[stage]
    member = prepare_roles(backend, problem, {"submission": (spec, kernels)}, case, None, ops, 1, placements=2)
    member.update(prepare_roles(backend, problem, {"reference": (spec, kernels)}, case, None, ops, 2, inputs_of=spec))
    anchor = prepare_roles(backend, problem, {"reference": (spec, kernels)}, case, None, ops, 3,
                           inputs_of=spec)["reference"]
    audit = SessionAudit(backend, problem, ops, member["submission"], member["reference"].placements[0],
                         member["reference"], stage)
    scratch = backend.alloc(4 * max(PICKS, WHOLE))
    try:
        yield Pair(backend, ops, problem, member, anchor, audit, scratch)
    finally:
        audit.release()
        backend.release(scratch)
        release_roles(member)
        anchor.release()


def test_launches_on_the_same_seed_agree_with_the_reference_timed_elsewhere(pair: Pair) -> None:
    assert checkable(pair.problem, pair.member["submission"].buffers.setup)
    expected = [pair.launch(number, 1000 + number, 77 + number) for number in range(3)]
    pair.audit.expect([unpack(e) for e in expected])
    assert pair.audit.checked == 3


def test_a_launch_wrong_at_a_few_places_is_found_and_named(pair: Pair) -> None:
    def spoil(buffers) -> None:
        name, guarded = next(iter(buffers.outputs.items()))
        values = np.empty(guarded.count, dtype=np.float32)
        pair.backend.download(guarded.inner, values)
        wrong = np.random.default_rng(4).choice(guarded.count, size=max(1, guarded.count // 50), replace=False)
        values[wrong] += 1000.0
        pair.backend.upload(guarded.inner, values)

    expected = [pair.launch(0, 5, 9), pair.launch(1, 6, 10, spoil)]
    with pytest.raises(TimedLaunchWrong) as found:
        pair.audit.expect([unpack(e) for e in expected])
    result = found.value.result
    assert result.failure == FailureKind.BENCHMARK_WRONG and "timed launch 2, on fresh inputs" in result.message
    count = next(iter(pair.member["submission"].buffers.outputs.values())).count
    if picks(count) < count:
        assert "sampled" in result.message and result.details["indices"]


def one_wrong_element(pair: Pair):
    def spoil(buffers) -> None:
        guarded = next(iter(buffers.outputs.values()))
        values = np.empty(guarded.count, dtype=np.float32)
        pair.backend.download(guarded.inner, values)
        values[guarded.count // 3] = np.nan  # one element left as the poison (any NaN)
        pair.backend.upload(guarded.inner, values)
    return spoil


def test_one_wrong_element_is_found_by_the_whole_check_after_the_rounds(pair: Pair) -> None:
    pair.launch(0, 5, 9, whole=True)  # a right launch passes its whole check
    pair.launch(1, 6, 10, one_wrong_element(pair), whole=True)  # copied now, checked after the rounds
    pair.launch(2, 7, 11)
    pair.launch(3, 8, 12)  # (its placement's outputs written again since: the copy is what counts)
    with pytest.raises(TimedLaunchWrong) as found:
        pair.audit.check_kept()
    result = found.value.result
    assert result.failure == FailureKind.BENCHMARK_WRONG and "timed launch 2, on fresh inputs" in result.message
    pair.audit.check_kept()  # every copy was freed: nothing is left to check


def test_a_later_launch_that_writes_into_a_kept_copy_is_a_write_outside_its_buffers(pair: Pair) -> None:
    """A kernel that, in a later launch, mends the copy the grader kept of an earlier wrong
    launch (its outputs lie in device memory) is found by the copy's checksums."""
    pair.launch(0, 5, 9, one_wrong_element(pair), whole=True)
    kept = pair.audit._kept[0]
    name, copy = next(iter(kept.copies.items()))
    guarded = pair.member["submission"].placements[0].outputs[name]
    values = np.empty(guarded.count, dtype=np.float32)
    pair.backend.download(copy, values)
    values[guarded.count // 3] = 0.5  # (any other value: what a later launch would write there)
    pair.backend.upload(copy, values)
    pair.launch(1, 6, 10)
    with pytest.raises(TimedLaunchWrong) as found:
        pair.audit.check_kept()
    result = found.value.result
    assert result.failure == FailureKind.OUT_OF_BOUNDS
    assert "after launch 1 wrote outside its buffers" in result.message, result.message


def test_past_the_copies_kept_a_launch_is_checked_whole_at_once(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("grader.session_audit.KEPT_BLOCKS", 1)
    pair.launch(0, 5, 9, whole=True)  # kept
    with pytest.raises(TimedLaunchWrong) as found:
        pair.launch(1, 6, 10, one_wrong_element(pair), whole=True)
    assert "timed launch 2, on fresh inputs" in found.value.result.message
    pair.audit.check_kept()  # the first, right


def test_an_unwritten_output_is_found(pair: Pair) -> None:
    expected = [pair.launch(0, 5, 9, lambda buffers: buffers.reset_outputs())]
    with pytest.raises(TimedLaunchWrong) as found:
        pair.audit.expect([unpack(e) for e in expected])
    assert "timed launch 1" in found.value.result.message and "never written" in found.value.result.message


def test_a_changed_input_is_found_at_once(pair: Pair) -> None:
    def spoil(buffers) -> None:
        name, (_, guarded) = next(iter(buffers.guarded_inputs.items()))
        pair.backend.fill32(guarded.inner, 0)

    with pytest.raises(TimedLaunchWrong) as found:
        pair.launch(0, 5, 9, spoil)
    assert found.value.result.failure == FailureKind.INPUT_MODIFIED and "timed launch 1 changed" in found.value.result.message


def test_samples_that_do_not_fit_the_launches_are_the_session_s_fault(pair: Pair) -> None:
    expected = [pair.launch(0, 5, 9)]
    with pytest.raises(ValueError):
        pair.audit.expect([])  # one launch taken, none expected
    pair.launch(0, 5, 9)
    with pytest.raises(ValueError):
        pair.audit.expect([{"other": np.zeros(3, dtype=np.uint32)}])
    assert expected


def test_packed_samples_round_trip_and_junk_is_refused() -> None:
    words = {"out": np.array([0, 1, 0x7FC00000, 0xFFFFFFFF], dtype=np.uint32)}
    back = unpack(pack(words))
    assert list(back) == ["out"] and back["out"].tolist() == words["out"].tolist()
    for junk in (None, [], {"out": 5}, {"out": "not base64!"}, {3: "AAAA"}):
        with pytest.raises(ValueError):
            unpack(junk)


def test_the_copies_kept_take_a_small_share_of_a_small_device() -> None:
    """KEPT_BYTES on a large GPU; 1/KEPT_SHARE of a small one's memory; KEPT_BYTES where unknown."""
    from dataclasses import replace

    from grader.backends.fake import FakeBackend
    from grader.session_audit import KEPT_BYTES, KEPT_SHARE, kept_bytes

    backend = FakeBackend({})
    assert kept_bytes(backend) == KEPT_BYTES  # (the fake device's memory is not known)
    backend.info = replace(backend.info, memory_bytes=141 << 30)
    assert kept_bytes(backend) == KEPT_BYTES
    backend.info = replace(backend.info, memory_bytes=16 << 30)
    assert kept_bytes(backend) == (16 << 30) // KEPT_SHARE == 256 << 20
