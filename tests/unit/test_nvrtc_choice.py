"""grader.backends.nvrtc's choice between NVRTC and nvcc, without either installed."""

from __future__ import annotations

import pytest

from grader.backends import nvrtc
from grader.backends.base import CompileError
from grader.backends.nvcc import Cubin


@pytest.fixture(autouse=True)
def fresh_library_lookup():
    nvrtc.library.cache_clear()
    nvrtc.version.cache_clear()
    yield
    nvrtc.library.cache_clear()
    nvrtc.version.cache_clear()


def test_no_nvrtc_library_means_nvcc_for_everything(monkeypatch):
    monkeypatch.setattr(nvrtc, "_candidates", lambda: [])
    assert nvrtc.library() is None
    assert nvrtc.compiler_name() == "nvcc"
    assert nvrtc.nvrtc_cubin("extern \"C\" __global__ void k() {}", {}, "k.cu") is None


def test_nvcc_compiles_where_nvrtc_gives_no_cubin(monkeypatch):
    made = Cubin(b"nvcc's", {}, "")
    monkeypatch.setattr(nvrtc, "nvrtc_cubin", lambda *args, **kwargs: None)
    monkeypatch.setattr(nvrtc, "nvcc_compile_cubin", lambda source, defines, filename, arch: made)
    assert nvrtc.compile_cubin("src", {"N": 4}, "mine.cu") is made


def test_nvccs_error_is_the_one_shown(monkeypatch):
    def refuses(source, defines, filename, arch):
        raise CompileError("mine.cu(3): error: identifier \"x\" is undefined")

    monkeypatch.setattr(nvrtc, "nvrtc_cubin", lambda *args, **kwargs: None)
    monkeypatch.setattr(nvrtc, "nvcc_compile_cubin", refuses)
    with pytest.raises(CompileError, match="mine.cu\\(3\\)"):
        nvrtc.compile_cubin("src", {}, "mine.cu")


def test_nvrtcs_cubin_is_used_when_it_gives_one(monkeypatch):
    made = Cubin(b"nvrtc's", {}, "")
    monkeypatch.setattr(nvrtc, "nvrtc_cubin", lambda *args, **kwargs: made)
    monkeypatch.setattr(nvrtc, "nvcc_compile_cubin", lambda *args, **kwargs: pytest.fail("nvcc was run"))
    assert nvrtc.compile_cubin("src", {}, "mine.cu") is made


def test_nvcc_compiles_where_nvrtcs_code_spills(monkeypatch):
    """gemm_register_2d's reference spilled under NVRTC 13.0 and not under nvcc (the H100 machine)."""
    from grader.backends.base import KernelResources

    spilling = Cubin(b"nvrtc's", {"gemm": KernelResources(128, 33280, 72, 32, "nvcc -Xptxas -v")}, "")
    clean = Cubin(b"nvcc's", {"gemm": KernelResources(128, 33280, 0, 0, "nvcc -Xptxas -v")}, "")
    monkeypatch.setattr(nvrtc, "nvrtc_cubin", lambda *args, **kwargs: spilling)
    monkeypatch.setattr(nvrtc, "nvcc_compile_cubin", lambda source, defines, filename, arch: clean)
    assert nvrtc.spills(spilling) and not nvrtc.spills(clean)
    assert nvrtc.compile_cubin("src", {}, "mine.cu") is clean


def test_options_say_what_nvcc_is_told(monkeypatch):
    monkeypatch.setattr(nvrtc, "include_dirs", lambda: ["/cuda/include"])
    words = nvrtc.options({"TILE_DIM": 32, "SCALE": 0.5}, "sm_90")
    assert words[:5] == ["--gpu-architecture=sm_90", "--generate-line-info", "--std=c++17", "-Xptxas", "-v"]
    assert "-DTILE_DIM=32" in words and "-DSCALE=0.5" in words
    assert words[-1] == "--include-path=/cuda/include"
    assert "-default-device" not in words  # a helper without __device__ stays host code, as with nvcc
    assert "--no-cache" not in words  # no version known: no option it might not know


def test_nvrtcs_own_cache_is_off_from_12_9():
    """A cubin from NVRTC's cache comes without ptxas's report (NVRTC 13.0 on the H100 machine)."""
    assert "--no-cache" in nvrtc.options({}, "sm_90", "13.0")
    assert "--no-cache" in nvrtc.options({}, "sm_90", "12.9")
    assert "--no-cache" not in nvrtc.options({}, "sm_90", "12.8")


def test_nvcc_compiles_where_nvrtcs_report_misses_an_entry(monkeypatch):
    """NVRTC's cubin without ptxas's lines for an entry point (one from NVRTC's cache): nvcc's,
    whose report has them, is used."""
    import ctypes

    from grader.backends.nvcc import parse_ptxas_report

    report = ("ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
              "ptxas info    : Used 20 registers, used 0 barriers\n")
    assert "other" in parse_ptxas_report(report)

    class FakeNvrtc:
        def __getattr__(self, name):
            def call(*args):
                if name in ("nvrtcGetCUBINSize", "nvrtcGetProgramLogSize"):
                    args[1]._obj.value = 64 if name == "nvrtcGetCUBINSize" else len(report) + 1
                elif name == "nvrtcGetCUBIN":
                    ctypes.memmove(args[1], b"\x7fELF" + b"\0" * 60, 64)
                elif name == "nvrtcGetProgramLog":
                    ctypes.memmove(args[1], report.encode() + b"\0", len(report) + 1)
                return 0
            return call

    monkeypatch.setattr(nvrtc, "library", lambda: FakeNvrtc())
    monkeypatch.setattr(nvrtc, "include_dirs", lambda: [])
    got = nvrtc.nvrtc_cubin("src", {}, "mine.cu", entries=("other",))
    assert got is not None and "other" in got.resources
    assert nvrtc.nvrtc_cubin("src", {}, "mine.cu", entries=("transpose",)) is None
