"""The counters read in the grading worker's own process (CUPTI's Range Profiler:
grader.counters.cupti, grader.plugins.counters_steps) and the parent's use of them
(grader.steps.parent.ReadCounters), without a GPU: where no libcupti is found the route says
"unavailable" and the parent reads them the ncu way; the worker's typed result crosses the pipe
and is checked before it is believed. The CUPTI calls themselves run on a GPU only
(benchmarks/counters_routes.py compares them with ncu's)."""

from __future__ import annotations

import math

import pytest

from grader.backends.registry import by_name
from grader.counters import cupti
from grader.counters.grading import Mode, Reading, from_worker, in_worker
from grader.counters.model import Unavailable, unavailable
from grader.results import (
    CaseResult,
    CompileResult,
    CountersRead,
    DeviceOpened,
    Grading,
    decode,
    encode,
)
from tests.conftest import catalog

STORE = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")


@pytest.fixture
def no_cupti(monkeypatch):
    monkeypatch.setenv(cupti.LIBRARY_ENV, "off")
    monkeypatch.setattr(cupti._Library, "handle", None)


def correct_grading(read: CountersRead | None) -> Grading:
    g = Grading(device=DeviceOpened("NVIDIA H100", "gpu", "NVIDIA", "CUDA 13.0"), compiled=CompileResult(True))
    g.cases.append(CaseResult("n=1024", True))
    if read is not None:
        g.extras.append(read)
    return g


def launch(role: str, sectors: float, requests: float) -> tuple[str, str, dict[str, float | None]]:
    return (role, "transpose", {STORE[0]: sectors, STORE[1]: requests})


def test_no_library_is_found_where_it_is_turned_off_or_missing(monkeypatch, tmp_path):
    monkeypatch.setenv(cupti.LIBRARY_ENV, "off")
    assert cupti.library_path() is None
    monkeypatch.setenv(cupti.LIBRARY_ENV, str(tmp_path / "libcupti.so"))
    assert cupti.library_path() is None
    (tmp_path / "libcupti.so").write_bytes(b"")
    assert cupti.library_path() == str(tmp_path / "libcupti.so")


def test_without_a_library_the_profiler_is_unavailable(no_cupti):
    with pytest.raises(cupti.CuptiUnavailable) as raised:
        cupti.RangeProfiler(0, STORE)
    assert raised.value.reason == Unavailable.FAILED and "libcupti" in raised.value.detail


def test_the_parameter_structs_have_the_headers_sizes():
    # CUPTI_PROFILER_STRUCT_SIZE: up to the end of the last field (cupti_range_profiler.h,
    # cupti_profiler_host.h, CUDA 12.6), on a 64-bit machine.
    assert cupti._params(cupti.RangeSetConfig).structSize == 90
    assert cupti._params(cupti.RangeStop).structSize == 41
    assert cupti._params(cupti.RangeEnable).structSize == 32
    assert cupti._params(cupti.RangeCounterDataSize).structSize == 64
    assert cupti._params(cupti.HostInitialize).structSize == 48
    assert cupti._params(cupti.HostEvaluate).structSize == 72
    assert cupti._params(cupti.DeviceGetChipName).structSize == 32


def test_the_worker_reads_them_where_a_library_is_found(monkeypatch, tmp_path):
    import importlib.util

    reads = Reading(Mode.DEFAULT, STORE)
    library = tmp_path / "libcupti.so"
    library.write_bytes(b"")
    monkeypatch.setenv(cupti.LIBRARY_ENV, str(library))
    assert in_worker(reads, by_name("cuda")) == STORE
    # NVIDIA's OpenCL: its PTX through CUDA in the worker, where PyCUDA is there to load it.
    with_pycuda = importlib.util.find_spec("pycuda") is not None
    assert in_worker(reads, by_name("opencl")) == (STORE if with_pycuda else ())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pycuda" else object())
    assert in_worker(reads, by_name("opencl")) == ()
    assert in_worker(reads, by_name("cuda")) == STORE
    assert in_worker(None, by_name("cuda")) == ()
    monkeypatch.setenv(cupti.LIBRARY_ENV, "off")
    assert in_worker(reads, by_name("cuda")) == ()


def test_a_role_not_read_through_cuda_is_said_beside_the_others():
    spec = catalog().get("transpose_coalesced")
    why = "ran differently through CUDA than through OpenCL: its counters are not shown"
    read = CountersRead([launch("baseline", 32.0, 1.0), launch("reference", 4.0, 1.0)],
                        role_errors={"submission": why}, seconds=0.4)
    back = decode(encode(read))
    assert isinstance(back, CountersRead) and back.ok and back.role_errors == {"submission": why}
    profile = from_worker(spec, correct_grading(back), STORE, through_cuda=True)
    assert profile is not None and profile.ok and profile.through_cuda
    assert profile.roles == ("baseline", "reference") and profile.role_errors == {"submission": why}
    # Nothing of the submission's, and nothing said of it: not believed.
    assert from_worker(spec, correct_grading(CountersRead([launch("reference", 4.0, 1.0)],
                                                          role_errors={"ceiling": why})), STORE) is None


def test_the_workers_result_crosses_the_pipe_typed():
    read = CountersRead([launch("submission", 4.0, 1.0)], seconds=0.25)
    back = decode(encode(read))
    assert isinstance(back, CountersRead) and back.ok
    g = Grading()
    g.add(back)
    assert g.extra(CountersRead) is back
    failed = decode(encode(CountersRead(reason=Unavailable.PERMISSION.value, detail="CUPTI: insufficient")))
    assert isinstance(failed, CountersRead) and not failed.ok


def test_the_workers_values_become_the_profile_in_the_roles_order():
    spec = catalog().get("transpose_coalesced")
    read = CountersRead([launch("submission", 32.0, 1.0), launch("baseline", 32.0, 1.0),
                         launch("reference", 4.0, 1.0)], seconds=0.3)
    profile = from_worker(spec, correct_grading(read), STORE)
    assert profile is not None and profile.ok
    assert profile.roles == ("baseline", "reference", "submission")
    assert profile.of("reference")[0].value(STORE[0]) == 4.0
    assert profile.seconds == 0.3 and profile.device == "NVIDIA H100" and profile.cached == ()
    assert profile.case == dict(spec.counters.case)


@pytest.mark.parametrize("launches", [
    [("ceiling", "k", {STORE[0]: 1.0, STORE[1]: 1.0})],  # a role never asked for
    [("submission", "k", {STORE[0]: 1.0})],  # a metric missing
    [("submission", "k", {STORE[0]: "4", STORE[1]: 1.0})],  # not a number
    [("submission", "k", {STORE[0]: math.inf, STORE[1]: 1.0})],
    [("submission", "k")],
    [("reference", "k", {STORE[0]: 1.0, STORE[1]: 1.0})],  # no submission
])
def test_anything_else_than_asked_is_not_believed(launches):
    spec = catalog().get("transpose_coalesced")
    assert from_worker(spec, correct_grading(CountersRead(launches)), STORE) is None


def test_a_failed_reading_in_the_worker_gives_nothing():
    spec = catalog().get("transpose_coalesced")
    read = CountersRead(reason=Unavailable.PERMISSION.value, detail="CUPTI cuptiRangeProfilerEnable: ...")
    assert from_worker(spec, correct_grading(read), STORE) is None


def test_the_counters_context_says_why_it_is_not_ready(no_cupti):
    from grader.counters.own_context import CountersContext

    own = CountersContext("pci:0000:99:00", STORE).start()
    own.wait()
    assert not own.ready and own.failure is not None and own.failure[0] == Unavailable.FAILED
    assert own.close() == 0.0  # nothing was made: nothing to free


def _parent(read: CountersRead | None, metrics: tuple[str, ...]):
    from grader.backends.registry import Target
    from grader.grade_options import GradeOptions
    from grader.plugins.counters import CountersState
    from grader.steps.context import Request
    from grader.steps.parent import Parent

    spec = catalog().get("transpose_coalesced")
    parent = Parent(catalog(), spec, "", "t.cu", Target(by_name("cuda"), 0, "NVIDIA H100", "gpu"),
                    GradeOptions(plugins={"counters": True}), 1, correct_grading(read))
    payload = {"metrics": list(metrics), "keep_program": True}
    parent.request = Request(course_root=str(catalog().root), stage=spec.id, source="", filename="t.cu",
                             backend=by_name("cuda"), device=0, seed=1, plugins={"counters": payload})
    return parent, CountersState(payload=payload, reads=Reading(Mode.ON, STORE))


def test_the_parent_uses_the_workers_counters_and_starts_no_ncu(monkeypatch):
    from grader.counters import grading
    from grader.plugins.counters import PLUGIN

    def no_ncu(*args, **kwargs):
        raise AssertionError("ncu was started")

    monkeypatch.setattr(grading, "profile_grading", no_ncu)
    parent, state = _parent(CountersRead([launch("submission", 4.0, 1.0)], seconds=0.2), STORE)
    shown = PLUGIN.section(parent, state)
    assert shown is not None and shown.available and shown.rows
    assert any(row.yours == 4.0 for row in shown.rows)  # the submission's sectors per request, read in the worker
    assert parent.grading.phases["counters"] == 0.2


def test_the_parent_falls_back_to_ncu_where_the_worker_read_none(monkeypatch):
    from grader.counters import grading
    from grader.plugins.counters import PLUGIN

    asked = []

    def ncu_route(*args, **kwargs):
        asked.append(args[10] if len(args) > 10 else kwargs.get("metrics"))
        return unavailable(Unavailable.PERMISSION)

    monkeypatch.setattr(grading, "profile_grading", ncu_route)
    monkeypatch.setattr(grading, "not_profiled", lambda spec, g, backend, started=None: None)
    parent, state = _parent(CountersRead(reason=Unavailable.DEVICE_UNSUPPORTED.value, detail="CUPTI ..."), STORE)
    shown = PLUGIN.section(parent, state)
    assert asked == [STORE] and shown is not None and shown.reason == Unavailable.PERMISSION


def _worker_context(backend: str, kind: str, platform: str, counters: tuple[str, ...] = STORE):
    from types import SimpleNamespace

    import numpy as np

    from grader.steps.context import Context, Request

    spec = catalog().get("transpose_coalesced")
    request = Request(course_root=str(catalog().root), stage=spec.id, source="", filename="t",
                      backend=by_name(backend), device=0, seed=1, plugins={"counters": {"metrics": list(counters)}})
    ctx = Context(request, catalog(), spec, None, np.random.default_rng(1), lambda message: None)
    ctx.backend = SimpleNamespace(info=SimpleNamespace(kind=kind, platform=platform))  # type: ignore[assignment]
    return ctx


def test_the_counters_context_is_made_for_an_opencl_gpu_grading_only():
    from grader.plugins.counters_steps import OpenCountersContext

    step = OpenCountersContext()
    assert step.wanted(_worker_context("opencl", "gpu", "NVIDIA CUDA"))
    assert not step.wanted(_worker_context("opencl", "gpu", "NVIDIA CUDA", counters=()))
    assert not step.wanted(_worker_context("opencl", "cpu", "Portable Computing Language"))
    assert not step.wanted(_worker_context("cuda", "gpu", "CUDA 13.0"))  # read in its own context
    other = _worker_context("opencl", "gpu", "AMD Accelerated Parallel Processing")
    assert step.run(other) and "counters" not in other.plugin_data  # not NVIDIA's: no CUDA context to make


def test_an_opencl_grading_off_nvidias_platform_says_why():
    from types import SimpleNamespace

    from grader.plugins.counters_steps import measure_through_cuda

    ctx = _worker_context("opencl", "gpu", "AMD Accelerated Parallel Processing")
    ctx.benchmark = SimpleNamespace(roles={}, case={}, on_device=True)
    read = measure_through_cuda(ctx, STORE)
    assert read.reason == Unavailable.OPENCL.value and not read.ok and "AMD" in read.detail
