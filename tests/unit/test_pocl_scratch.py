"""Each OpenCL worker's PoCL folder (grader.pocl_scratch): what a killed compile leaves is
removed with it, and what PoCL compiles is still kept in the shared cache."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from grader import pocl_scratch
from grader.pipeline import Limits, grade_file
from lab.backends.discovery import Target
from tests.conftest import catalog, targets

ROOT = Path(__file__).resolve().parents[2]
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" and t.kind == "cpu" for t in targets()),
                                  reason="no OpenCL CPU device (PoCL)")


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink())


@needs_opencl
def test_a_compile_killed_at_its_limit_leaves_nothing_in_pocls_cache(tmp_path, monkeypatch):
    cache = tmp_path / "pocl"
    monkeypatch.setenv("POCL_CACHE_DIR", str(cache))
    bomb = ROOT / "tests" / "adversarial" / "kernels" / "compiler_bomb.cl"
    report = grade_file(catalog(), catalog().get("transpose_coalesced"), bomb, Target.to_choose("opencl"),
                        timing=False, limits=Limits(compile_s=3.0))
    assert "timed out during compiling" in report.checks[0].message
    # PoCL's temporaries (tempfile_*, its preprocessor's growing *.tmp output) were in the
    # worker's own folder, removed with it
    assert _files(cache) == []


@needs_opencl
def test_what_pocl_compiles_is_kept_in_the_shared_cache(tmp_path, monkeypatch):
    cache = tmp_path / "pocl"
    monkeypatch.setenv("POCL_CACHE_DIR", str(cache))
    # Unsandboxed: a sandboxed worker's PoCL cache is its own, shared with no later grading (grader.sandbox)
    monkeypatch.setenv("LAB_SANDBOX", "off")
    example = ROOT / "examples" / "transpose_coalesced.cl"
    report = grade_file(catalog(), catalog().get("transpose_coalesced"), example, Target.to_choose("opencl"),
                        timing=False)
    assert report.status == "passed"
    kept = _files(cache)
    assert any(name.endswith("program.bc") for name in kept), kept  # <XY>/<hash>/program.bc
    assert any(name.endswith("transpose.so") for name in kept), kept  # its first-launch build
    assert not [name for name in kept if name.startswith(pocl_scratch.PREFIX) or "tempfile" in name], kept


def test_a_folder_is_removed_once_its_parent_is_gone_and_kept_while_it_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    dead = tmp_path / f"{pocl_scratch.PREFIX}dead"
    dead.mkdir()
    (dead / pocl_scratch.OWNER).write_text("")
    (dead / "tempfile_big.preproc-1.cl.tmp").write_bytes(b"x" * 1000)
    alive = tmp_path / f"{pocl_scratch.PREFIX}alive"
    alive.mkdir()
    holder = os.open(alive / pocl_scratch.OWNER, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # as a running `lab` holds it
    try:
        assert pocl_scratch.sweep(tmp_path) == 1
        assert not dead.exists() and alive.exists()
        scratch = pocl_scratch.create()
        assert scratch is not None and scratch.path.parent == tmp_path
        assert os.readlink(scratch.path / "AB") == os.path.join(os.pardir, "AB") and (tmp_path / "AB").is_dir()
        (scratch.path / "tempfile_x").write_text("left by PoCL")
        assert pocl_scratch.sweep(tmp_path) == 0  # this process holds it
        scratch.remove()
        assert not scratch.path.exists()
    finally:
        os.close(holder)
