"""[counters] in a stage's spec: read, checked, one-line reasons for what is wrong."""

import pytest

from grader.course.counter_spec import BUILTIN, DURATION, METRIC, Better, load_counters, metrics_for
from grader.course.spec import SpecError, load_spec
from tests.conftest import catalog
from tests.unit.test_spec import GOOD, write

BENCH = "[benchmark]\ncases = [ { width = 1024, height = 1024 } ]\n"  # the counters' case

COUNTERS = """
[counters]
show = ["global_store_sectors_per_request", "per_element"]
[counters.lessons]
global_store_sectors_per_request = "the writes go down a column"
[counters.indicators.per_element]
numerator = { "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum" = 1000 }
per = "width * height"
better = "higher"
digits = 2
"""


def test_every_shipped_stage_shows_counters_and_grades_none():
    for spec in catalog().stages:
        assert spec.counters is not None, spec.id
        assert spec.counters.check is None and "concept" not in spec.points, spec.id
        assert all(METRIC.match(m) for m in spec.counters.metrics), spec.id
        spec.launch_shape(spec.counters.case)


def test_every_shipped_stage_says_so_in_its_readme():
    for spec in catalog().stages:
        text = " ".join(spec.readme().read_text().split())
        assert "## Hardware counters" in text and "On an H100" in text, spec.id  # what was measured
        graded = spec.counters is not None and spec.counters.check is not None
        assert graded or "No points depend" in text or "not switched on" in text, spec.id  # and why not graded


def test_counters_are_read_on_the_benchmark_case(tmp_path):
    spec = load_spec(write(tmp_path, "s1", GOOD.format(id="s1").replace(
        "[benchmark]\n", "[benchmark]\ncases = [ { width = 4096, height = 2048 }, { width = 64, height = 64 } ]\n")
        + COUNTERS))
    assert spec.counters.case == {"width": 4096, "height": 2048} == spec.bench_cases[0]
    with pytest.raises(SpecError, match="needs a \\[benchmark\\] case"):
        load_spec(write(tmp_path, "s2", GOOD.format(id="s2") + COUNTERS))
    for spec in catalog().stages:  # every shipped stage: the counters describe the timed launch
        assert spec.counters is not None and spec.counters.case == spec.bench_cases[0], spec.id


def test_a_lesson_and_the_metrics_it_needs(tmp_path):
    spec = load_spec(write(tmp_path, "s1", GOOD.format(id="s1").replace("[benchmark]\n", BENCH) + COUNTERS + (
        '[counters.lesson]\nindicator = "global_store_sectors_per_request"\nshown = "coalesced"\n'
        'missed = "not coalesced"\n')))
    counters = spec.counters
    assert counters.lesson.indicator == "global_store_sectors_per_request"
    assert counters.lesson_metrics == ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                                       "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
    assert set(counters.lesson_metrics) < set(counters.metrics)
    assert metrics_for((BUILTIN["achieved_occupancy"],))[0] == DURATION  # an average: weighted by duration
    lessons = {s.id: s.counters.lesson.indicator for s in catalog().stages if s.counters.lesson is not None}
    assert lessons == {  # the stages whose lesson one counter separates on an H100 (docs/counters.md)
        "transpose_coalesced": "global_store_sectors_per_request",
        "transpose_padded": "shared_load_bank_conflicts_per_request",
        "reduce_sequential": "warp_instructions", "reduce_first_add": "warp_instructions",
        "reduce_unrolled": "global_load_requests_per_1000_elements", "matmul_tiled": "global_loads_per_fma",
        "gemm_coarsened": "shared_loads_per_fma", "gemm_register_2d": "shared_loads_per_fma",
        "mlp_train": "global_loads_per_fma"}


def test_a_stage_with_counters(tmp_path):
    spec = load_spec(write(tmp_path, "s1", GOOD.format(id="s1").replace("[benchmark]\n", BENCH) + COUNTERS))
    counters = spec.counters
    assert counters is not None and counters.case == {"width": 1024, "height": 1024}
    assert [i.name for i in counters.show] == ["global_store_sectors_per_request", "per_element"]
    own = counters.indicator("per_element")
    assert own.numerator == (("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000.0),)
    assert own.per == "width * height" and own.better == Better.HIGHER and own.digits == 2
    assert "gpu__time_duration.sum" not in counters.metrics  # counts only: no average to weight by duration
    assert len(counters.metrics) == len(set(counters.metrics))


@pytest.mark.parametrize("extra, reason", [
    ('[counters]\ncase = { width = 64, height = 64 }\nshow = ["warp_instructions"]', "read on the GPU benchmark case"),
    ('[counters]\nshow = ["nonsense"]', "unknown indicators"),
    ('[counters]\nshow = []', "non-empty list"),
    ('[counters]\nshow = ["warp_instructions"]\n'
     '[counters.indicators.x]\nnumerator = ["rm -rf /"]', "not an Nsight Compute metric name"),
    ('[counters]\nshow = ["warp_instructions"]\n'
     '[counters.lessons]\nachieved_occupancy = "x"', "not in show"),
    ('[counters]\nshow = ["warp_instructions"]\nextra = 1', "unknown keys"),
    ('[counters]\nshow = ["warp_instructions"]\n'
     '[counters.check]\nindicator = "achieved_occupancy"', "not in show"),
    ('[counters]\nshow = ["warp_instructions"]\n'
     '[counters.check]\nindicator = "warp_instructions"\nwithin = 0.5', "factor of 1 or more"),
    ('[counters]\nshow = ["warp_instructions"]\n[counters.lesson]\nindicator = "warp_instructions"\nshown = "x"',
     "needs missed"),
    ('[counters]\nshow = ["warp_instructions"]\n[counters.lesson]\nindicator = "achieved_occupancy"\nshown = "x"\n'
     'missed = "y"', "not in show"),
    ('[counters]\nshow = ["warp_instructions"]\nkernels = ["kf"]',
     "not entry points of this stage"),
    ('[counters]\nshow = ["warp_instructions"]\nkernels = "transpose"',
     "kernels must be a list"),
    ('[counters]\nshow = ["warp_instructions"]\nrepeats = "no"',
     "repeats must be true or false"),
])
def test_bad_counters_are_refused_with_the_reason(tmp_path, extra, reason):
    with pytest.raises(SpecError, match=reason):
        load_spec(write(tmp_path, "s1", GOOD.format(id="s1").replace("[benchmark]\n", BENCH) + extra))


def test_no_points_go_to_the_counters(tmp_path):
    """The counters are shown, never graded: a stage giving them points is refused with the reason."""
    text = GOOD.format(id="s1").replace("[benchmark]\n", BENCH).replace("correct = 90 }", "correct = 80, concept = 10 }")
    with pytest.raises(SpecError, match="no check grades the hardware counters"):
        load_spec(write(tmp_path, "s1", text))


def test_a_check_rule_marks_a_worse_value_without_grading_it(tmp_path):
    text = GOOD.format(id="s1").replace("[benchmark]\n", BENCH) + (
        '[counters]\nshow = ["global_store_sectors_per_request"]\n'
        '[counters.check]\nindicator = "global_store_sectors_per_request"\nwithin = 1.5\nslack = 0\n')
    spec = load_spec(write(tmp_path, "s1", text))
    assert spec.max_score == 100 and spec.counters.check.within == 1.5 and "concept" not in spec.points
    indicator = BUILTIN["global_store_sectors_per_request"]
    assert spec.counters.check.passes(6.0, 4.0, indicator) and not spec.counters.check.passes(6.5, 4.0, indicator)


def test_load_counters_alone():
    assert load_counters(None) is None
    with pytest.raises(ValueError, match="must be a table"):
        load_counters([1])


def test_builtin_metric_names_are_well_formed():
    for indicator in BUILTIN.values():
        assert all(METRIC.match(m) for m in indicator.metrics), indicator.name


def test_which_launches_are_profiled_is_read(tmp_path):
    text = GOOD.format(id="s1").replace("[benchmark]\n", BENCH) + ('[counters]\nshow = ["warp_instructions"]\n'
                                   'kernels = ["transpose", "transpose"]\nrepeats = false\n')
    counters = load_spec(write(tmp_path, "s1", text)).counters
    assert counters.kernels == ("transpose",) and counters.repeats is False
