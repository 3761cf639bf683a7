"""Counters for OpenCL kernels on NVIDIA GPUs, through CUDA (grader.backends.opencl_ptx), without a
GPU: which devices are worth a run, the trusted roles (.cl files) and their cache names apart
from CUDA's, the manifest's refusal and dropped roles read back, the profiling entry's oracle
check of each profiled launch (on PoCL, with the backend marked as running through CUDA), and
the line feedback shows."""

import html
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from grader.backends.registry import by_name
from grader.counters import cache, grading, ncu, runner
from grader.counters.entry import RAN_DIFFERENTLY, ProfileRequest
from grader.counters.model import REASON_TEXT, THROUGH_CUDA_LINE, Unavailable
from grader.counters.runner import interpret
from grader.counters.terminal import render_counters
from grader.counters.view import build
from grader.results import DeviceOpened, Grading
from tests.conftest import catalog

FIXTURES = Path(__file__).parent / "fixtures"
LOG = (FIXTURES / "transpose_coalesced.ncu.log").read_text()
MANIFEST = json.loads((FIXTURES / "transpose_coalesced.launches.json").read_text())
CASE = {"width": 1024, "height": 1024}
FACTS = cache.DeviceFacts("Stand-in GPU", "pci:0000:01:00", "580.159.04", "GPU-1234")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def with_ncu(monkeypatch):
    monkeypatch.setattr(ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")


def test_opencl_on_an_nvidia_gpu_is_worth_a_run(with_ncu):
    spec = catalog().get("transpose_padded")
    assert runner.before_running(spec, by_name("opencl"), "gpu", "NVIDIA CUDA") is None
    assert runner.before_running(spec, by_name("opencl"), "gpu") is None  # the platform not known yet: the entry decides
    assert runner.before_running(spec, by_name("opencl")) is None
    assert runner.before_running(spec, by_name("cuda"), "gpu") is None


def test_cpu_devices_and_other_platforms_are_still_refused(with_ncu):
    spec = catalog().get("transpose_padded")
    assert runner.before_running(spec, by_name("opencl"), "cpu", "Portable Computing Language").reason == \
        Unavailable.CPU_DEVICE
    assert runner.before_running(spec, by_name("cuda"), "cpu").reason == Unavailable.CPU_DEVICE
    for platform in ("AMD Accelerated Parallel Processing", "Portable Computing Language"):  # PoCL's CUDA driver too
        result = runner.before_running(spec, by_name("opencl"), "gpu", platform)
        assert result.reason == Unavailable.OPENCL and result.detail == platform
    assert runner.before_running(spec, by_name("opencl"), "other", "NVIDIA CUDA").reason == Unavailable.OPENCL


def test_the_reason_texts_say_what_is_true():
    text = REASON_TEXT[Unavailable.OPENCL]
    assert "NVIDIA GPU" in text and "NVIDIA's own OpenCL" in text and "through CUDA" in text
    assert "counters are read for CUDA kernels only" not in text
    assert "PTX" in THROUGH_CUDA_LINE and "through CUDA" in THROUGH_CUDA_LINE and "\n" not in THROUGH_CUDA_LINE
    from lab.batch.concept import reason_text

    assert "NVIDIA GPU" in reason_text(Unavailable.OPENCL)


def test_an_opencl_grading_profiles_the_cl_references(with_ncu, monkeypatch):
    asked = {}

    def profile(catalog_, spec, roles, **options):
        asked.update(roles=roles, **options)
        return runner.unavailable(Unavailable.TIMEOUT)

    monkeypatch.setattr(runner, "profile", profile)
    monkeypatch.setattr(grading, "correct_so_far", lambda g: True)
    g = Grading(timed=False)
    g.add(DeviceOpened("NVIDIA H100 80GB HBM3", "gpu", "NVIDIA Corporation", "NVIDIA CUDA", device_id="pci:0000:41:00"))
    spec = catalog().get("transpose_coalesced")
    grading.profile_grading(catalog(), spec, g, "src", "t.cl", by_name("opencl"), 0, None)
    assert [r.role for r in asked["roles"]] == ["baseline", "reference", "submission"]
    assert all(r.path.endswith(".cl") for r in asked["roles"] if r.path)
    assert asked["backend"].name == "opencl"
    g.device = replace(g.device, platform="AMD Accelerated Parallel Processing")
    assert grading.profile_grading(catalog(), spec, g, "src", "t.cl", by_name("opencl"), 0, None).reason == Unavailable.OPENCL


def test_the_cache_keys_opencl_through_cuda_apart_from_cuda():
    spec = catalog().get("transpose_coalesced")
    tool = "/usr/local/cuda/bin/ncu"
    cu = runner.roles_for(catalog(), spec, None, "")[1]
    cl = runner.roles_for(catalog(), spec, None, "", suffix=".cl")[1]
    metrics = spec.counters.metrics

    def key(role, backend):
        return runner.role_key(catalog(), spec, role, metrics, FACTS, tool, by_name(backend))

    assert key(cu, "cuda") == runner.role_key(catalog(), spec, cu, metrics, FACTS, tool)  # CUDA's names unchanged
    assert key(cu, "opencl") != key(cu, "cuda")  # the same file's route alone parts them
    assert key(cl, "opencl") != key(cu, "cuda") and key(cl, "opencl") != key(cl, "cuda")
    assert key(cl, "opencl") == key(cl, "opencl")


def test_a_role_that_ran_differently_is_paired_then_dropped():
    manifest = dict(MANIFEST, dropped=["submission"],
                    errors={"submission": f"{RAN_DIFFERENTLY} (12 elements of out differ)"})
    result = interpret(LOG, "", manifest, CASE)
    assert result.ok and result.roles == ("baseline", "reference")  # the rows still paired in order
    assert result.role_errors["submission"].startswith(RAN_DIFFERENTLY)
    reference = result.of("reference")[0].value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    assert reference == interpret(LOG, "", MANIFEST, CASE).of("reference")[0].value(
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")


def test_the_entrys_refusal_of_a_device_is_the_typed_reason():
    manifest = {"launches": [], "errors": {}, "unavailable": "opencl",
                "detail": "Radeon RX 7900 on AMD Accelerated Parallel Processing"}
    no_kernels = (FIXTURES / "opencl_no_kernels.ncu.log").read_text()
    result = interpret(no_kernels, "", manifest, CASE, status=0)
    assert result.reason == Unavailable.OPENCL and "AMD" in result.detail
    assert interpret(no_kernels, "", dict(manifest, unavailable="no_such_reason"), CASE).reason == \
        Unavailable.NO_KERNELS


def shown_text(result) -> str:
    out = io.StringIO()
    render_counters(build(catalog().get("transpose_coalesced"), result), Console(file=out, width=300,
                                                                                   color_system=None))
    return " ".join(out.getvalue().split())


def test_feedback_says_the_counters_came_through_cuda():
    result = replace(interpret(LOG, "", MANIFEST, CASE), through_cuda=True)
    shown = build(catalog().get("transpose_coalesced"), result)
    assert shown.route == THROUGH_CUDA_LINE
    assert THROUGH_CUDA_LINE in shown_text(result)
    assert THROUGH_CUDA_LINE not in shown_text(interpret(LOG, "", MANIFEST, CASE))


def test_markdown_and_html_show_the_line():
    from grader.feedback import render_html, render_markdown
    from grader.results import CaseResult, CompileResult
    from grader.scoring import build_report

    spec = catalog().get("transpose_coalesced")
    g = Grading(timed=False)
    for message in (DeviceOpened("Test GPU", "gpu", platform="NVIDIA CUDA"), CompileResult(True, ""),
                    CaseResult("w=32", True)):
        g.add(message)
    result = replace(interpret(LOG, "", MANIFEST, CASE), through_cuda=True)
    report = build_report(spec, g, file="t.cl", backend="opencl", seed=1, grader_version="1")
    report = replace(report, sections={"counters": build(spec, result)})
    assert THROUGH_CUDA_LINE in render_markdown(report)
    assert THROUGH_CUDA_LINE in html.unescape(render_html(report))


# -- the profiling entry's check of each launch, on PoCL --------------------------------------------


@pytest.fixture
def pocl_through_cuda(monkeypatch):
    """The entry's backend: this machine's OpenCL device, marked as a backend that runs OpenCL
    kernels through CUDA (only the mark matters to the entry's check)."""
    pytest.importorskip("pyopencl")
    from grader.backends.discovery import discover
    from grader.backends.opencl import OpenCLBackend
    from grader.counters import entry

    if not discover((by_name("opencl"),)).targets:
        pytest.skip("no OpenCL device")

    def opened(request):
        backend = OpenCLBackend(0)
        backend.through_cuda = True
        return backend

    monkeypatch.setattr(entry, "_open", opened)
    return entry


def run_in_process(entry, tmp_path, stage, source):
    spec = catalog().get(stage)
    roles = runner.roles_for(catalog(), spec, source, f"{stage}.cl", suffix=".cl")
    out = tmp_path / "launches.json"
    entry.run(ProfileRequest(str(catalog().root), stage, "opencl", -1, dict(spec.cpu_bench_cases[0]), str(out), roles))
    return json.loads(out.read_text())


WRONG = """__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[x * height + y + j] = 0.0f;
}
"""


def test_a_kernel_whose_outputs_are_wrong_is_not_profiled_and_the_others_are(pocl_through_cuda, tmp_path):
    # Each role runs once on the stage's largest test case first, its outputs judged; a role
    # whose outputs are wrong there is not launched on the profiled (benchmark) case at all.
    manifest = run_in_process(pocl_through_cuda, tmp_path, "transpose_coalesced", WRONG)
    assert [launch["role"] for launch in manifest["launches"]] == ["baseline", "reference"]
    assert manifest["dropped"] == []
    assert manifest["errors"]["submission"].startswith(RAN_DIFFERENTLY + " (")
    assert set(manifest["errors"]) == {"submission"}


def test_right_outputs_keep_every_role(pocl_through_cuda, tmp_path):
    source = (ROOT / "examples" / "transpose_coalesced.cl").read_text()
    manifest = run_in_process(pocl_through_cuda, tmp_path, "transpose_coalesced", source)
    assert manifest["dropped"] == [] and manifest["errors"] == {}
    assert len(manifest["launches"]) == 3
