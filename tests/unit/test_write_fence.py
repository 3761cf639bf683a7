"""Writes outside a launch's buffers, on the fake backend (grader.memory.Arena and
grader.write_fence, the host's way: the fake has no device kernels; tests/device checks the
kernels against the same host checksums)."""

import numpy as np
import pytest

from grader import memory
from grader.backends.fake import FakeBackend
from grader.correctness import CaseBuffers, make_setup
from grader.course.catalog import default_catalog
from grader.course.problems import load_problem
from grader.device_ops import CHECKSUM_CHUNK, host_checksum
from grader.results import FailureKind
from grader.steps.size_check import arena_sizes, outside_message
from grader.write_fence import Region, WriteFence, moat_text, size_text

SPEC = default_catalog().get("reduce_first_add")
PROBLEM = load_problem(SPEC.problem)
SETUP = make_setup(SPEC, {"n": 1 << 16})
MOAT = 1 << 20  # small moats: the fake's memory is host memory


def fenced(backend: FakeBackend, others: list[Region] | None = None):
    """The submission's buffers in an arena, and a fence over its input and `others`."""
    uniform = PROBLEM.uniform_inputs(SETUP)
    arena = memory.Arena(backend, arena_sizes(PROBLEM, SETUP, None, uniform), moat=MOAT)
    buffers = CaseBuffers(backend, PROBLEM, SETUP, None, uniform, arena)
    own = [Region(f"its input `{name}`", guarded.inner, FailureKind.INPUT_MODIFIED)
           for name, (_, guarded) in buffers.guarded_inputs.items()]
    return arena, buffers, WriteFence(backend, None, own + (others or []), arena)


def write_at(buffer, element: int, value: float = 1.0) -> None:
    """Write one float `element` floats from `buffer`'s start, in its whole allocation."""
    floats, start = buffer.allocation_floats()
    floats[start + element] = value


def test_an_arena_keeps_moats_before_between_and_after_its_buffers():
    backend = FakeBackend({})
    arena, buffers, _ = fenced(backend)
    names = [slot.name for slot in arena.slots]
    assert names == ["in", "out"]
    moats = arena.moats()
    assert [m.after.name if m.after else None for m in moats] == [None, "in", "out"]
    assert all(m.nbytes >= MOAT for m in moats)
    words = np.empty(arena.nbytes // 4, dtype=np.uint32)
    backend.download(arena.buffer, words)
    for moat in moats:
        assert (words[moat.offset // 4:(moat.offset + moat.nbytes) // 4] == memory.MOAT_BITS).all()
    # the guard bands are the buffers' own: read through the arena, not a view of a view
    buffers.reset_outputs()
    assert buffers.guards_hit() == []
    buffers.release()
    assert backend.allocated == 0 and arena.buffer is None
    buffers.release()  # a second release does nothing


def test_an_arena_may_keep_wider_moats_at_its_ends_than_between_its_buffers():
    """A CPU device's arena: CPU_MOAT_BYTES-like moats before the first buffer and after the
    last, narrower ones between (where a write that crosses one lands in the next buffer)."""
    backend = FakeBackend({})
    sizes = [3 << 16, 1 << 16, 5 << 16]
    arena = memory.Arena(backend, sizes, moat=MOAT, end_moat=4 * MOAT)
    for n, size in enumerate(sizes):
        arena.alloc(f"b{n}", size)
    assert [m.nbytes for m in arena.moats()] == [4 * MOAT, MOAT, MOAT, 4 * MOAT]
    assert arena.nbytes == memory.arena_bytes(sizes, MOAT, 4 * MOAT) == sum(sizes) + 10 * MOAT
    with pytest.raises(ValueError, match="no room"):
        arena.alloc("one more", 1 << 16)
    arena.release()
    assert memory.arena_bytes([], MOAT, 4 * MOAT) == 4 * MOAT


def test_a_cpu_arena_narrows_its_moats_between_buffers_only_where_there_are_many():
    """Two or three buffers keep CPU_MOAT_BYTES between them; mlp_train's 20 share
    CPU_MOATS_BETWEEN_BYTES, down to CPU_MOAT_MIN_BYTES each; the ends never narrow."""
    full = memory.CPU_MOAT_BYTES
    assert memory.cpu_moats(1) == memory.cpu_moats(2) == memory.cpu_moats(3) == (full, full)
    between, end = memory.cpu_moats(20)
    assert between == memory.CPU_MOAT_MIN_BYTES < full == end
    assert memory.CPU_MOAT_MIN_BYTES <= memory.cpu_moats(5)[0] < full


def test_a_clean_launch_is_not_a_finding():
    backend = FakeBackend({})
    _, buffers, fence = fenced(backend)
    fence.before()
    buffers.outputs["out"].inner.floats()[:] = 3.0  # its own output: allowed
    assert fence.after() is None


@pytest.mark.parametrize(("element", "words"), [
    (lambda n: n + (64 << 10) // 4, "~64 KiB past the end of `out`"),
    (lambda n: -(memory.guard_elements(n, 4) + 1000), "before the start of `out`"),
])
def test_a_write_into_a_moat_is_placed(element, words):
    backend = FakeBackend({})
    _, buffers, fence = fenced(backend)
    out = buffers.outputs["out"]
    fence.before()
    write_at(out.inner, element(out.count))
    found = fence.after()
    assert found is not None and found.failure == FailureKind.OUT_OF_BOUNDS
    assert "the space the grader keeps free" in found.where and words in found.where, found.where
    assert outside_message(found).startswith("wrote out of bounds at this size, outside its buffers: into ")


def test_a_write_past_an_input_is_placed_from_that_input():
    backend = FakeBackend({})
    _, buffers, fence = fenced(backend)
    inp = buffers.guarded_inputs["in"][1]
    fence.before()
    write_at(inp.inner, inp.count + inp.guard + 5)  # just past its guard band
    found = fence.after()
    assert found is not None and "past the end of `in`" in found.where, found.where


def test_a_write_into_another_buffer_of_the_graders_names_it():
    backend = FakeBackend({})
    theirs = backend.alloc(4 << 20)
    backend.fill32(theirs, 0x12345678)
    _, _, fence = fenced(backend, [Region("the reference kernel's input `in`", theirs)])
    fence.before()
    theirs.floats()[(3 << 20) // 4] = 7.0
    found = fence.after()
    assert found is not None and found.failure == FailureKind.OUT_OF_BOUNDS
    assert found.where == "into the reference kernel's input `in`, ~3.0 MiB into it"


def test_a_write_into_its_own_input_is_an_input_modified():
    backend = FakeBackend({})
    _, buffers, fence = fenced(backend)
    fence.before()
    buffers.guarded_inputs["in"][1].inner.floats()[10] = -1.0
    found = fence.after()
    assert found is not None and found.failure == FailureKind.INPUT_MODIFIED
    assert found.where == "into its input `in`, near its start"
    assert outside_message(found) == "wrote into its input `in`, near its start, at this size: inputs are read-only"


def test_the_host_checksum_sees_any_one_changed_word():
    rng = np.random.default_rng(3)
    words = rng.integers(0, 1 << 32, size=3 * CHECKSUM_CHUNK + 17, dtype=np.uint32)
    sums = host_checksum(words)
    assert sums.shape == (4, 2)
    for index in (0, CHECKSUM_CHUNK - 1, 2 * CHECKSUM_CHUNK + 5, words.size - 1):
        changed = words.copy()
        changed[index] ^= 1 << 31
        differ = np.flatnonzero((host_checksum(changed) != sums).any(axis=1))
        assert list(differ) == [index // CHECKSUM_CHUNK]
    swapped = words.copy()
    swapped[[1, 2]] = swapped[[2, 1]]  # the same words in other places: still a change
    assert (host_checksum(swapped) != sums).any()


def test_distances_read_as_a_student_reads_them():
    assert size_text(96) == "96 bytes"
    assert size_text(48 << 10) == "48 KiB"
    assert size_text(64 << 20) == "64.0 MiB"
    slot_a = memory.Slot("a", 0, 100, 0, 100)
    slot_b = memory.Slot("b", 1000, 100, 1000, 100)
    moat = memory.Moat(100, 900, slot_a, slot_b)
    assert moat_text(moat, 200) == "~100 bytes past the end of `a`"
    assert moat_text(moat, 900) == "~100 bytes before the start of `b`"


def test_the_size_check_fences_the_submission_alone_in_an_arena(monkeypatch):
    """fence_benchmark: every placement but the first freed, the submission's first made again
    in an arena, the other kernels' buffers fenced; everything freed at the end."""
    monkeypatch.setattr(memory, "MOAT_BYTES", MOAT)  # the fake is a GPU
    from types import SimpleNamespace

    from grader.steps.benchmark import Bench
    from grader.steps.size_check import fence_benchmark
    from grader.timing import prepare_roles, release_roles

    backend = FakeBackend({"reduce": lambda *args: None})
    kernels = backend.compile("", ["reduce"], {}, "r.cl")
    case = {"n": 1 << 16}
    setup = make_setup(SPEC, {"n": 1 << 20})
    inputs = PROBLEM.inputs(setup, np.random.default_rng(2))
    roles = prepare_roles(backend, PROBLEM, {"baseline": (SPEC, kernels), "submission": (SPEC, kernels),
                                             "reference": (SPEC, kernels)}, case, inputs, placements=3)
    ctx = SimpleNamespace(backend=backend, problem=PROBLEM)
    fenced = fence_benchmark(ctx, Bench(case, roles, on_device=False))  # type: ignore[arg-type]
    assert all(len(role.placements) == 1 for role in roles.values())
    assert roles["submission"].buffers is fenced.buffers and fenced.buffers.arena is not None
    assert fenced.buffers.arena.moat == MOAT
    assert fenced.buffers.inputs is inputs  # the benchmark's host inputs, uploaded again
    fenced.buffers.reset_outputs()
    fenced.fence.before()
    reference = roles["reference"].buffers
    reference.input_buffers["in"].floats()[(512 << 10) // 4] = 1.5  # a far write, say
    found = fenced.fence.after()
    assert found is not None and found.where == "into the reference kernel's input `in`, ~512 KiB into it"
    fenced.fence.before()
    write_at(reference.outputs["out"].inner, -3)  # into the guard band before it
    found = fenced.fence.after()
    assert found is not None and found.where == "into the guard band before the reference kernel's output `out`"
    fenced.fence.release()
    release_roles(roles)
    assert backend.allocated == 0
