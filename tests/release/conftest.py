"""A students' copy of the course, made once for the tests of this folder: two stages open
(transpose_naive, transpose_coalesced), transpose_naive's solution released (after its
deadline), transpose_coalesced's held back; as a folder, a zip and (where pip can build one) a
wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.backends.nvcc import nvcc_path
from grader.course.release_config import load_release_config
from lab.release import Release, ReleaseError, make_release
from tests.conftest import catalog

OPEN = ("transpose_naive", "transpose_coalesced")
HELD = "transpose_coalesced"  # its solution is not released
RELEASED = "transpose_naive"


def write_config(path: Path, open_: tuple[str, ...] = OPEN, solutions: tuple[str, ...] = (),
                 ptx: tuple[str, ...] = ("compute_90",)) -> Path:
    quoted = lambda names: "[" + ", ".join(f'"{n}"' for n in names) + "]"  # noqa: E731
    path.write_text(f"[release]\nopen = {quoted(open_)}\nsolutions = {quoted(solutions)}\nptx = {quoted(ptx)}\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The copy, with the CUDA trusted kernels as PTX where nvcc is here (none where it is not)."""
    out = tmp_path_factory.mktemp("release")
    ptx = ("compute_90",) if nvcc_path() else ()
    config = load_release_config(write_config(out / "course.toml", solutions=(RELEASED,), ptx=ptx), catalog())
    try:
        return make_release(catalog(), config, out, name="students", wheel=True)
    except ReleaseError as error:  # pip cannot build here (no setuptools to fetch): the rest is written
        WHEEL_MISSING.append(str(error))
        return make_release(catalog(), config, out, name="students", replace=True)


WHEEL_MISSING: list[str] = []  # why the fixture's copy has no wheel, where it has none
