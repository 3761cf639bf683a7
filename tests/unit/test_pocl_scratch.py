"""Each OpenCL worker's PoCL folder (grader.pocl_scratch): what a killed compile leaves is
removed with it, and what PoCL compiles is still kept in the shared cache."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from grader import pocl_scratch
from grader.backends.discovery import Target
from grader.backends.registry import by_name
from grader.grading import Limits, grade_file
from tests.conftest import catalog, targets

ROOT = Path(__file__).resolve().parents[2]
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" and t.kind == "cpu" for t in targets()),
                                  reason="no OpenCL CPU device (PoCL)")


def slow_to_compile() -> str:
    """A kernel of about 240 KB of straight-line arithmetic: PoCL compiles it in about a second
    on one core, with no macro the source check would refuse."""
    lines = ["__kernel void transpose(__global float *out, __global const float *in, int width, int height) {",
             "  float a = in[get_global_id(0)], b = a * 0.5f, c = a + 1.0f;"]
    for i in range(3400):
        lines.append(f"  a = a * b + {i}.5f; b = b * c - a; c = fma(c, a, b) + sin(a * {i}.25f);")
    return "\n".join([*lines, "  out[get_global_id(0)] = a + b + c;", "}", ""])


def _files(folder: Path) -> list[str]:
    """Every file under PoCL's cache folder but the worker folders' links and lock files."""
    kept = {pocl_scratch.OWNER, pocl_scratch.COMPLETE}
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and p.name not in kept)


@needs_opencl
def test_a_compile_killed_at_its_limit_leaves_nothing_in_pocls_cache(tmp_path, monkeypatch):
    cache = tmp_path / "pocl"
    monkeypatch.setenv("POCL_CACHE_DIR", str(cache))
    monkeypatch.setenv("LAB_SANDBOX", "off")  # sandboxed, PoCL writes in the sandbox's own /tmp (grader.sandbox)
    bomb = tmp_path / "slow_to_compile.cl"
    bomb.write_text(slow_to_compile(), encoding="utf-8")
    report = grade_file(catalog(), catalog().get("transpose_coalesced"), bomb, Target.to_choose(by_name("opencl")),
                        timing=False, limits=Limits(compile_s=0.3))
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
    report = grade_file(catalog(), catalog().get("transpose_coalesced"), example, Target.to_choose(by_name("opencl")),
                        timing=False)
    assert report.status == "pending"  # correct; speed not graded (not timed)
    kept = _files(cache)
    assert any(name.endswith("program.bc") for name in kept), kept  # <XY>/<hash>/program.bc
    assert any(name.endswith("transpose.so") for name in kept), kept  # its first-launch build
    assert not [name for name in kept if name.startswith(pocl_scratch.PREFIX) or "tempfile" in name], kept


def test_a_folder_is_reused_once_let_go_of_and_emptied_first(tmp_path, monkeypatch):
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    first = pocl_scratch.create()
    assert first is not None and first.path.parent == tmp_path and first.shared
    assert os.readlink(first.path / "AB") == os.path.join(os.pardir, "AB") and (tmp_path / "AB").is_dir()
    second = pocl_scratch.create()  # the first is held: another one
    assert second is not None and second.path != first.path
    (first.path / "tempfile_big.preproc-1.cl.tmp").write_bytes(b"x" * 1000)  # as a killed compile leaves
    (first.path / "tempdir_x").mkdir()
    first.remove()
    assert not (first.path / "tempfile_big.preproc-1.cl.tmp").exists() and not (first.path / "tempdir_x").exists()
    again = pocl_scratch.create()
    assert again is not None and again.path == first.path  # made once, used again
    second.remove()
    again.remove()


def test_what_a_parent_killed_with_9_left_is_deleted_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    held = pocl_scratch.create()
    assert held is not None
    (held.path / "tempfile_a.preproc-1.cl.tmp").write_bytes(b"x")
    os.close(held._lock)  # the parent died: its lock is gone, its worker's files are not
    held._lock = None
    pocl_scratch._mine.discard(held)
    unfinished = tmp_path / f"{pocl_scratch.PREFIX}unfinished"  # killed while it made the links
    unfinished.mkdir()
    (unfinished / pocl_scratch.OWNER).write_text("")
    (unfinished / "AA").symlink_to(os.path.join(os.pardir, "AA"))
    busy = tmp_path / f"{pocl_scratch.PREFIX}busy"  # another lab's, in use
    busy.mkdir()
    (busy / pocl_scratch.COMPLETE).write_text("")
    (busy / "tempfile_b").write_text("in use")
    holder = os.open(busy / pocl_scratch.OWNER, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        taken = pocl_scratch.create()
        assert taken is not None and taken.path == held.path
        assert not (held.path / "tempfile_a.preproc-1.cl.tmp").exists()
        assert not unfinished.exists()
        assert (busy / "tempfile_b").exists()
        taken.remove()
    finally:
        os.close(holder)
