"""Buffers, launching, correctness verdicts and timing on the fake backend (no device: the
fake stands in for one only here, and claims nothing about any real kernel)."""

import dataclasses

import numpy as np
import pytest

from grader.backends.fake import FakeBackend
from grader.correctness import run_case
from grader.course.catalog import default_catalog
from grader.course.problems import load_problem
from grader.launching import LaunchRefused
from grader.results import FailureKind
from grader.timing import TimingPolicy, prepare_roles, time_roles

SPEC = default_catalog().get("transpose_coalesced")
PROBLEM = load_problem(SPEC.problem)
CASE = {"width": 96, "height": 64}


def transpose(grid, block, out, inp, width, height):
    out.floats()[:] = inp.floats().reshape(int(height), int(width)).T.ravel()


def half_done(grid, block, out, inp, width, height):
    done = inp.floats().reshape(int(height), int(width)).T.ravel()
    out.floats()[: done.size // 2] = done[: done.size // 2]


def past_the_end(grid, block, out, inp, width, height):
    transpose(grid, block, out, inp, width, height)
    memory, start = out.allocation_floats()
    memory[start + out.floats().size + 3] = 1.0


class Racy:
    """Right on the first launch, one element off on the next: results that change between runs."""

    def __init__(self):
        self.calls = 0

    def __call__(self, grid, block, out, inp, width, height):
        transpose(grid, block, out, inp, width, height)
        self.calls += 1
        if self.calls % 2 == 0:
            out.floats()[7] += 1.0


def grade_case(kernel, **backend_options):
    backend = FakeBackend({"transpose": kernel}, **backend_options)
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    return backend, run_case(backend, SPEC, PROBLEM, kernels, CASE, np.random.default_rng(1))


def test_a_right_kernel_passes_and_every_buffer_is_released():
    backend, result = grade_case(transpose)
    assert result.ok and result.failure is None
    assert backend.allocated == 0 and backend.launches == ["transpose", "transpose"]


@pytest.mark.parametrize(("kernel", "kind", "words"), [
    (half_done, FailureKind.WRONG, "never written"),
    (past_the_end, FailureKind.OUT_OF_BOUNDS, "past its end"),
    (Racy(), FailureKind.RACE, "differ between two runs"),
])
def test_each_kind_of_failure_is_recorded_as_such(kernel, kind, words):
    _, result = grade_case(kernel)
    assert not result.ok and result.failure == kind and words in result.message


def test_a_launch_the_device_cannot_run_is_refused_before_it_runs():
    with pytest.raises(LaunchRefused, match="at most 64"):
        grade_case(transpose, max_threads_per_block=64)


def test_timing_rotates_flushes_and_poisons_before_every_timed_launch():
    seconds = {"transpose": 2e-3}
    poisoned = []

    def checks_poison(grid, block, out, inp, width, height):
        poisoned.append(bool(np.isnan(out.floats()).all()))
        transpose(grid, block, out, inp, width, height)

    backend = FakeBackend({"transpose": checks_poison}, seconds=lambda name: seconds[name])
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    roles = {"baseline": (SPEC, kernels), "submission": (SPEC, kernels), "reference": (SPEC, kernels)}
    inputs = PROBLEM.inputs(PROBLEM_SETUP(), np.random.default_rng(2))
    timed = prepare_roles(backend, PROBLEM, roles, CASE, inputs)
    policy = TimingPolicy(warmup=1, min_rounds=4, max_rounds=4, budget_s=10.0, target_spread=0.5)
    stats = time_roles(backend, timed, policy, lambda name: None)
    assert set(stats) == set(roles) and all(s["samples"] == 4 for s in stats.values())
    assert stats["submission"]["time_ms"] == pytest.approx(2.0)
    assert backend.flushes == 12  # one before every timed launch
    assert all(poisoned[-12:])  # outputs poisoned before every timed launch
    assert backend.launches.count("transpose") == 3 + 12  # a warm-up each, then the timed rounds
    for entry in timed.values():
        entry.buffers.release()
    assert backend.allocated == 0


@pytest.mark.parametrize(("kernel_s", "rounds"), [(1e-4, 50), (2e-3, 15)])
def test_a_short_kernel_is_timed_until_it_has_run_long_enough(kernel_s, rounds):
    """A steady kernel stops at min_rounds, unless its launches add up to less than min_timed_s."""
    backend = FakeBackend({"transpose": transpose}, seconds=lambda name: kernel_s)
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    roles = {"submission": (SPEC, kernels), "reference": (SPEC, kernels)}
    timed = prepare_roles(backend, PROBLEM, roles, CASE, PROBLEM.inputs(PROBLEM_SETUP(), np.random.default_rng(2)))
    policy = TimingPolicy(warmup=0, min_rounds=15, max_rounds=100, budget_s=10.0, target_spread=0.02,
                          min_timed_s=0.005)
    stats = time_roles(backend, timed, policy, lambda name: None)
    assert all(s["samples"] == rounds for s in stats.values())
    for entry in timed.values():
        entry.buffers.release()


def PROBLEM_SETUP():
    from grader.correctness import make_setup

    return make_setup(SPEC, CASE)


def test_a_timed_plan_is_queued_whole_and_its_time_is_the_sum_of_its_launches():
    """grader.launching.run_plan: timed, every launch goes to Backend.time_launches at once (the
    backend queues them together and waits once); untimed, each is launched and waited for, with
    `before` called ahead of it."""
    from grader.launching import Launch, run_plan

    seconds = {"first": 0.002, "second": 0.003}
    backend = FakeBackend({name: lambda grid, block, out: None for name in seconds}, seconds=seconds.__getitem__)
    kernels = backend.compile("", list(seconds), {}, "t.cl")
    out_only = tuple(p for p in SPEC.kernel.params if p.name == "out")
    specs = {name: dataclasses.replace(SPEC.kernel, name=name, params=out_only) for name in seconds}
    buffers = {"out": backend.alloc(16)}
    plan = [Launch("first", (1,), (32,)), Launch("second", (2,), (32,)), Launch("first", (1,), (32,))]
    batches = []
    queue = backend.time_launches
    backend.time_launches = lambda launches: batches.append([launch.kernel.name for launch in launches]) or queue(launches)
    assert run_plan(backend, kernels, specs, plan, {}, buffers, timed=True) == pytest.approx(0.007)
    assert batches == [["first", "second", "first"]]
    called = []
    assert run_plan(backend, kernels, specs, plan, {}, buffers, before=called.append) is None
    assert called == [0, 1, 2] and backend.launches[-3:] == ["first", "second", "first"] and len(batches) == 1


# Dynamic shared memory (issue 25): a stage's [launch] dynamic_shared reaches each launch, and
# counts with the kernel's static shared memory against the device's limit.

REDUCE = default_catalog().get("reduce_sequential")


def partial_sums(grid, block, out, inp, n):
    size = int(block[0])
    out.floats()[:] = inp.floats().reshape(-1, size).sum(axis=1)


def test_the_stages_dynamic_shared_memory_reaches_every_launch():
    backend = FakeBackend({"reduce": partial_sums})
    kernels = backend.compile("", ["reduce"], {}, "r.cu")
    result = run_case(backend, REDUCE, load_problem(REDUCE.problem), kernels, {"n": 1024}, np.random.default_rng(1))
    assert result.ok, result.message
    assert backend.dynamic_shared == [4 * REDUCE.defines["BLOCK_SIZE"]] * 2


def test_static_and_dynamic_shared_memory_over_the_device_limit_is_refused_naming_both():
    from grader.backends.base import KernelResources
    from grader.launching import check_limits

    backend = FakeBackend({"reduce": partial_sums})
    kernel = backend.compile("", ["reduce"], {}, "r.cu")["reduce"]
    kernel.resources = dataclasses.replace(kernel.resources, shared_bytes=40 * 1024)
    check_limits(kernel, (256,), backend, 8 * 1024)  # 48 KiB: exactly the limit
    with pytest.raises(LaunchRefused) as refused:
        check_limits(kernel, (256,), backend, 8 * 1024 + 4)
    message = str(refused.value)
    assert "40960 declared with a fixed size, 8196 of `extern __shared__` memory" in message
    assert "at most 49152" in message and "\n" not in message
    assert isinstance(kernel.resources, KernelResources)


def test_opencl_launches_with_no_dynamic_shared_memory_whatever_the_stage_declares():
    from grader.backends.registry import by_name
    from grader.launching import dynamic_shared

    assert dynamic_shared(1024, by_name("opencl")) == 0
    assert dynamic_shared(1024, by_name("cuda")) == 1024
    assert dynamic_shared(1024, None) == 1024  # a test's fake device, of no row
