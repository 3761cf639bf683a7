"""NVRTC (grader.backends.nvrtc) compiles what nvcc compiles, for every .cu file of the course: the
same entry points, and on a CUDA GPU the same shared memory; the cubin a grading runs (NVRTC's, or
nvcc's where NVRTC's spills) has no more local memory per kernel than nvcc's; a file nvcc refuses
NVRTC gives no cubin for. Registers are not compared: the two
front ends' code differs a little (transpose_coalesced's reference: 22 registers through NVRTC,
24 through nvcc, on an H100), and every grading compiles its submission and its trusted kernels
with the same one. Skipped where NVRTC or nvcc is not installed (CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.backends import nvrtc
from grader.backends.base import CompileError
from grader.backends.nvcc import compile_cubin, nvcc_path
from grader.backends.registry import by_name
from grader.course.checks.source_checks import check_source
from tests.conftest import catalog
from tests.curriculum.test_nvcc import cu_files

needs_nvrtc = pytest.mark.skipif(nvcc_path() is None or nvrtc.library() is None,
                                 reason="nvcc or NVRTC is not installed")


def _cuda_functions(image: bytes, entries: list[str]) -> dict[str, tuple[int, int, int]] | None:
    """Each entry's registers, static shared and local bytes as the driver loads `image`; None
    without a CUDA GPU."""
    try:
        import pycuda.driver as drv

        drv.init()
        if drv.Device.count() == 0:
            return None
    except Exception:  # noqa: BLE001 - no PyCUDA or no driver: nothing to load into
        return None
    context = drv.Device(0).retain_primary_context()
    context.push()
    try:
        module = drv.module_from_buffer(image)
        found = {}
        for entry in entries:
            f = module.get_function(entry)
            found[entry] = (int(f.num_regs), int(f.shared_size_bytes), int(f.local_size_bytes))
        return found
    finally:
        context.pop()


@needs_nvrtc
@pytest.mark.parametrize(("stage", "path"), cu_files())
def test_nvrtc_compiles_what_nvcc_compiles_into_the_same_kernels(stage: str, path: Path) -> None:
    spec = catalog().get(stage)
    source = path.read_text(encoding="utf-8")
    try:
        check_source(source, by_name("cuda"), spec.kernels, spec.allowed_headers, path.name,
                     dynamic_shared=spec.dynamic_shared is not None)
    except ValueError:
        return  # refused before any compiler
    entries = [k.name for k in spec.kernels]
    try:
        by_nvcc = compile_cubin(source, spec.defines, path.name)
    except CompileError:
        assert nvrtc.nvrtc_cubin(source, spec.defines, path.name) is None, f"NVRTC compiled {path.name}, nvcc did not"
        return
    used = nvrtc.compile_cubin(source, spec.defines, path.name, entries=tuple(entries))  # what a grading runs
    assert set(entries) <= set(used.resources)
    by_nvrtc = nvrtc.nvrtc_cubin(source, spec.defines, path.name)  # the cubin, with or without its report
    assert by_nvrtc is not None, f"NVRTC refused {path.name}, which nvcc compiles (nvcc would compile it then)"
    loaded_nvcc = _cuda_functions(by_nvcc.image, entries)
    if loaded_nvcc is not None:
        loaded_nvrtc, loaded_used = _cuda_functions(by_nvrtc.image, entries), _cuda_functions(used.image, entries)
        assert loaded_nvrtc is not None and loaded_used is not None
        for entry in entries:
            assert loaded_nvrtc[entry][1] == loaded_nvcc[entry][1], f"{entry}: static shared memory differs"
            assert loaded_used[entry][2] <= loaded_nvcc[entry][2], f"{entry}: the code a grading runs spills more"
