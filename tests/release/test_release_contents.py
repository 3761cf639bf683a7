"""`lab release` writes the folder and the zip, and neither holds any line of a reference or a
known-wrong kernel whose solution is not released (every file searched, the zip's decompressed)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.course.catalog import Catalog
from grader.course.release_manifest import load_manifest
from lab.release import Release
from tests.conftest import catalog
from tests.release.conftest import HELD, OPEN, WHEEL_MISSING, write_config

ROOT = Path(__file__).resolve().parents[2]


def handed_out_text(copy: Path) -> str:
    """All the copy hands out by design, as one text: its kernel files (skeletons, released
    solutions, the grader's own kernels), the stages' READMEs (their hints quote lines of the
    solution) and the examples (working kernels of two stages: the README's first command
    grades one), a notebook's code cells as their code."""
    import json

    texts = []
    for path in [*copy.rglob("*.c[lu]"), *copy.glob("assignments/*/README.md"), *copy.glob("examples/*")]:
        text = path.read_text(encoding="utf-8")
        texts.append(text)
        if path.suffix == ".ipynb":
            texts += ["".join(cell["source"]) for cell in json.loads(text)["cells"]]
    return "\n".join(texts)


def distinctive_lines(stage_folder: Path, handed: str) -> dict[str, set[str]]:
    """By file: the lines of each reference and wrong kernel under `stage_folder` that nothing
    handed out by design contains, long enough to be the solution's own (not `}` or `int i;`)."""
    lines = {}
    for path in sorted(stage_folder.rglob("*.c[lu]")):
        own = {ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()}
        lines[str(path)] = {ln for ln in own if len(ln) >= 20 and ln not in handed and not ln.startswith("//")}
    return lines


def every_text(release: Release) -> dict[str, str]:
    """Every file of the folder and every member of the zip and the wheel, decompressed, as text."""
    texts = {}
    for path in release.folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    for archive in (release.zip, release.wheel):
        if archive is None:
            continue
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                texts[f"{archive}:{info.filename}"] = zf.read(info).decode("utf-8", errors="replace")
    return texts


def test_the_copy_is_a_folder_and_a_zip_of_the_open_stages(release: Release) -> None:
    folder = release.folder
    assert sorted(p.name for p in (folder / "assignments").iterdir() if p.is_dir()) == sorted(OPEN)
    assert (folder / "reference" / "transpose_naive" / "solution.cl").is_file()  # released
    assert not (folder / "reference" / HELD).exists()
    assert not (folder / "tests").exists() and not (folder / "course.toml").exists()
    manifest = load_manifest(folder)
    assert manifest is not None and set(manifest.digests) == {HELD}
    assert set(manifest.digests[HELD]) == {".cu", ".cl"}
    with zipfile.ZipFile(release.zip) as zf:
        names = {n.removeprefix("students/") for n in zf.namelist()}
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()}
    assert names == on_disk


def test_no_line_of_an_unreleased_reference_or_wrong_kernel_is_in_the_copy(release: Release) -> None:
    handed = handed_out_text(release.folder)
    released = set(load_manifest(release.folder).solutions)
    held = [s for s in catalog().ids() if s not in released]
    assert HELD in held
    wanted = {}
    for stage in held:
        wanted.update(distinctive_lines(catalog().references / stage, handed))
    assert len(wanted[str(catalog().reference_file(HELD, ".cl"))]) >= 3  # the search is not empty
    assert sum(len(v) for v in wanted.values()) > 200
    texts = every_text(release)
    assert any(".whl:" in where for where in texts) or WHEEL_MISSING, "no wheel and no reason"
    leaks = [(source, line, where) for source, lines in wanted.items() for line in lines
             for where, text in texts.items() if line in text]
    assert not leaks, leaks[:5]


def test_the_copy_s_lab_finds_its_own_course(release: Release) -> None:
    """Run from the copy, lab lists the open stages only (the copy's code, the copy's course)."""
    proc = subprocess.run([sys.executable, "-m", "lab", "list"], cwd=release.folder, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(release.folder), "PATH": "/usr/bin:/bin",
                                                       "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "transpose_coalesced" in proc.stdout and "transpose_padded" not in proc.stdout
    assert Catalog(release.folder).ids() == list(OPEN)


def test_lab_release_on_the_command_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "course.toml", open_=("reduce_interleaved",), ptx=())
    proc = subprocess.run([sys.executable, "-m", "lab", "release", "--config", str(config), "--out",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "course" / "release" / "manifest.json").is_file()
    assert (tmp_path / "out" / "course.zip").is_file()
    assert "references held back (PTX and digest only): reduce_interleaved" in " ".join(proc.stdout.split())
    again = subprocess.run([sys.executable, "-m", "lab", "release", "--config", str(config), "--out",
                            str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "exists" in again.stderr and "Traceback" not in again.stderr


def test_the_wheel_holds_the_copy_s_course_and_its_ptx(release: Release) -> None:
    if release.wheel is None:
        pytest.skip(f"no wheel: {WHEEL_MISSING[0] if WHEEL_MISSING else 'not built'}")
    with zipfile.ZipFile(release.wheel) as zf:
        names = set(zf.namelist())
    assert "grader/course/release/manifest.json" in names
    assert "grader/course/assignments/transpose_coalesced/skeleton.cl" in names
    assert "grader/course/reference/transpose_naive/solution.cl" in names
    assert not any(n.startswith(f"grader/course/reference/{HELD}/") for n in names)


def test_with_every_stage_open_and_no_solution_released_none_is_in_the_copy(tmp_path: Path) -> None:
    """The whole course open, no solution released (no PTX: nothing needs compiling for this):
    no line of any reference or known-wrong kernel is in the copy, but for what the skeletons
    and READMEs hand out by design (a skeleton is often the previous stage's solution)."""
    from grader.course.release_config import load_release_config
    from lab.release import make_release

    config = load_release_config(write_config(tmp_path / "course.toml", tuple(catalog().ids()), ptx=()),
                                 catalog())
    made = make_release(catalog(), config, tmp_path, name="all")
    held = sorted(made.manifest.digests)
    assert held == sorted(catalog().ids()) and not (made.folder / "reference").exists()
    assert any("the skeleton of transpose_padded is transpose_coalesced's solution" in n for n in made.notes)
    handed = handed_out_text(made.folder)
    wanted = {}
    for stage in held:
        wanted.update(distinctive_lines(catalog().references / stage, handed))
    texts = every_text(made)
    leaks = [(source, line, where) for source, lines in wanted.items() for line in lines
             for where, text in texts.items() if line in text]
    assert sum(len(v) for v in wanted.values()) > 100 and not leaks, leaks[:5]
