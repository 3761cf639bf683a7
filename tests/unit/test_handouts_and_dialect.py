"""Unchanged handouts (grader.course.handouts) and hints in the submission's language (grader.course.dialect)."""

from __future__ import annotations

from grader.backends.registry import by_name
from grader.course.checks.normalised_source import tokens
from grader.course.dialect import in_dialect
from grader.course.handouts import find_handout
from tests.conftest import catalog


def _references(suffix: str) -> dict:
    return {s: catalog().reference_file(s, suffix) for s in catalog().ids()}


def test_the_skeleton_is_found_whatever_its_whitespace_and_comments():
    spec = catalog().get("transpose_coalesced")
    text = spec.skeleton(".cl").read_text(encoding="utf-8")
    edited = "// my work\n" + text.replace("\n", "\n\n  ").replace("{", "{ /* here */ ")
    found = find_handout(edited, ".cl", spec.id, spec.skeleton(".cl"), _references(".cl"))
    assert found is not None and found.what == "skeleton"
    assert "skeleton of transpose_coalesced" in found.describe(spec.id)


def test_another_stages_reference_is_found_and_this_stages_own_is_not():
    spec = catalog().get("transpose_padded")
    naive = catalog().reference_file("transpose_naive", ".cu").read_text(encoding="utf-8")
    found = find_handout(naive, ".cu", spec.id, spec.skeleton(".cu"), _references(".cu"))
    assert found is not None and (found.stage, found.what) == ("transpose_naive", "reference")
    own = catalog().reference_file(spec.id, ".cu").read_text(encoding="utf-8")
    assert find_handout(own, ".cu", spec.id, spec.skeleton(".cu"), _references(".cu")) is None


def test_one_changed_token_is_a_change():
    spec = catalog().get("transpose_coalesced")
    text = spec.skeleton(".cl").read_text(encoding="utf-8")
    assert tokens(text) != tokens(text.replace("TILE_DIM", "TILE_DIM ", 1) + ";")
    assert find_handout(text + "\nint mine;\n", ".cl", spec.id, spec.skeleton(".cl"), _references(".cl")) is None


def test_hints_speak_the_submissions_language():
    hint = ("Each thread stores tile elements other threads loaded: __syncthreads() (OpenCL: "
            "barrier(CLK_LOCAL_MEM_FENCE)) must separate tile[threadIdx.y + j][threadIdx.x] from the reads "
            "of shared memory, in blockIdx.x's tile.")
    opencl = in_dialect(hint, by_name("opencl").syntax)
    assert "threadIdx" not in opencl and "__syncthreads" not in opencl and "(OpenCL" not in opencl
    assert "barrier(CLK_LOCAL_MEM_FENCE) must separate tile[get_local_id(1) + j][get_local_id(0)]" in opencl
    assert "local memory, in get_group_id(0)'s tile" in opencl
    cuda = in_dialect(hint, by_name("cuda").syntax)
    assert "OpenCL" not in cuda and "__syncthreads() must separate tile[threadIdx.y + j][threadIdx.x]" in cuda


def test_a_hint_in_sections_keeps_the_submissions_section():
    hint = "Barriers matter. CUDA: use __shfl_down_sync. OpenCL: a barrier before every level."
    assert in_dialect(hint, by_name("opencl").syntax) == "Barriers matter. a barrier before every level."
    assert in_dialect(hint, by_name("cuda").syntax) == "Barriers matter. use __shfl_down_sync."


def test_every_stage_hint_reads_in_opencl_without_cuda_words():
    cuda_words = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "__syncthreads", "__shared__", "(OpenCL")
    for spec in catalog().stages:
        for key, hint in spec.hints.items():
            shown = in_dialect(hint, by_name("opencl").syntax)
            assert not [w for w in cuda_words if w in shown], (spec.id, key, shown)


def test_a_handouts_digest_is_kept_and_a_changed_file_is_read_again(tmp_path, monkeypatch):
    """The handouts' token digests are kept in the trusted-kernel cache (a fresh `lab grade`
    tokenizes none of them again); an edited file is another entry, read afresh."""
    import json
    import os
    import shutil

    from grader.course import handouts

    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path / "cache"))
    handouts._file_digest_of_tokens.cache_clear()
    naive = tmp_path / "naive.cu"
    shutil.copy(catalog().reference_file("transpose_naive", ".cu"), naive)
    text = naive.read_text(encoding="utf-8")
    assert find_handout(text, ".cu", "transpose_padded", tmp_path / "none.cu", {"transpose_naive": naive})
    kept = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*.json")]
    assert [k["handout"] for k in kept] == [str(naive)]
    naive.write_text(text.replace("{", "{ int changed = 1; (void)changed;", 1), encoding="utf-8")
    os.utime(naive, ns=(1, 1))  # a new entry, whatever the clock's grain
    handouts._file_digest_of_tokens.cache_clear()
    assert find_handout(text, ".cu", "transpose_padded", tmp_path / "none.cu", {"transpose_naive": naive}) is None
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
