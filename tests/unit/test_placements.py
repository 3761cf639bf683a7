"""Timing on several buffer placements (grader.timing, grader.device_claim), on the fake backend:
each role's buffers made K times and all freed, round r on placement r % K, a kernel's time the
mean of its placements' medians, the early stop on the spread within placements, K=1 as before,
and K bounded by device memory. The fake claims nothing about a real kernel's timing."""

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from grader import device_claim, timing
from grader.backends.fake import FakeBackend
from grader.correctness import make_setup
from grader.course.catalog import default_catalog
from grader.course.problems import load_problem
from grader.device_claim import MEMORY_MARGIN, claim, placements_that_fit
from grader.results import CaseResult, DeviceReleased, PhaseStarted, TimingResult
from grader.steps import benchmark as benchmark_step
from grader.steps.context import Context, Request
from grader.steps.size_check import BenchmarkSizeCheck
from grader.timing import (
    TIME_QUANTILE,
    TimingPolicy,
    prepare_roles,
    release_roles,
    summarize,
    summarize_placements,
    time_roles,
    within_spread,
)
from tests.unit import fakelang  # a row for the fake device (nothing here looks it up)

CATALOG = default_catalog()
SPEC = CATALOG.get("transpose_coalesced")
PROBLEM = load_problem(SPEC.problem)
CASE = {"width": 96, "height": 64}
GIB = 1 << 30


def transpose(grid, block, out, inp, width, height):
    out.floats()[:] = inp.floats().reshape(int(height), int(width)).T.ravel()


def host_inputs():
    return PROBLEM.inputs(make_setup(SPEC, CASE), np.random.default_rng(2))


class Placed:
    """A fake device whose timed launch takes a time that depends on the role and on which
    placement's buffers it was given (found from the output buffer's allocation)."""

    def __init__(self, seconds_of):
        self.seconds_of = seconds_of  # (role, placement) -> seconds
        self.last: tuple[str, int] | None = None
        self.timed: list[tuple[str, int]] = []  # (role, placement) of every timed launch, in order
        self.timed_roles: dict[str, object] = {}
        self.backend = FakeBackend({"transpose": self.kernel}, seconds=self.seconds)

    def kernel(self, grid, block, out, inp, width, height):
        transpose(grid, block, out, inp, width, height)
        self.last = None
        for role, entry in self.timed_roles.items():
            for number, buffers in enumerate(entry.placements):
                if buffers.outputs["out"].whole.memory is out.memory:
                    self.last = (role, number)
        assert self.last is not None

    def seconds(self, name):
        assert self.last is not None
        self.timed.append(self.last)
        return self.seconds_of(*self.last)

    def prepare(self, roles=("baseline", "submission", "reference"), placements=1):
        kernels = self.backend.compile("", ["transpose"], {}, "t.cl")
        timed = prepare_roles(self.backend, PROBLEM, {r: (SPEC, kernels) for r in roles}, CASE, host_inputs(),
                              placements=placements)
        self.timed_roles = timed
        return timed


def policy(**changes):
    base = TimingPolicy(warmup=1, min_rounds=8, max_rounds=8, budget_s=10.0, target_spread=0.0)
    return dataclasses.replace(base, **changes)


def test_every_role_gets_k_sets_at_their_own_addresses_with_the_same_inputs_and_all_are_freed():
    device = Placed(lambda role, p: 1e-3)
    one = device.prepare(placements=1)
    per_set = device.backend.allocated
    release_roles(one)
    assert device.backend.allocated == 0
    timed = device.prepare(placements=3)
    assert device.backend.allocated == 3 * per_set
    for entry in timed.values():
        assert len(entry.placements) == 3 and entry.buffers is entry.placements[0]
        memories = {id(b.outputs["out"].whole.memory) for b in entry.placements}
        memories |= {id(g.whole.memory) for b in entry.placements for _, g in b.guarded_inputs.values()}
        assert len(memories) == 6  # an input and an output of its own in every set
        values = []
        for buffers in entry.placements:
            back = np.empty_like(host_inputs()["in"])
            device.backend.download(buffers.input_buffers["in"], back)
            values.append(back)
        assert all(np.array_equal(values[0], v) for v in values[1:])
    release_roles(timed)
    assert device.backend.allocated == 0


def test_inputs_made_on_the_device_are_made_from_the_same_seed_in_every_set():
    class Ops:
        def __init__(self):
            self.fills = []

        def fill_uniform(self, buffer, count, seed, low, high):
            self.fills.append(seed)
            buffer.floats()[:count] = np.random.default_rng(seed).uniform(low, high, count)

    backend = FakeBackend({"transpose": transpose})
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    ops = Ops()
    timed = prepare_roles(backend, PROBLEM, {"submission": (SPEC, kernels), "reference": (SPEC, kernels)}, CASE,
                          None, ops, seed=77, placements=4)
    assert len(ops.fills) == 2 * 4 and set(ops.fills) == {77}
    first = timed["submission"].placements[0].input_buffers["in"].floats().copy()
    for entry in timed.values():
        for buffers in entry.placements:
            assert np.array_equal(buffers.input_buffers["in"].floats(), first)
    release_roles(timed)
    assert backend.allocated == 0


def test_a_failed_allocation_frees_every_set_made_before_it():
    backend = FakeBackend({"transpose": transpose})
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    real_alloc, calls = backend.alloc, []

    def alloc(nbytes):
        calls.append(nbytes)
        if len(calls) == 9:
            raise MemoryError("out of device memory")
        return real_alloc(nbytes)

    backend.alloc = alloc
    with pytest.raises(MemoryError):
        prepare_roles(backend, PROBLEM, {"submission": (SPEC, kernels), "reference": (SPEC, kernels)}, CASE,
                      host_inputs(), placements=4)
    assert backend.allocated == 0


def test_round_r_runs_every_role_on_placement_r_mod_k_and_poisons_it_first():
    device = Placed(lambda role, p: 1e-3)
    timed = device.prepare(placements=3)
    stats = time_roles(device.backend, timed, policy(min_rounds=6, max_rounds=6, warmup=2), lambda name: None)
    rounds = [device.timed[i:i + 3] for i in range(0, len(device.timed), 3)]
    assert len(rounds) == 6
    for number, launches in enumerate(rounds):
        assert {p for _, p in launches} == {number % 3}
        assert sorted(r for r, _ in launches) == ["baseline", "reference", "submission"]
    assert [launches[0][0] for launches in rounds[:3]] == ["baseline", "submission", "reference"]  # rotation
    assert all(s["samples"] == 6 and len(s["placement_times_ms"]) == 3 for s in stats.values())
    # the warm-up: the policy's, on the first placement only
    assert len(device.backend.launches) == 3 * 2 + 18
    assert device.backend.flushes == 18
    release_roles(timed)
    assert device.backend.allocated == 0


def test_outputs_are_poisoned_on_the_placement_about_to_be_timed():
    seen = []

    def checks_poison(grid, block, out, inp, width, height):
        seen.append(bool(np.isnan(out.floats()).all()))
        transpose(grid, block, out, inp, width, height)

    backend = FakeBackend({"transpose": checks_poison})
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    timed = prepare_roles(backend, PROBLEM, {"submission": (SPEC, kernels)}, CASE, host_inputs(), placements=2)
    time_roles(backend, timed, policy(warmup=0, min_rounds=4, max_rounds=4), lambda name: None)
    assert seen == [True] * 4
    release_roles(timed)


def test_a_kernels_time_is_the_mean_of_its_placements_times():
    base = {"baseline": 4e-3, "submission": 1e-3, "reference": 2e-3}
    offsets = [0.0, 0.02, -0.01, 0.03]  # the placements' own speeds: a strided kernel's case
    device = Placed(lambda role, p: base[role] * (1 + offsets[p]))
    timed = device.prepare(placements=4)
    stats = time_roles(device.backend, timed, policy(min_rounds=8, max_rounds=8), lambda name: None)
    for role, seconds in base.items():
        s = stats[role]
        medians = [seconds * (1 + o) * 1e3 for o in offsets]  # steady: every launch the same
        assert s["placement_times_ms"] == pytest.approx(medians)
        assert s["time_ms"] == pytest.approx(np.mean(medians))
        assert s["placement_spread"] == pytest.approx((max(medians) - min(medians)) / np.mean(medians))
        assert s["samples"] == 8
        assert s["min_ms"] == pytest.approx(min(medians)) and s["max_ms"] == pytest.approx(max(medians))
        assert s["total_ms"] == pytest.approx(2 * sum(medians))
        assert s["relative_iqr"] == pytest.approx(0.0)  # steady within each placement
    release_roles(timed)


def test_the_report_carries_each_kernels_placement_times():
    """What a speedup that moved between two gradings can be read back from: which kernel, on
    which placement."""
    from grader.scoring import performance

    stats = {role: summarize_placements([[t], [t * 1.02]]) for role, t in
             (("baseline", 4e-3), ("submission", 1e-3), ("reference", 2e-3))}
    perf = performance(default_catalog().get("reduce_unrolled"), TimingResult({"n": 1}, stats), "gpu")
    assert perf.placements == 2
    assert perf.placement_times_ms["submission"] == pytest.approx([1.0, 1.02])
    assert json.loads(json.dumps(dataclasses.asdict(perf)))["placement_times_ms"]["baseline"] == \
        pytest.approx([4.0, 4.08])


def test_summarize_placements_reads_each_placement_apart():
    by = [[1.0, 1.1, 0.9, 1.0], [2.0, 2.0, 2.2], [], [3.0]]
    s = summarize_placements(by)
    times = [1000.0 * np.percentile(p, 20) for p in by if p]
    assert s["placement_times_ms"] == pytest.approx(times)  # the empty one left out
    assert times == pytest.approx([960.0, 2000.0, 3000.0])
    assert s["time_ms"] == pytest.approx(np.mean(times))
    assert s["samples"] == 8 and s["min_ms"] == pytest.approx(900.0) and s["max_ms"] == pytest.approx(3000.0)
    assert s["total_ms"] == pytest.approx(1000.0 * sum(sum(p) for p in by))
    assert s["placement_spread"] == pytest.approx((3000.0 - 960.0) / np.mean(times))
    scaled = np.array([1.0, 1.1, 0.9, 1.0, 1.0, 1.0, 1.1, 1.0])
    q1, q3 = np.percentile(scaled, [25, 75])
    assert s["relative_iqr"] == pytest.approx(q3 - q1) == pytest.approx(within_spread(by))
    assert s["relative_iqr"] < summarize([x for p in by for x in p])["relative_iqr"]


def test_one_placement_gives_the_figures_of_before():
    samples = [1.3e-3, 1.1e-3, 1.2e-3, 1.6e-3, 1.15e-3, 1.25e-3, 1.05e-3]
    a = np.asarray(samples, dtype=np.float64)
    median = float(np.median(a))
    q1, q3 = np.percentile(a, [25, 75])
    before = {  # grader.timing.summarize as it was before placements, but for the time (below)
        "min_ms": float(a.min()) * 1e3, "max_ms": float(a.max()) * 1e3,
        "relative_iqr": float((q3 - q1) / median), "relative_std": float(a.std() / a.mean()),
        "samples": len(samples), "total_ms": float(a.sum()) * 1e3,
    }
    s = summarize_placements([samples])
    assert {k: s[k] for k in before} == before  # exactly, not approximately
    assert s["time_ms"] == float(np.percentile(a, 20)) * 1e3
    assert s["placement_times_ms"] == [s["time_ms"]] and s["placement_spread"] == 0.0
    assert summarize(samples) == s
    assert within_spread([samples]) == before["relative_iqr"]


def test_one_placement_times_as_before():
    """K=1: the rounds, the stop and the numbers of the timing before placements."""
    samples = [float(x) for x in np.random.default_rng(4).uniform(1e-3, 1.2e-3, 300)]
    given = iter(samples)
    device = Placed(lambda role, p: next(given))
    timed = device.prepare(placements=1)
    stats = time_roles(device.backend, timed, TimingPolicy(warmup=1, min_rounds=15, max_rounds=100, budget_s=10.0,
                                                           target_spread=0.5), lambda name: None)
    assert all(s["samples"] == 15 for s in stats.values())  # min_rounds as given, not rounded up
    for role, s in stats.items():
        own = [samples[i] for i, (r, _) in enumerate(device.timed) if r == role]
        assert {k: v for k, v in s.items() if k != "timed_ms"} == summarize(own)
        assert s["timed_ms"] == [[pytest.approx(t * 1e3) for t in own]]  # every launch, in round order
    release_roles(timed)


@pytest.mark.parametrize(("placements", "rounds"), [(1, 15), (3, 15), (4, 16), (2, 16)])
def test_the_minimum_of_rounds_is_a_whole_number_of_cycles_over_the_placements(placements, rounds):
    device = Placed(lambda role, p: 2e-3)
    timed = device.prepare(placements=placements)
    stats = time_roles(device.backend, timed, policy(min_rounds=15, max_rounds=100, target_spread=0.02),
                       lambda name: None)
    assert all(s["samples"] == rounds for s in stats.values())
    release_roles(timed)


def test_the_early_stop_reads_the_spread_within_placements_not_the_mixtures():
    offsets = [0.0, 0.05, -0.04, 0.08]  # placements 12 % apart, each steady
    device = Placed(lambda role, p: 2e-3 * (1 + offsets[p]))
    timed = device.prepare(placements=4)
    stats = time_roles(device.backend, timed, policy(min_rounds=15, max_rounds=100, target_spread=0.02),
                       lambda name: None)
    assert all(s["samples"] == 16 for s in stats.values())  # stopped at the minimum, not at 100
    mixture = [2e-3 * (1 + offsets[r % 4]) for r in range(16)]
    assert summarize(mixture)["relative_iqr"] > 0.02  # which would have run to max_rounds
    release_roles(timed)


def test_noise_within_placements_keeps_the_rounds_going():
    rng = np.random.default_rng(3)
    device = Placed(lambda role, p: 2e-3 * (1 + 0.2 * rng.random()))
    timed = device.prepare(placements=4)
    stats = time_roles(device.backend, timed, policy(min_rounds=15, max_rounds=40, target_spread=0.02),
                       lambda name: None)
    assert all(s["samples"] == 40 for s in stats.values())
    release_roles(timed)


def test_a_slow_kernel_keeps_at_least_three_rounds_where_a_whole_cycle_does_not_fit(monkeypatch):
    device = Placed(lambda role, p: 1e-3)
    timed = device.prepare(placements=4)
    clock = iter(range(0, 1000, 5))  # every reading 5 s later: one round already past half the budget
    monkeypatch.setattr(timing, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    stats = time_roles(device.backend, timed, policy(min_rounds=15, max_rounds=100, budget_s=8.0),
                       lambda name: None)
    assert all(s["samples"] == 3 for s in stats.values())
    assert all(len(s["placement_times_ms"]) == 3 for s in stats.values())
    release_roles(timed)


# -- how many placements: device memory ----------------------------------------------------------

SET = int(1.6 * GIB)  # one placement of transpose's 8192x8192 benchmark, three roles, about
FLUSH = 100 << 20


@pytest.mark.parametrize(("memory", "free", "expected"), [
    (80 * GIB, 79 * GIB, 4),  # an H100 alone: the policy's
    (80 * GIB, None, 4),  # OpenCL on it: half the device holds 4
    (8 * GIB, 7 * GIB, 2),  # an 8 GB GPU: half of it holds 2
    (8 * GIB, None, 2),
    (8 * GIB, SET + FLUSH + MEMORY_MARGIN + 1, 1),  # only one set free now
    (4 * GIB, 3 * GIB, 1),  # not even half of it: still one, as before
    (4 * GIB, SET // 2, 1),  # less than one free: one (the claim waited, or allocation fails as before)
    (0, None, 4),  # nothing known: the policy's
    (80 * GIB, 2 * SET + FLUSH + MEMORY_MARGIN, 2),  # exactly two fit beside the flush buffer and the margin
    (80 * GIB, 2 * SET + FLUSH + MEMORY_MARGIN - 1, 1),
])
def test_the_placements_are_as_many_as_fit(memory, free, expected):
    assert placements_that_fit(4, SET, FLUSH, memory, free) == expected


def test_a_cpu_policy_never_asks_for_more_than_one():
    assert placements_that_fit(1, 1, 0, 512 * GIB, 512 * GIB) == 1
    assert TimingPolicy.for_kind("cpu").placements == 1 and TimingPolicy.for_kind("gpu").placements == 4


def make_context(kind="gpu", memory_bytes=0, answer=True):
    backend = FakeBackend({"transpose": transpose}, kind=kind)
    backend.info = dataclasses.replace(backend.info, memory_bytes=memory_bytes)
    sent = []
    request = Request(course_root=str(CATALOG.root), stage=SPEC.id, source="", filename="t.cl", backend=fakelang.KIND,
                      device=0, seed=5, cpu_timing=kind == "cpu")
    ctx = Context(request, CATALOG, SPEC, PROBLEM, np.random.default_rng(5), sent.append,
                  receive=(lambda: json.dumps({"type": "DeviceGranted", "data": {}})) if answer else None)
    ctx.backend = backend
    kernels = backend.compile("", ["transpose"], {}, "t.cl")
    ctx.kernels = kernels
    ctx.trusted = {"baseline": (SPEC, kernels), "reference": (SPEC, kernels)}
    return ctx, sent


@pytest.mark.parametrize(("kind", "memory", "free", "expected"), [
    ("gpu", 80 * GIB, 79 * GIB, 4),
    ("gpu", 80 * GIB, None, 4),
    ("gpu", 0, None, 4),
    ("cpu", 0, None, 1),
])
def test_the_claim_sets_the_placements_on_the_context(monkeypatch, kind, memory, free, expected):
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: free)
    ctx, _ = make_context(kind, memory)
    assert claim(ctx, CASE) and ctx.placements == expected


def test_the_claim_bounds_the_placements_by_the_memory_free_in_its_turn(monkeypatch):
    ctx, _ = make_context("gpu", 80 * GIB)
    per_set = device_claim.set_bytes(ctx, CASE)
    flush = device_claim.flush_bytes(ctx.backend)
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: 3 * per_set + flush + MEMORY_MARGIN)
    assert claim(ctx, CASE) and ctx.placements == 3
    ctx, _ = make_context("gpu", 0, answer=False)  # nobody to ask: still bounded
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: 2 * per_set + flush + MEMORY_MARGIN)
    assert claim(ctx, CASE) and ctx.placements == 2


def test_a_gpu_with_room_for_one_set_only_grades_with_one(monkeypatch):
    """Where one placement fits and no second (the claim waits for one only), K is 1 and the
    grading goes on: it never fails for memory where it passed with one placement."""
    ctx, sent = make_context("gpu", 80 * GIB)
    per_set = device_claim.set_bytes(ctx, CASE)
    flush = device_claim.flush_bytes(ctx.backend)
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: per_set + flush + MEMORY_MARGIN)
    assert claim(ctx, CASE) and ctx.placements == 1
    assert not [m for m in sent if type(m).__name__ in ("GraderError", "MemoryShort")]
    assert device_claim.benchmark_bytes(ctx, CASE) == per_set + flush
    assert device_claim.benchmark_bytes(ctx, CASE, placements=4) == 4 * per_set + flush


def test_the_benchmark_step_times_on_the_placements_the_claim_gave(monkeypatch):
    monkeypatch.setattr(benchmark_step, "benchmark_case", lambda spec, kind: dict(CASE))
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: None)
    ctx, sent = make_context("gpu", 0)
    assert benchmark_step.Benchmark().run(ctx)
    roles = ctx.benchmark.roles
    assert set(roles) == {"baseline", "submission", "reference"}
    assert all(len(entry.placements) == 4 for entry in roles.values())
    result = next(m for m in sent if isinstance(m, TimingResult))
    assert all(len(s["placement_times_ms"]) == 4 and s["samples"] % 4 == 0 for s in result.stats.values())
    assert any(isinstance(m, PhaseStarted) and "timed rounds" in m.name for m in sent)
    # the size check after it uses the first placement, then frees every placement's buffers
    assert BenchmarkSizeCheck().run(ctx)
    assert ctx.benchmark is None and ctx.backend.allocated == 0
    assert isinstance(sent[-1], CaseResult) and sent[-1].ok and sent[-1].benchmark_size
    assert any(isinstance(m, DeviceReleased) for m in sent)


def test_every_timed_launch_is_kept_by_role_and_placement():
    device = Placed(lambda role, p: {"baseline": 3e-3, "submission": 1e-3, "reference": 1.5e-3}[role] * (1 + 0.01 * p))
    timed = device.prepare(placements=2)
    stats = time_roles(device.backend, timed, policy(min_rounds=4, max_rounds=4, target_spread=0.0),
                       lambda name: None)
    from grader.scoring import performance

    perf = performance(default_catalog().get("reduce_unrolled"), TimingResult(CASE, stats), "gpu")
    assert perf.speedup == pytest.approx(3.0)
    # rounds 0 and 2 on placement 0, 1 and 3 on placement 1
    assert perf.timed_ms["baseline"] == [[pytest.approx(3.0)] * 2, [pytest.approx(3.03)] * 2]
    assert perf.timed_ms["submission"] == [[pytest.approx(1.0)] * 2, [pytest.approx(1.01)] * 2]
    release_roles(timed)


def test_late_launches_move_a_kernels_time_less_than_they_move_its_median():
    """What slows a launch only adds to its time; where about half the launches of one kernel
    were late (a spell on some GPUs), the median jumps to the late ones and the 20th percentile
    stays with the rest."""
    rng = np.random.default_rng(7)
    steady = list(1e-4 * (1 + 0.001 * rng.standard_normal(100)))
    late = [t * (1.0 + (0.05 if i % 2 == 0 or i % 7 == 0 else 0.0)) for i, t in enumerate(steady)]  # 57% late
    calm, spell = summarize(steady), summarize(late)
    assert abs(spell["time_ms"] / calm["time_ms"] - 1) < 0.003
    assert np.median(late) / np.median(steady) - 1 > 0.04
    assert spell["time_ms"] == pytest.approx(1e3 * np.percentile(late, TIME_QUANTILE))


@pytest.mark.parametrize(("kind", "waits"), [("gpu", False), ("cpu", True)])
def test_a_gpus_timed_rounds_run_beside_the_host_threads_a_cpus_wait_for_them(monkeypatch, kind, waits):
    """On a CPU device the kernels share the host's cores with the oracle's threads."""
    from concurrent.futures import Future

    monkeypatch.setattr(benchmark_step, "benchmark_case", lambda spec, kind: dict(CASE))
    monkeypatch.setattr(device_claim, "free_bytes", lambda backend: None)
    ctx, _ = make_context(kind)
    ahead = Future()
    ahead.set_result(host_inputs())
    events = []
    ctx.host_inputs = SimpleNamespace(benchmark=ahead, finish=lambda: events.append("finish"))
    real_time_roles = benchmark_step.time_roles

    def time_roles(*args, **kwargs):
        events.append("timed rounds")
        return real_time_roles(*args, **kwargs)

    monkeypatch.setattr(benchmark_step, "time_roles", time_roles)
    assert not ctx.inputs_on_device and benchmark_step.Benchmark().run(ctx)
    assert events == (["finish", "timed rounds"] if waits else ["timed rounds"])
    release_roles(ctx.benchmark.roles)
