"""`lab grade --counters` hands the submission's compiled program from the grading's worker to the
profiling entry, which loads it rather than compile it again (on the H100 that compile was
0.2-0.35 s of a warm profiling run, 1.1-1.4 s where NVRTC's code spills and nvcc compiles it).
Here: the worker's message, the entry's choice of load or compile, and the run on PoCL; on a GPU
tests/counters/test_opencl_through_cuda.py and benchmarks/counters_both_backends.py run it."""

import base64
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grader.backends.base import CompileError, CompileUnit, ProgramImage
from grader.backends.fake import FakeBackend
from grader.backends.opencl_ptx import PtxRefused, parse_pci
from grader.backends.registry import by_name
from grader.counters import runner
from grader.counters.entry import ProfileRequest, RoleRequest, compile_roles
from grader.results import CompiledProgram, CompileResult, Grading, decode, encode
from grader.steps.compile import Compile
from grader.steps.context import Context, Request
from tests.conftest import catalog

ROOT = Path(__file__).resolve().parents[2]


def test_the_message_keeps_the_program_and_the_grading_holds_it():
    message = CompiledProgram("cubin", base64.b64encode(b"\x7fELF...").decode(), "ptxas info")
    back = decode(encode(message))
    assert back == message
    g = Grading()
    g.add(back)
    assert g.extra(CompiledProgram) == message


class Stub:
    """A backend that says which units it compiled and which programs it loaded."""

    def __init__(self, load_fails: Exception | None = None):
        self.compiled: list[str] = []
        self.loaded: list[bytes] = []
        self.load_fails = load_fails

    def compile_all(self, units):
        self.compiled += [u.filename for u in units]
        return [{"k": f"compiled {u.filename}"} for u in units]

    def load_program(self, image, entries):
        if self.load_fails is not None:
            raise self.load_fails
        self.loaded.append(image.data)
        return {"k": f"loaded {image.format}"}


def roles_and_units(program: str = base64.b64encode(b"image").decode()):
    roles = [RoleRequest("reference", "s", path="reference/s/solution.cu"),
             RoleRequest("submission", "s", source="src", filename="mine.cu", program_format="cubin",
                         program=program, program_log="log")]
    units = [CompileUnit("ref", ("k",), {}, "reference/s/solution.cu", trusted=True),
             CompileUnit("src", ("k",), {}, "mine.cu")]
    return roles, units


def test_a_role_that_came_compiled_is_loaded_and_the_others_compiled():
    backend = Stub()
    roles, units = roles_and_units()
    results = compile_roles(backend, roles, units)
    assert results == [{"k": "compiled reference/s/solution.cu"}, {"k": "loaded cubin"}]
    assert backend.compiled == ["reference/s/solution.cu"] and backend.loaded == [b"image"]


def test_a_program_the_driver_will_not_load_is_compiled_from_its_source():
    backend = Stub(load_fails=CompileError("the CUDA driver could not load the compiled kernel"))
    roles, units = roles_and_units()
    assert compile_roles(backend, roles, units)[1] == {"k": "compiled mine.cu"}
    assert backend.compiled == ["reference/s/solution.cu", "mine.cu"]


def test_refused_ptx_stays_refused():
    refused = PtxRefused("its PTX reads %envreg9, a value OpenCL's runtime sets and a CUDA launch does not")
    backend = Stub(load_fails=refused)
    roles, units = roles_and_units()
    assert compile_roles(backend, roles, units)[1] is refused
    assert backend.compiled == ["reference/s/solution.cu"]


def test_a_program_that_is_not_base64_is_compiled():
    backend = Stub()
    roles, units = roles_and_units(program="not base64!")
    compile_roles(backend, roles, units)
    assert backend.compiled == ["reference/s/solution.cu", "mine.cu"] and backend.loaded == []


def test_roles_for_sends_the_program_with_the_submission_only():
    spec = catalog().get("transpose_coalesced")
    program = CompiledProgram("ptx", "cHR4", "log")
    roles = runner.roles_for(catalog(), spec, "src", "mine.cl", ".cl", program)
    assert [(r.role, r.program_format, r.program) for r in roles] == \
        [("baseline", "", ""), ("reference", "", ""), ("submission", "ptx", "cHR4")]
    assert ProfileRequest.from_json(ProfileRequest(".", "s", "cuda", 0, {}, "o", roles, device_id="pci:0000:41:00")
                                    .to_json()).roles[2].program_log == "log"


@pytest.mark.parametrize(("name", "address"), [("pci:0000:41:00", (0, 0x41, 0)), ("pci:0001:c3:1f", (1, 0xC3, 0x1F)),
                                               ("cuda:H100:0", None), ("pci:zz:41:00", None), ("pci:0:1", None)])
def test_the_grading_device_name_gives_its_pci_address(name, address):
    assert parse_pci(name) == address


class ImageBackend(FakeBackend):
    def program_image(self, kernels):
        return ProgramImage("cubin", b"\x00\x01binary", "ptxas info: 8 registers")


def compile_step(keep_program: bool, backend) -> list:
    """The worker's steps up to the compile, with the counters plugin's payload or without."""
    from grader.steps import worker_steps

    spec = catalog().get("transpose_coalesced")
    sent: list = []
    plugins = {"counters": {"metrics": [], "keep_program": True}} if keep_program else {}
    request = Request(str(catalog().root), spec.id, "x", "mine.cu", by_name("cuda"), 0, 1, timing=False, plugins=plugins)
    ctx = Context(request, catalog(), spec, None, np.random.default_rng(1), sent.append, backend=backend)
    steps = worker_steps(tuple(plugins))
    after_compile = steps[[type(s) for s in steps].index(Compile) + 1:]
    assert Compile().run(ctx)
    for step in after_compile[:1]:
        if type(step).__name__ == "SendProgram" and step.wanted(ctx):
            assert step.run(ctx)
    return sent


def test_the_worker_sends_the_program_after_its_compile_result_where_asked():
    sent = compile_step(True, ImageBackend({"transpose": lambda *a: None}))
    assert isinstance(sent[-2], CompileResult) and sent[-2].ok
    assert sent[-1] == CompiledProgram("cubin", base64.b64encode(b"\x00\x01binary").decode(), "ptxas info: 8 registers")
    assert not any(isinstance(m, CompiledProgram) for m in compile_step(False, ImageBackend({"transpose": lambda *a: None})))
    # A backend with no image of its programs (PoCL's binaries, the fake's) sends none.
    assert not any(isinstance(m, CompiledProgram) for m in compile_step(True, FakeBackend({"transpose": lambda *a: None})))


def test_the_entry_compiles_what_opencl_cannot_load_and_refuses_ptx_that_is_not(tmp_path):
    """On a CPU device (PoCL) the OpenCL backend loads no program: the entry compiles the source and
    runs every role. On NVIDIA's OpenCL the program goes through CUDA: this one is not PTX, and
    the submission is refused with the reason (as a compile would refuse it), the others run."""
    pytest.importorskip("pyopencl")
    from grader.backends.discovery import choose, discover

    found = discover((by_name("opencl"),))
    if not found.targets:
        pytest.skip("no OpenCL device")
    spec = catalog().get("transpose_coalesced")
    source = (ROOT / "examples" / "transpose_coalesced.cl").read_text()
    roles = runner.roles_for(catalog(), spec, source, "mine.cl", ".cl", CompiledProgram("ptx", "cHR4", ""))
    out = tmp_path / "launches.json"
    request = ProfileRequest(str(catalog().root), spec.id, "opencl", -1, dict(spec.cpu_bench_cases[0]), str(out), roles)
    done = subprocess.run([sys.executable, "-m", "grader.counters.entry"], input=request.to_json(), text=True,
                          capture_output=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(out.read_text())
    launched = [launch["role"] for launch in manifest["launches"]]
    if choose(found, by_name("opencl")).kind == "cpu":
        assert launched == ["baseline", "reference", "submission"] and manifest["errors"] == {}
    else:
        assert launched == ["baseline", "reference"]
        assert manifest["errors"] == {"submission": "not profiled through CUDA: its PTX names no .target"}
