"""Every .cu file of the course compiles with nvcc, GPU or not (CI has nvcc, no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.backends.base import CompileError
from grader.backends.nvcc import compile_cubin, nvcc_path
from grader.backends.registry import by_name
from grader.course.checks.source_checks import check_source
from tests.conftest import catalog
from tests.curriculum.test_curriculum import expectation


def cu_files() -> list:
    params = []
    for spec in catalog().stages:
        files = [spec.skeleton(".cu"), catalog().reference_file(spec.id, ".cu")]
        files += [p for p in catalog().wrong_files(spec.id) if p.suffix == ".cu"]
        ceiling = catalog().reference_file(spec.id, ".cu", spec.ceiling) if spec.ceiling else None
        files += [ceiling] if ceiling else []
        for path in files:
            params.append(pytest.param(spec.id, path, id=str(path.relative_to(catalog().root))))
    return params


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("stage", "path"), cu_files())
def test_cuda_source_compiles(stage: str, path: Path) -> None:
    assert path.exists(), f"{path} is missing"
    spec = catalog().get(stage)
    source = path.read_text(encoding="utf-8")
    expect_compile_error = "wrong" in path.parts and expectation(path)[0] == "compiles"
    try:
        check_source(source, by_name("cuda"), spec.kernels, spec.allowed_headers, path.name,
                     dynamic_shared=spec.dynamic_shared is not None)
        cubin = compile_cubin(source, spec.defines, path.name)
    except (CompileError, ValueError) as error:
        if expect_compile_error:
            return
        raise AssertionError(f"{path.name} does not compile: {error}") from error
    assert not expect_compile_error, f"{path.name} was expected not to compile"
    for kernel in spec.kernels:
        assert kernel.name in cubin.resources, f"no entry point {kernel.name} in {path.name}"


STYLES = Path(__file__).resolve().parents[1] / "styles"


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("path", sorted(STYLES.glob("*.cu")), ids=lambda p: p.name)
def test_a_kernel_in_the_cuda_samples_style_is_accepted_and_compiles(path: Path) -> None:
    """The toolkit's own device headers are allowed (issue 10), and `extern __shared__` where the
    stage launches with dynamic shared memory (issue 25); tests/styles grades them on a GPU."""
    from tests.styles.test_styles import stage_of

    spec = catalog().get(stage_of(path))
    source = path.read_text(encoding="utf-8")
    check_source(source, by_name("cuda"), spec.kernels, spec.allowed_headers, path.name,
                 dynamic_shared=spec.dynamic_shared is not None)
    cubin = compile_cubin(source, spec.defines, path.name)
    assert spec.kernel.name in cubin.resources
