"""Where counters cannot be read, a typed reason and one line, and nothing else stops: no ncu
on PATH, PoCL (a real `lab profile` on this machine's OpenCL CPU device), no CUDA GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.counters import ncu, runner
from grader.counters.model import REASON_TEXT, ProfileResult, Unavailable, unavailable
from tests.conftest import catalog

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "transpose_coalesced.cl"
CU = ROOT / "reference" / "transpose_coalesced" / "solution.cu"


def lab(*args, env=None, timeout=120.0):
    return subprocess.run([sys.executable, "-m", "lab", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_every_reason_has_one_line():
    for reason in Unavailable:
        assert "\n" not in REASON_TEXT[reason] and REASON_TEXT[reason]


def test_no_ncu_on_path(monkeypatch, tmp_path):
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "_FOLDERS", ())
    assert ncu.ncu_path() is None
    spec = catalog().get("transpose_coalesced")
    assert runner.before_running(spec, by_name("cuda"), "gpu").reason == Unavailable.NO_NCU
    result = runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "x", "x.cu"))
    assert result.reason == Unavailable.NO_NCU


def test_lab_ncu_off_and_a_named_one(monkeypatch, tmp_path):
    monkeypatch.setenv(ncu.NCU_ENV, "off")
    assert ncu.ncu_path() is None
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    assert ncu.ncu_path() == str(fake)


def test_opencl_and_cpu_devices_are_decided_before_running():
    spec = catalog().get("transpose_padded")
    assert runner.before_running(spec, by_name("opencl"), "cpu").reason == Unavailable.CPU_DEVICE
    # an OpenCL GPU of another platform than NVIDIA's (an NVIDIA GPU's PTX runs through CUDA:
    # tests/counters/test_opencl_through_cuda.py)
    assert runner.before_running(spec, by_name("opencl"), "gpu", "AMD Accelerated Parallel Processing").reason == \
        Unavailable.OPENCL


def test_permission_is_decided_from_the_driver_without_running(monkeypatch, tmp_path):
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 99\n")
    fake.chmod(0o755)
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    monkeypatch.setattr(ncu, "PARAMS", params)
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (params,))
    monkeypatch.setattr(runner, "_runs_as_admin", lambda sandboxed: (False, None))
    spec = catalog().get("transpose_coalesced")
    result = runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "x", "x.cu"))
    assert result.reason == Unavailable.PERMISSION


def test_a_profile_run_of_a_fake_ncu_that_prints_no_table(monkeypatch, tmp_path):
    """The whole parent path with a stand-in ncu (a shell script that runs nothing): ncu's
    error line becomes the detail of FAILED, never a traceback."""
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==ERROR== something went wrong here'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (tmp_path / "none",))
    spec = catalog().get("transpose_coalesced")
    result = runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "x", "x.cu"), sandboxed=False)
    assert result.reason == Unavailable.FAILED and result.detail == "something went wrong here"


def opencl_default_is_a_cpu():
    """These tests are PoCL's: `lab grade x.cl` there runs on a CPU device. On a GPU machine the
    default OpenCL device is the GPU, where counters are read (tests/counters/test_opencl_through_cuda.py)."""
    pytest.importorskip("pyopencl")
    from grader.backends.discovery import choose, discover

    found = discover((by_name("opencl"),))
    if not found.targets:
        pytest.skip("no OpenCL device")
    if choose(found, by_name("opencl")).kind != "cpu":
        pytest.skip("the default OpenCL device here is not a CPU (PoCL)")


def test_lab_profile_on_pocl_prints_the_reason_and_exits_0(tmp_path):
    opencl_default_is_a_cpu()
    out = tmp_path / "c.json"
    done = lab("profile", "transpose_coalesced", EXAMPLE, "--json", out)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "hardware counters unavailable:" in text
    data = json.loads(out.read_text())
    assert data["available"] is False
    assert data["reason"] in ("cpu_device", "opencl")
    assert " ".join(REASON_TEXT[Unavailable(data["reason"])].split()) in text
    assert "Traceback" not in done.stderr


def test_lab_profile_of_a_cuda_kernel_without_a_gpu(tmp_path):
    from grader.backends.discovery import discover

    if discover((by_name("cuda"),)).targets:
        pytest.skip("a CUDA GPU is here")
    done = lab("profile", "transpose_coalesced", CU, "--json", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reason"] == "no_gpu"
    assert "no CUDA GPU here" in " ".join(done.stderr.split())


def test_lab_profile_usage_errors(tmp_path):
    assert lab("profile", "no_such_stage", CU).returncode == 2
    assert lab("profile", "transpose_coalesced", tmp_path / "missing.cu").returncode == 2
    bad = tmp_path / "bad.cu"
    bad.write_text('#include <stdio.h>\nextern "C" __global__ void transpose(float *out, const float *in, '
                   'int width, int height) {}\n')
    done = lab("profile", "transpose_coalesced", bad)
    assert done.returncode == 1 and "Traceback" not in done.stderr


def test_lab_grade_with_counters_on_pocl_goes_on_and_says_why(tmp_path):
    opencl_default_is_a_cpu()
    out = tmp_path / "r.json"
    done = lab("grade", "transpose_coalesced", EXAMPLE, "--counters", "--json", out, timeout=300)
    assert done.returncode == 5, done.stderr  # correct, speed still to be graded: as without --counters
    data = json.loads(out.read_text())
    assert data["counters"]["reason"] == "cpu_device" and data["score"] == 70
    assert "hardware counters unavailable: no GPU counters on a CPU device (PoCL)" in " ".join(done.stdout.split())
    assert [c["name"] for c in data["checks"]] == ["compiles", "correct", "fast"]


def test_lab_grade_without_counters_shows_none(tmp_path):
    opencl_default_is_a_cpu()
    out = tmp_path / "r.json"
    done = lab("grade", "transpose_coalesced", EXAMPLE, "--json", out, timeout=300)
    assert done.returncode == 5, done.stderr
    assert json.loads(out.read_text())["counters"] is None
    assert "hardware counters" not in done.stdout and "--counters" not in done.stdout  # none to read on a CPU


def test_counters_are_read_by_default_where_this_machine_can(monkeypatch, tmp_path):
    """grader.counters.grading.reading: --counters always (the whole table, or why not),
    --no-counters never; neither given, the lesson's metrics where a GPU, ncu and the driver let the
    profiled process's user read them and the stage has a lesson line; decided without running
    anything."""
    from grader.backends.registry import Target
    from grader.counters.grading import Mode, reading

    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 99\n")
    fake.chmod(0o755)
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 0\n")
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (params,))
    monkeypatch.setattr(runner, "_runs_as_admin", lambda sandboxed: (False, None))
    spec = catalog().get("transpose_coalesced")

    def target(backend="cuda", kind="gpu", platform=""):
        return Target(by_name(backend), 0, "GPU", kind, platform)

    default = reading(None, spec, target())
    assert default is not None and default.mode == Mode.DEFAULT
    assert default.metrics == spec.counters.lesson_metrics  # the lesson's metrics, no more
    assert reading(True, spec, target()).metrics == spec.counters.metrics
    assert reading(False, spec, target()) is None
    assert reading(None, spec, target("opencl", platform="NVIDIA CUDA")) is not None
    assert reading(None, spec, target("cuda", kind="unknown")) is not None  # the worker picks: maybe a GPU
    import importlib.util

    with monkeypatch.context() as with_pycuda:  # as on a GPU machine with PyCUDA beside PyOpenCL
        real = importlib.util.find_spec
        with_pycuda.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "pycuda" else real(name))
        assert reading(None, spec, target("opencl", platform="NVIDIA CUDA")) is not None
        assert reading(None, spec, target("opencl", platform="AMD Accelerated Parallel Processing")) is None
    assert reading(None, spec, target("opencl", kind="cpu", platform="Portable Computing Language")) is None
    assert reading(None, catalog().get("transpose_diagonal"), target()) is None  # no lesson line: nothing to say
    assert reading(True, catalog().get("transpose_diagonal"), target()) is not None
    params.write_text("RmProfilingAdminOnly: 1\n")  # kept to administrators: the sandbox's user reads none
    assert reading(None, spec, target()) is None and reading(True, spec, target()) is not None
    params.write_text("RmProfilingAdminOnly: 0\n")
    monkeypatch.setenv(ncu.NCU_ENV, "off")  # no ncu and no libcupti (a laptop): nothing, not even a line
    monkeypatch.setenv("LAB_CUPTI", "off")
    assert reading(None, spec, target()) is None
    cupti = tmp_path / "libcupti.so"
    cupti.write_bytes(b"")
    monkeypatch.setenv("LAB_CUPTI", str(cupti))  # no ncu, but the worker reads them itself (CUDA)
    assert reading(None, spec, target()) is not None
    assert reading(None, spec, target("opencl", platform="AMD Accelerated Parallel Processing")) is None
    # NVIDIA's OpenCL: its PTX read through CUDA in the worker, where PyCUDA is there to load it.
    with_pycuda = importlib.util.find_spec("pycuda") is not None
    assert (reading(None, spec, target("opencl", platform="NVIDIA CUDA")) is not None) == with_pycuda
    with monkeypatch.context() as without_pycuda:
        without_pycuda.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pycuda" else object())
        assert reading(None, spec, target("opencl", platform="NVIDIA CUDA")) is None  # ncu's route, and no ncu
    monkeypatch.setenv("LAB_CUPTI", "off")
    assert reading(True, spec, target()).mode == Mode.ON  # asked for: the reason is said
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    monkeypatch.setenv("LAB_COUNTERS", "off")  # a machine whose gradings do without them by default
    assert reading(None, spec, target()) is None and reading(True, spec, target()) is not None


def test_the_default_is_silent_where_the_machine_cannot_read_them():
    from grader.counters.grading import SILENT_BY_DEFAULT, Mode, Reading

    default, asked = Reading(Mode.DEFAULT, ()), Reading(Mode.ON, ())
    for reason in Unavailable:
        result = unavailable(reason, "detail")
        assert asked.shown(result) is result  # --counters: every reason is one line
        silent = reason in SILENT_BY_DEFAULT
        assert (default.shown(result) is None) == silent, reason
    for reason in (Unavailable.NO_GPU, Unavailable.NO_NCU, Unavailable.CPU_DEVICE, Unavailable.PERMISSION,
                   Unavailable.OPENCL, Unavailable.NOT_CORRECT):
        assert reason in SILENT_BY_DEFAULT  # a laptop, PoCL, a locked driver, a wrong kernel: nothing printed
    for reason in (Unavailable.FAILED, Unavailable.TIMEOUT, Unavailable.PROFILER_BUSY, Unavailable.UNREADABLE):
        assert reason not in SILENT_BY_DEFAULT  # a reading that should have worked: one "unavailable" line
    ok = ProfileResult({"n": 1})
    assert default.shown(ok) is ok and default.shown(None) is None


def test_the_default_says_nothing_where_the_lesson_does_not_separate():
    from grader.counters.grading import Mode, Reading
    from grader.counters.model import CounterReading, KernelCounters

    spec = catalog().get("reduce_unrolled")
    metric = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"

    def read(reference: float) -> ProfileResult:
        return ProfileResult(dict(spec.counters.case), tuple(
            KernelCounters(role, "reduce", (CounterReading(metric, value),))
            for role, value in (("baseline", 2097152.0), ("reference", reference), ("submission", 2097152.0))))

    # NVIDIA's OpenCL makes scalar loads of the reference's vload4: its value is the baseline's.
    alike, apart = read(2097152.0), read(524288.0)
    assert Reading(Mode.DEFAULT, (metric,)).shown(alike, spec) is None
    assert Reading(Mode.DEFAULT, (metric,)).shown(apart, spec) is apart
    assert Reading(Mode.ON, (metric,)).shown(alike, spec) is alike  # --counters: the table, as read


def test_a_failed_run_is_kept_where_asked(monkeypatch, tmp_path):
    """LAB_COUNTERS_KEEP: a failed run's words are kept for a closer look (none kept otherwise)."""
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho 'Segmentation fault'\nexit 139\n")
    fake.chmod(0o755)
    monkeypatch.setenv(ncu.NCU_ENV, str(fake))
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (tmp_path / "none",))
    monkeypatch.delenv(runner.KEEP_ENV, raising=False)
    spec = catalog().get("transpose_coalesced")
    roles = runner.roles_for(catalog(), spec, "x", "x.cu")
    kept = tmp_path / "kept"
    kept.mkdir()
    assert runner.profile(catalog(), spec, roles, sandboxed=False).reason == Unavailable.FAILED
    assert list(kept.iterdir()) == []
    monkeypatch.setenv(runner.KEEP_ENV, str(kept))
    result = runner.profile(catalog(), spec, roles, sandboxed=False)
    assert result.reason == Unavailable.FAILED and result.detail == "Segmentation fault"
    (folder,) = kept.iterdir()
    assert folder.name.startswith("transpose_coalesced-")
    assert "Segmentation fault" in (folder / "output.txt").read_text() and (folder / "status.txt").read_text() == "139"
