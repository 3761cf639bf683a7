"""Make the students' copy of the course (`lab release`): the lab, the open stages' skeletons
and READMEs, the released solutions as source, and in place of every other reference the two
things a student's machine needs of it: its PTX (the trusted kernels a GPU times a submission
against) and its normalised digest (to refuse it, or a trivially edited copy, as a submission).

Written as a folder and as a zip of that folder. No reference source and no known-wrong kernel of
a stage whose solution is not released is written; `leaks` checks a written copy for them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from grader.backends import registry
from grader.backends.nvcc import COMPILE_SECONDS, define_flags, nvcc_path
from grader.course.catalog import Catalog
from grader.course.checks.normalised_source import (
    DIGEST_SCHEME,
    given_defines,
    given_names,
    normalised_digest,
    token_digest,
)
from grader.course.release_config import ReleaseConfig
from grader.course.release_manifest import MANIFEST, ReleaseManifest, TrustedBinary
from grader.course.spec import Spec

# What of the checkout a student gets besides the stages: the package and its docs.
SHIPPED_TOP = ("README.md", "pyproject.toml", "lab", "grader", "examples", "docs")
SUFFIXES = (".cu", ".cl")  # the backends whose trusted kernels a copy ships as PTX (NVIDIA's GPUs)
_TARGET = re.compile(rb"^\s*\.target\s+(sm_\d+)", re.M)


class ReleaseError(Exception):
    """The copy cannot be made; the message says why in one line."""


@dataclass(frozen=True)
class Release:
    """What `make_release` wrote."""

    folder: Path
    zip: Path
    manifest: ReleaseManifest
    files: int  # files in the folder (links included)
    notes: tuple[str, ...] = field(default_factory=tuple)  # what the instructor should know (no OpenCL PTX, ...)
    wheel: Path | None = None  # the copy as a package (`pip install` it), where one was asked for


def tracked_files(checkout: Path) -> list[str]:
    """The checkout's files git tracks or would (not those it ignores): paths relative to it, links included."""
    try:
        proc = subprocess.run(["git", "-C", str(checkout), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as error:
        raise ReleaseError(f"cannot list the checkout's files with git: {error}") from None
    if proc.returncode != 0:
        raise ReleaseError(f"{checkout} is not a git checkout (lab release copies the files git tracks)")
    return [name for name in proc.stdout.decode("utf-8").split("\0") if name]


def shipped(path: str, config: ReleaseConfig) -> bool:
    """Whether the checkout's file `path` goes into the students' copy."""
    parts = path.split("/")
    top = parts[0]
    if top == "assignments":
        return len(parts) == 2 or parts[1] in config.open  # tracks.toml, and the open stages
    if top == "reference":
        return len(parts) > 2 and parts[1] in config.solutions
    return top in SHIPPED_TOP


def trusted_needed(catalog: Catalog, config: ReleaseConfig) -> list[tuple[Spec, str, str]]:
    """Every kernel an open stage is timed against whose source does not ship: (the spec that
    launches it, its stage, its name), each once."""
    from grader.steps.compile import trusted_kernels

    found: dict[tuple[str, str], tuple[Spec, str, str]] = {}
    for stage in config.open:
        for role_spec, stage_id, name in trusted_kernels(catalog, catalog.get(stage)).values():
            if stage_id not in config.solutions:
                found.setdefault((stage_id, name), (role_spec, stage_id, name))
    return list(found.values())


def cuda_ptx(source: str, defines: dict[str, int | float], arch: str, filename: str) -> bytes:
    """`source` compiled by nvcc to PTX for `arch` (compute_XY), with the flags the lab compiles
    trusted kernels with (no line information: the PTX names no source line)."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise ReleaseError("nvcc was not found: lab release compiles the trusted CUDA kernels to PTX with it")
    with tempfile.TemporaryDirectory(prefix="lab-release-") as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / "kernel.ptx"
        cmd = [nvcc, "-ptx", f"-arch={arch}", "-O3", "--std=c++17", *define_flags(defines), "-o", str(out), src.name]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=COMPILE_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ReleaseError(f"nvcc took longer than {COMPILE_SECONDS} s on {filename}") from None
        if proc.returncode != 0 or not out.exists():
            first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
            raise ReleaseError(f"{filename} does not compile to PTX for {arch}: {first[0] if first else 'nvcc failed'}")
        return out.read_bytes()


class OpenCLPtx:
    """NVIDIA's OpenCL on this machine, which compiles OpenCL C to PTX; `why_not` says why there
    is none (then no OpenCL PTX is made)."""

    def __init__(self) -> None:
        self.context = self.device = None
        self.why_not = ""
        try:
            import pyopencl as cl
        except ImportError:
            self.why_not = "pyopencl is not installed where the release was made"
            return
        try:
            for platform in cl.get_platforms():
                if "NVIDIA" in platform.name:
                    gpus = platform.get_devices()
                    if gpus:
                        self.device = gpus[0]
                        self.context = cl.Context([self.device])
                        return
        except cl.Error as error:
            self.why_not = f"OpenCL did not start where the release was made: {error}"
            return
        self.why_not = ("the release was made where NVIDIA's OpenCL is absent (it alone compiles OpenCL C "
                        "to PTX): make the release on a machine with an NVIDIA GPU to ship it")

    def compile(self, source: str, defines: dict[str, int | float], filename: str) -> tuple[bytes, str]:
        """The PTX of `source` and the sm_XY it targets. Raises ReleaseError where there is no
        NVIDIA OpenCL (`why_not`)."""
        import pyopencl as cl

        if self.context is None or self.device is None:
            raise ReleaseError(f"{filename}: {self.why_not or 'NVIDIA OpenCL is not open'}")
        program = cl._cl._Program(self.context, source)
        options = " ".join(f"-D{name}={value}" for name, value in defines.items())
        try:
            program._build(options=options.encode(), devices=[self.device])
        except cl.Error as error:
            raise ReleaseError(f"{filename} does not build with NVIDIA's OpenCL: {error}") from None
        # get_info's type follows the parameter asked for: BINARIES is one bytes per device
        binaries = cast(list[bytes], program.get_info(cl.program_info.BINARIES))
        ptx = bytes(binaries[0])  # as NVIDIA's OpenCL loads it back
        target = _TARGET.search(ptx)
        if target is None:
            raise ReleaseError(f"NVIDIA's OpenCL gave {filename} a binary that is not PTX")
        return ptx, target.group(1).decode()


def make_release(catalog: Catalog, config: ReleaseConfig, out: Path, name: str = "course",
                 replace: bool = False, opencl: OpenCLPtx | None = None, wheel: bool = False,
                 progress: Callable[[str], None] = lambda line: None) -> Release:
    """Write `out/<name>/` and `out/<name>.zip` from the checkout `catalog.root`, and with
    `wheel` the copy as a wheel in `out/` (pip builds it). `replace`: an existing folder and zip
    of that name are removed first (else they are refused)."""
    checkout = catalog.root
    folder, archive = out / name, out / f"{name}.zip"
    for path in (folder, archive):
        if path.exists() and not replace:
            raise ReleaseError(f"{path} exists: remove it, or pass --replace")
    files = [f for f in tracked_files(checkout) if shipped(f, config)]
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for rel in files:
        source, target = checkout / rel, folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)

    digests: dict[str, dict[str, str]] = {}
    handout_digests: dict[str, dict[str, str]] = {}
    for stage in config.open:
        if stage in config.solutions:
            continue
        for suffix in registry.suffixes():
            path = catalog.reference_file(stage, suffix)
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                given = catalog.get(stage)
                digests.setdefault(stage, {})[suffix] = normalised_digest(text, given_names(given),
                                                                          dict(given_defines(given)))
                handout_digests.setdefault(stage, {})[suffix] = token_digest(text)

    binaries: list[TrustedBinary] = []
    missing: dict[str, str] = {}
    opencl = opencl if opencl is not None else OpenCLPtx()
    if opencl.why_not:
        missing[".cl"] = opencl.why_not
    if not config.ptx:
        missing[".cu"] = "the course's release file lists no ptx target for the CUDA kernels"
    for role_spec, stage_id, kernel in trusted_needed(catalog, config):
        for suffix in SUFFIXES:
            path = catalog.reference_file(stage_id, suffix, kernel)
            if not path.is_file():
                continue
            rel = str(path.relative_to(checkout))
            kernel_source = path.read_text(encoding="utf-8")
            made: list[tuple[str, bytes]] = []
            if suffix == ".cu":
                for arch in config.ptx:
                    progress(f"nvcc -ptx {rel} ({arch})")
                    made.append((arch, cuda_ptx(kernel_source, role_spec.defines, arch, rel)))
            elif not opencl.why_not:
                progress(f"NVIDIA OpenCL {rel}")
                ptx, arch = opencl.compile(kernel_source, role_spec.defines, rel)
                made.append((arch, ptx))
            for arch, ptx in made:
                language = "cuda" if suffix == ".cu" else "opencl"
                where = Path("release") / "ptx" / stage_id / f"{kernel}.{language}.{arch}.ptx"
                (folder / where).parent.mkdir(parents=True, exist_ok=True)
                (folder / where).write_bytes(ptx)
                binaries.append(TrustedBinary(stage_id, kernel, suffix, arch, str(where)))

    manifest = ReleaseManifest(open=config.open, solutions=config.solutions, digests=digests,
                               binaries=tuple(binaries), missing=missing, digest_scheme=DIGEST_SCHEME,
                               handout_digests=handout_digests)
    (folder / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    packaged = folder / "grader" / "course" / "release"  # an installed copy's course is grader/course
    if packaged.parent.is_dir() and not packaged.exists():
        os.symlink(os.path.join("..", "..", "release"), packaged)
    count = write_zip(folder, archive, name)
    titles = {kind.suffix: kind.title for kind in registry.backends()}
    notes = tuple(f"no {titles[suffix]} PTX: {why}; {titles[suffix]} speed is pending on a student's GPU"
                  for suffix, why in missing.items()) + handed_out_solutions(catalog, config)
    built = build_wheel(folder, out, progress) if wheel else None
    return Release(folder, archive, manifest, count, notes, built)


def build_wheel(folder: Path, out: Path, progress: Callable[[str], None] = lambda line: None) -> Path:
    """The copy at `folder` as a wheel in `out` (pip, with its build isolation: it fetches
    setuptools from the index it is configured with)."""
    import sys

    progress("pip wheel (the copy as a package)")
    with tempfile.TemporaryDirectory(prefix="lab-wheel-") as tmp:
        source = Path(tmp) / "source"  # the build writes build/ and *.egg-info beside the sources
        shutil.copytree(folder, source, symlinks=True)
        try:
            proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp, str(source)],
                                  capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as error:
            raise ReleaseError(f"pip could not build the wheel: {error}") from None
        made = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not made:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise ReleaseError(f"pip could not build the wheel (the folder and zip are written): {last}")
        target = out / made[0].name
        target.unlink(missing_ok=True)
        shutil.move(str(made[0]), target)
    return target


def handed_out_solutions(catalog: Catalog, config: ReleaseConfig) -> tuple[str, ...]:
    """A line for each held-back solution that an open stage's skeleton hands out anyway (the
    skeleton is that solution, apart from whitespace, comments and names): the instructor may as
    well release it."""
    lines = []
    for stage in config.open:
        baseline = (catalog.get(stage).baseline or "").partition(":")[0]
        if not baseline or baseline == stage or baseline in config.solutions:
            continue
        names, defines = given_names(catalog.get(baseline)), dict(given_defines(catalog.get(baseline)))
        for suffix in SUFFIXES:
            skeleton, reference = catalog.get(stage).skeleton(suffix), catalog.reference_file(baseline, suffix)
            if skeleton.is_file() and reference.is_file() and normalised_digest(
                    skeleton.read_text(encoding="utf-8"), names, defines) == normalised_digest(
                    reference.read_text(encoding="utf-8"), names, defines):
                lines.append(f"the skeleton of {stage} is {baseline}'s solution (comments apart): it is handed "
                             f"out with {stage}; list {baseline} in solutions to release its folder too")
                break
    return tuple(lines)


def write_zip(folder: Path, archive: Path, top: str) -> int:
    """Zip `folder` as `top/...` (links kept as links, as unzip restores them); the entry count."""
    if archive.exists():
        archive.unlink()
    count = 0
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, names in os.walk(folder):
            dirs.sort()
            for entry in sorted(names + [d for d in dirs if (Path(root) / d).is_symlink()]):
                path = Path(root) / entry
                arcname = f"{top}/{path.relative_to(folder).as_posix()}"
                if path.is_symlink():
                    info = zipfile.ZipInfo(arcname)
                    info.external_attr = (0o120777 << 16)
                    zf.writestr(info, os.readlink(path))
                else:
                    zf.write(path, arcname)
                count += 1
    return count


__all__ = ["Release", "ReleaseError", "make_release", "tracked_files"]
