import re
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.course.checks.source_checks import SubmissionError, check_source, decode_source, read_submission
from grader.course.spec import KernelSpec, parse_params

SIG = "float *out, const float *in, int width, int height"
KERNELS = (KernelSpec("transpose", SIG, parse_params(SIG)),)
GOOD_CU = 'extern "C" __global__ void transpose(float *out, const float *in, int width, int height) {}'
GOOD_CL = "__kernel void transpose(__global float *out, __global const float *in, int width, int height) {}"


def test_good_sources_pass():
    check_source(GOOD_CU, by_name("cuda"), KERNELS)
    check_source(GOOD_CL, by_name("opencl"), KERNELS)
    check_source("// #include <stdio.h> in a comment\n" + GOOD_CU, by_name("cuda"), KERNELS)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ('#include "../reference/transpose_naive/solution.cu"\n' + GOOD_CU, "#include is not allowed"),
        ("#  include <stdio.h>\n" + GOOD_CU, "#include is not allowed"),
        (GOOD_CU.replace("transpose(", "transpose_kernel("), "no kernel named `transpose`"),
        (GOOD_CU.replace(", int height", ""), "takes (float *, float *, int)"),
        (GOOD_CU.replace('extern "C" ', ""), 'extern "C"'),
        (GOOD_CU + "\nint main() { return 0; }", "not a main function"),
        (GOOD_CU + "\nvoid host() { transpose<<<1, 1>>>(0, 0, 1, 1); }", "host code"),
        ("__device__ float f(float x) { return x; }", "no __global__ function named `transpose`"),
    ],
)
def test_bad_sources_say_why_in_one_line(source, words):
    with pytest.raises(SubmissionError) as info:
        check_source(source, by_name("cuda"), KERNELS, name="sub.cu")
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_files_that_are_not_kernel_text(tmp_path):
    (tmp_path / "empty.cu").write_text("  \n")
    (tmp_path / "bin.cu").write_bytes(b"\x7fELF\x00\x01")
    (tmp_path / "latin.cl").write_bytes(b"// caf\xe9\n")
    (tmp_path / "big.cu").write_text("//" + "x" * 300_000)
    (tmp_path / "notes.txt").write_text("hi")
    cases = {"empty.cu": "empty", "bin.cu": "binary", "latin.cl": "not UTF-8", "big.cu": "limit",
             "notes.txt": ".cu (CUDA) or .cl", "missing.cu": "no such file"}
    for name, words in cases.items():
        with pytest.raises(SubmissionError, match=re.escape(words)):
            read_submission(tmp_path / name)
    with pytest.raises(SubmissionError, match="folder"):
        read_submission(tmp_path)


def test_decode_keeps_text():
    assert decode_source("é".encode(), "x") == "é"


def test_the_cuda_toolkits_device_headers_are_allowed_and_nothing_else():
    for header in ("<cooperative_groups.h>", "<cuda_fp16.h>", '"cuda_runtime.h"'):
        check_source(f"#include {header}\n" + GOOD_CU, by_name("cuda"), KERNELS)
    for header in ("<stdio.h>", "<cooperative_groups.h/../../etc/passwd>", "<cuda_fp16.hpp>"):
        with pytest.raises(SubmissionError, match="cooperative_groups.h"):
            check_source(f"#include {header}\n" + GOOD_CU, by_name("cuda"), KERNELS)
    with pytest.raises(SubmissionError, match="is not allowed"):
        check_source("#include <cooperative_groups.h>\n" + GOOD_CL, by_name("opencl"), KERNELS)  # OpenCL has none


def test_dynamic_shared_memory_is_refused_before_launch_saying_how_the_stage_launches():
    source = GOOD_CU.replace("{", "{\n    extern __shared__ float sdata[];\n", 1)
    with pytest.raises(SubmissionError) as refused:
        check_source(source, by_name("cuda"), KERNELS, name="sub.cu")
    message = str(refused.value)
    assert message.startswith("sub.cu:2:") and "extern __shared__" in message
    assert "this stage launches every kernel with none" in message and "declare the array with a fixed size" in message
    assert "\n" not in message


def test_dynamic_shared_memory_is_accepted_where_the_stage_launches_with_some():
    source = GOOD_CU.replace("{", "{\n    extern __shared__ float sdata[];\n", 1)
    check_source(source, by_name("cuda"), KERNELS, name="sub.cu", dynamic_shared=True)


def test_the_reduce_stages_declare_dynamic_shared_memory_and_nvidias_sample_style_passes_the_checks():
    from grader.course.checks.divergent_barriers import find_divergent_barriers
    from tests.conftest import catalog

    source = (Path(__file__).resolve().parents[1] / "styles" / "reduce_dynamic_shared.cu").read_text(encoding="utf-8")
    for stage in ("reduce_interleaved", "reduce_sequential"):
        spec = catalog().get(stage)
        assert spec.dynamic_shared_bytes(spec.test_cases[0]) == 4 * spec.defines["BLOCK_SIZE"]
        check_source(source, by_name("cuda"), spec.kernels, spec.allowed_headers, "sub.cu", dynamic_shared=True)
    assert find_divergent_barriers(source) == []
    transpose = catalog().get("transpose_coalesced")
    assert transpose.dynamic_shared is None
