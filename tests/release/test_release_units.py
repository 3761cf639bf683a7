"""No device: the normaliser, the course's release file, and which PTX a device gets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.backends.base import DeviceInfo
from grader.course.checks.normalised_source import normalised_digest, normalised_tokens
from grader.course.release_config import ReleaseConfigError, load_release_config
from grader.course.release_manifest import ReleaseManifest, TrustedBinary, TrustedUnavailable
from grader.report import PENDING
from grader.results import DeviceOpened, Grading, SpeedPending
from grader.scoring import build_report
from tests.conftest import catalog
from tests.release.conftest import write_config

KERNEL = """
__global__ void transpose(float *out, const float *in, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // padded
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    tile[threadIdx.y][threadIdx.x] = in[x];
    __syncthreads();
    out[x] = tile[threadIdx.x][threadIdx.y];
}
"""


def test_whitespace_comments_and_names_do_not_change_the_digest() -> None:
    edited = "/* mine */\n" + re.sub(r"(?<!\.)\bx\b", "col", re.sub(r"\btile\b", "buf", KERNEL)).replace("    ", "  ")
    assert "col" in edited and "buf" in edited and "threadIdx.x" in edited
    assert normalised_digest(edited) == normalised_digest(KERNEL)
    assert "threadIdx" in normalised_tokens(KERNEL) and "__syncthreads" in normalised_tokens(KERNEL)


def test_a_change_of_code_changes_the_digest() -> None:
    assert normalised_digest(KERNEL.replace("TILE_DIM + 1", "TILE_DIM")) != normalised_digest(KERNEL)
    assert normalised_digest(KERNEL.replace("threadIdx.x]", "threadIdx.y]")) != normalised_digest(KERNEL)
    assert normalised_digest("// nothing\n") == ""


def test_a_solution_is_released_only_where_the_file_lists_it(tmp_path: Path) -> None:
    opened = ("transpose_naive", "transpose_coalesced")
    assert load_release_config(write_config(tmp_path / "c.toml", opened), catalog()).solutions == ()
    config = load_release_config(write_config(tmp_path / "c.toml", opened, ("transpose_naive",)), catalog())
    assert config.solutions == ("transpose_naive",) and config.open == opened


@pytest.mark.parametrize(("text", "words"), [
    ('[release]\nopen = ["transpose_coalesced"]\n', "transpose_naive, which is not open"),
    ('[release]\nopen = ["no_such_stage"]\n', "unknown stage 'no_such_stage'"),
    ('[release]\nopen = []\n', "lists no stage"),
    ('[release]\nopen = ["transpose_naive"]\nptx = ["sm_90"]\n', "is not compute_XY"),
    ('[release]\nopen = ["transpose_naive"]\nshut = []\n', "unknown key(s) in [release]: shut"),
    ('open = ["transpose_naive"]\n', "has no [release] table"),
    ("[release\n", "cannot be read"),
])
def test_a_bad_release_file_gets_one_line(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReleaseConfigError) as raised:
        load_release_config(path, catalog())
    assert words in str(raised.value) and "\n" not in str(raised.value)


def gpu(major: int, minor: int, vendor: str = "NVIDIA", platform: str = "CUDA 13.0") -> DeviceInfo:
    return DeviceInfo("cuda", "a GPU", "gpu", vendor, platform, limits={"cc_major": major, "cc_minor": minor})


MANIFEST = ReleaseManifest(("s",), (), {"s": {".cu": "ab"}}, binaries=(
    TrustedBinary("s", "solution", ".cu", "compute_75", "release/ptx/s/solution.cuda.compute_75.ptx"),
    TrustedBinary("s", "solution", ".cu", "compute_90", "release/ptx/s/solution.cuda.compute_90.ptx"),
), missing={".cl": "no NVIDIA OpenCL where the release was made"})


def test_a_gpu_gets_the_newest_ptx_it_can_load() -> None:
    assert MANIFEST.pick("s", "solution", ".cu", gpu(9, 0)).arch == "compute_90"
    assert MANIFEST.pick("s", "solution", ".cu", gpu(12, 0)).arch == "compute_90"
    assert MANIFEST.pick("s", "solution", ".cu", gpu(8, 6)).arch == "compute_75"


@pytest.mark.parametrize(("suffix", "info", "words"), [
    (".cu", gpu(6, 1), "newer than this GPU (sm_61)"),
    (".cu", DeviceInfo("opencl", "Radeon", "gpu", "AMD", "AMD APP"), "cannot load PTX"),
    (".cl", gpu(9, 0), "no NVIDIA OpenCL where the release was made"),
])
def test_where_no_ptx_serves_the_device_the_reason_is_given(suffix: str, info: DeviceInfo, words: str) -> None:
    with pytest.raises(TrustedUnavailable) as raised:
        MANIFEST.pick("s", "solution", suffix, info)
    assert words in str(raised.value)


def test_speed_with_no_trusted_kernel_for_this_gpu_is_pending_with_the_reason() -> None:
    spec = catalog().get("transpose_coalesced")
    grading = Grading()
    grading.add(DeviceOpened("a GPU", "gpu", "NVIDIA"))
    grading.add(SpeedPending("reference/transpose_coalesced/solution.cu is compiled for compute_90, newer"))
    from grader.results import CaseResult, CompileResult

    grading.add(CompileResult(True, ""))
    grading.add(CaseResult("width=32, height=32", True))
    report = build_report(spec, grading, file="mine.cu", backend="cuda", seed=1, grader_version="test")
    fast = report.check("fast")
    assert fast.status == PENDING and "compiled for compute_90" in fast.message
    assert report.status == PENDING


def test_a_renamed_define_or_kernel_is_another_program() -> None:
    """The names the stage gives (its defines, its kernel's name) are not the file's own to rename."""
    fixed = ("TILE_DIM", "transpose")
    assert normalised_digest(KERNEL.replace("TILE_DIM", "TILE_SIZE"), fixed) != normalised_digest(KERNEL, fixed)
    assert normalised_digest(KERNEL.replace("transpose", "mine"), fixed) != normalised_digest(KERNEL, fixed)
    assert normalised_digest(KERNEL.replace("tile", "t"), fixed) == normalised_digest(KERNEL, fixed)
