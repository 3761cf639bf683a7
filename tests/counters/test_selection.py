"""Which launches ncu profiles (grader.counters.selection): the stage's entry points, each
launch alike once where `repeats = false`; the profiling run's ncu argv and launch count
follow, and the entry switches the profiler on and off around them."""

from grader.correctness import make_setup
from grader.counters import ncu, runner
from grader.counters.entry import ProfilerSwitch, RoleRequest
from grader.counters.selection import profiled, selects
from grader.course.counter_spec import CountersSpec
from grader.course.problems import load_problem
from grader.launching import Launch, plan_for
from tests.conftest import catalog


def plan_of(stage):
    spec = catalog().get(stage)
    return spec, plan_for(load_problem(spec.problem), spec, make_setup(spec, spec.counters.case))


def test_mlp_train_profiles_its_products_once_each():
    spec, plan = plan_of("mlp_train")  # the benchmark case: two steps, then the last forward pass
    step = ["kf", "kf", "output_delta", "kb2", "kb1", "kb2", "update", "update"]
    assert [launch.kernel for launch in plan] == step + step + ["kf", "kf"]
    chosen = profiled(plan, spec.counters)
    assert [launch.kernel for launch, take in zip(plan, chosen) if take] == ["kf", "kf", "kb2", "kb1", "kb2"]
    assert not any(chosen[len(step):])  # the second step and the last forward pass: launches alike
    assert selects(spec.counters)


def test_a_stage_that_names_nothing_profiles_every_launch():
    for stage in ("transpose_coalesced", "reduce_unrolled"):
        spec, plan = plan_of(stage)
        # bracketed by the profiler's start and stop all the same: the entry's other launches
        # (inputs made on the device, an OpenCL kernel's check) are never profiled
        assert profiled(plan, spec.counters) == [True] * len(plan) and selects(spec.counters)
    assert profiled([Launch("k", (1,), (1,))], None) == [True]


def test_launches_alike_differ_in_nothing_but_their_buffers():
    counters = CountersSpec({"n": 1}, (), repeats=False)
    plan = [Launch("k", (4, 1), (16, 16), {"n": 1}, {"a": "x"}), Launch("k", (4, 1), (16, 16), {"n": 1}, {"a": "y"}),
            Launch("k", (4, 1), (16, 16), {"n": 2}), Launch("k", (8, 1), (16, 16), {"n": 1})]
    assert profiled(plan, counters) == [True, False, True, True]


def test_the_run_expects_the_chosen_launches_and_waits_for_the_profiler_start(tmp_path):
    spec = catalog().get("mlp_train")
    roles = [RoleRequest("reference", "mlp_train", path="reference/mlp_train/solution.cu"),
             RoleRequest("submission", "mlp_train", source="x", filename="k.cu")]
    launches, kernels = runner._expected_launches(catalog(), spec, roles)
    assert launches == 10 and set(kernels) == {"kf", "kb1", "kb2"}
    argv = ncu.command("/opt/ncu", ("m",), kernels, launches, tmp_path / "log", ["py"], from_start=False)
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[argv.index("--kernel-name") + 1] == "regex:^(kb1|kb2|kf)$"
    assert "--profile-from-start" not in ncu.command("/opt/ncu", ("m",), kernels, 1, tmp_path / "log", ["py"])


class Recorder:
    def __init__(self):
        self.calls = []

    def profiler(self, collecting):
        self.calls.append(collecting)


def test_the_switch_collects_during_the_chosen_launches_only():
    backend = Recorder()
    switch = ProfilerSwitch(backend, [True, True, False, True, False, False])
    for index in range(6):
        switch(index)
    switch.stop()
    assert backend.calls == [True, False, True, False]
    ending_on = ProfilerSwitch(backend := Recorder(), [False, True])
    ending_on(0), ending_on(1), ending_on.stop(), ending_on.stop()
    assert backend.calls == [True, False]
