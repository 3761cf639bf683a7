"""The compilers cannot open the machine's files, sandbox or not (grader.backends.confine), and
what a compiler says is bounded in the report (grader.text_limits). The source check is not
asked here: each backend's compile is called directly, as if a trick had got past it."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from grader.backends import registry
from grader.backends.base import CompileError
from grader.backends.confine import available, confined
from grader.backends.nvcc import compile_cubin, nvcc_path
from grader.grading import grade_file
from grader.text_limits import MAX_LOG_CHARS
from tests.adversarial.test_adversarial import LIMITS, _any_target
from tests.conftest import catalog, target_id, targets

needs_landlock = pytest.mark.skipif(not available().abi, reason=f"no Landlock here: {available().why_not}")
SECRET = "lab_secret_word_7f3a"
KERNEL = {"cuda": 'extern "C" __global__ void k(float *o) { o[0] = 1.0f; }\n',
          "opencl": "__kernel void k(__global float *o) { o[0] = 1.0f; }\n"}


def _device_params() -> list:
    found = [pytest.param(t, id=target_id(t)) for t in targets()]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no usable device"))]


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "server_secret.h"
    path.write_text(f"int {SECRET};\n", encoding="utf-8")
    return path


@needs_landlock
def test_a_confined_thread_reads_no_file_of_the_machine(secret_file) -> None:
    with pytest.raises(PermissionError):
        confined(lambda: secret_file.read_text(encoding="utf-8"))
    assert SECRET in secret_file.read_text(encoding="utf-8")  # the caller's thread is untouched


@needs_landlock
@pytest.mark.parametrize("target", _device_params())
def test_the_device_s_compiler_cannot_include_the_machine_s_files(target, secret_file) -> None:
    backend = registry.by_name(target.backend).open(target.index)
    try:
        with pytest.raises(CompileError) as refused:
            backend.compile(f'#include "{secret_file}"\n' + KERNEL[target.backend], ["k"], {}, "mine")
        assert SECRET not in str(refused.value)
        # PoCL and nvcc say "Permission denied"; NVIDIA's OpenCL and NVRTC say the file is not found
        assert any(words in str(refused.value).lower() for words in ("denied", "cannot open", "not found"))
        assert backend.compile(KERNEL[target.backend], ["k"], {}, "mine")  # a plain kernel still builds
    finally:
        backend.close()


@pytest.fixture
def allowed_header():
    """A header inside a folder the confined compile may read (Python's own prefix): the
    control that shows an include works where the confinement allows it."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="lab-confine-control-", dir=sys.prefix))
    except OSError as error:
        pytest.skip(f"cannot write in {sys.prefix}: {error}")
    header = folder / "allowed.h"
    header.write_text("#define LAB_ALLOWED_VALUE 2.0f\n", encoding="utf-8")
    yield header
    shutil.rmtree(folder, ignore_errors=True)


@needs_landlock
@pytest.mark.parametrize("target", _device_params())
def test_an_include_the_confinement_allows_still_compiles(target, allowed_header) -> None:
    """The refusal above is the confinement's: the same compile of a readable header builds."""
    backend = registry.by_name(target.backend).open(target.index)
    try:
        body = KERNEL[target.backend].replace("1.0f", "LAB_ALLOWED_VALUE")
        assert backend.compile(f'#include "{allowed_header}"\n' + body, ["k"], {}, "mine")
    finally:
        backend.close()


@needs_landlock
@pytest.mark.skipif(nvcc_path() is None, reason="no nvcc here")
def test_nvcc_cannot_include_the_machine_s_files(secret_file) -> None:
    with pytest.raises(CompileError) as refused:
        compile_cubin(f'#include "{secret_file}"\n' + KERNEL["cuda"], {}, "mine.cu")
    assert "Permission denied" in str(refused.value) and SECRET not in str(refused.value)


@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_a_flood_of_compiler_messages_is_kept_short(tmp_path, backend) -> None:
    """Thousands of warnings (an include of a binary gave one per NUL byte): the report keeps a
    bounded log and a one-line message."""
    target = _any_target(backend)
    if target.kind == "(none)" or target.name == "(none)":
        pytest.skip(f"no {backend} device")
    suffix = ".cu" if backend == "cuda" else ".cl"
    source = catalog().reference_file("transpose_naive", suffix).read_text(encoding="utf-8")
    flood = "".join(f"#warning this line is warning number {n} of a flood\n" for n in range(3000))
    path = tmp_path / f"flood{suffix}"
    path.write_text(flood + "int broken = ;\n" + source, encoding="utf-8")
    report = grade_file(catalog(), catalog().get("transpose_coalesced"), path, target, timing=False, limits=LIMITS)
    compiles = report.check("compiles")
    assert compiles.status == "failed" and compiles.failure == "compile_error", compiles.message
    assert len(compiles.details.get("log", "")) <= MAX_LOG_CHARS + 200
    assert len(json.dumps(report.to_json())) < 200_000
