"""The worker's compile step in a students' copy: the held-back reference is loaded from the PTX
the copy ships, the released baseline compiled from source; where no PTX serves the device the
speed is pending with the reason. A stand-in NVIDIA device (unit test: nothing runs)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.backends.base import CompileError, DeviceInfo
from grader.backends.fake import FakeBackend
from grader.backends.registry import by_name
from grader.course.catalog import Catalog
from grader.results import SpeedPending
from grader.steps.compile import Compile
from grader.steps.context import Context, Request
from lab.release import Release
from tests.conftest import catalog
from tests.release.conftest import HELD


class NvidiaStandIn(FakeBackend):
    """Compiles as the fake does; says it is an NVIDIA GPU of compute capability `cc`; loads a
    program image by noting it (or refuses it, as a driver older than the PTX does)."""

    def __init__(self, cc: tuple[int, int], refuse: str = ""):
        super().__init__({"transpose": lambda *a: None})
        self.info = DeviceInfo("cuda", "stand-in GPU", "gpu", "NVIDIA", "CUDA 13.0", l2_bytes=1 << 20,
                               limits={"shared_per_block": 48 * 1024, "cc_major": cc[0], "cc_minor": cc[1]})
        self.refuse = refuse
        self.loaded: list[bytes] = []
        self.compiled: list[str] = []

    def compile(self, source, entries, defines, filename):
        self.compiled.append(filename)
        return super().compile(source, entries, defines, filename)

    def load_program(self, image, entries):
        if self.refuse:
            raise CompileError(self.refuse)
        self.loaded.append(image.data)
        return super().compile("", entries, {}, "ptx")


def compile_step(course: Catalog, backend: NvidiaStandIn) -> tuple[Context, list]:
    spec = course.get(HELD)
    sent: list = []
    request = Request(str(course.root), spec.id, "x", "mine.cu", by_name("cuda"), 0, 1, timing=True)
    ctx = Context(request, course, spec, None, np.random.default_rng(1), sent.append, backend=backend)
    assert Compile().run(ctx)
    return ctx, sent


@pytest.fixture
def copy(release: Release) -> Catalog:
    if not Catalog(release.folder).release.binaries:
        pytest.skip("no nvcc here: the copy holds no CUDA PTX")
    return Catalog(release.folder)


def test_the_held_back_reference_is_loaded_from_ptx(copy: Catalog) -> None:
    backend = NvidiaStandIn((9, 0))
    ctx, sent = compile_step(copy, backend)
    assert not [m for m in sent if isinstance(m, SpeedPending)]
    assert set(ctx.trusted) == {"baseline", "reference"}
    assert len(backend.loaded) == 1 and b".target sm_90" in backend.loaded[0]
    assert "reference/transpose_naive/solution.cu" in backend.compiled  # released: from source


def test_the_instructor_s_checkout_compiles_every_trusted_kernel() -> None:
    backend = NvidiaStandIn((9, 0))
    ctx, _ = compile_step(catalog(), backend)
    assert set(ctx.trusted) == {"baseline", "reference"} and backend.loaded == []


def test_a_gpu_older_than_the_ptx_has_its_speed_pending(copy: Catalog) -> None:
    ctx, sent = compile_step(copy, NvidiaStandIn((7, 0)))
    pending = [m.reason for m in sent if isinstance(m, SpeedPending)]
    assert ctx.trusted == {} and pending and "newer than this GPU (sm_70)" in pending[0]


def test_a_driver_that_cannot_load_the_ptx_has_the_speed_pending(copy: Catalog) -> None:
    refusal = "the CUDA driver could not load the compiled kernel: cuModuleLoadDataEx failed: unsupported PTX version"
    ctx, sent = compile_step(copy, NvidiaStandIn((9, 0), refuse=refusal))
    pending = [m.reason for m in sent if isinstance(m, SpeedPending)]
    assert ctx.trusted == {} and pending and "unsupported PTX version" in pending[0]
    assert "does not load here" in pending[0]


def test_a_held_back_baseline_is_loaded_from_ptx_too(tmp_path) -> None:
    from grader.backends.nvcc import nvcc_path
    from grader.course.release_config import ReleaseConfig
    from lab.release import make_release

    if nvcc_path() is None:
        pytest.skip("no nvcc here: no CUDA PTX can be made")
    config = ReleaseConfig(open=("transpose_naive", HELD), solutions=(), ptx=("compute_80", "compute_90"))
    copy = Catalog(make_release(catalog(), config, tmp_path, name="held").folder)
    backend = NvidiaStandIn((9, 0))
    ctx, sent = compile_step(copy, backend)
    assert set(ctx.trusted) == {"baseline", "reference"} and backend.compiled == ["mine.cu"]
    assert len(backend.loaded) == 2 and all(b".target sm_90" in ptx for ptx in backend.loaded)
    older = NvidiaStandIn((8, 6))
    compile_step(copy, older)
    assert all(b".target sm_80" in ptx for ptx in older.loaded) and len(older.loaded) == 2
