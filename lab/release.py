"""Make the students' copy of the course (`lab release`): the lab, the open stages' skeletons
and READMEs, the released solutions as source, and in place of every other reference the two
things a student's machine needs of it: its compiled binaries (the trusted kernels a GPU times a
submission against: PTX, for each backend whose row says how it ships them, `Shipping`) and its
normalised digest (to refuse it, or a trivially edited copy, as a submission).

Written as a folder and as a zip of that folder. No reference source and no known-wrong kernel of
a stage whose solution is not released is written; `leaks` checks a written copy for them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader.backends import registry
from grader.backends.registry import BackendKind, ReleaseCompiler, ShipError
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


def release_compilers(config: ReleaseConfig) -> dict[BackendKind, ReleaseCompiler]:
    """The compiler of this machine for each backend whose row ships its trusted kernels compiled
    (its `shipping`), given the architectures the course's release file names."""
    return {kind: kind.shipping.compiler(config.ptx) for kind in registry.backends() if kind.shipping is not None}


def make_release(catalog: Catalog, config: ReleaseConfig, out: Path, name: str = "course",
                 replace: bool = False, compilers: Mapping[BackendKind, ReleaseCompiler] | None = None,
                 wheel: bool = False, progress: Callable[[str], None] = lambda line: None) -> Release:
    """Write `out/<name>/` and `out/<name>.zip` from the checkout `catalog.root`, and with
    `wheel` the copy as a wheel in `out/` (pip builds it). `replace`: an existing folder and zip
    of that name are removed first (else they are refused). `compilers`: what compiles each
    shipping backend's trusted kernels (default: release_compilers). Raises ReleaseError."""
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
    missing: dict[str, str] = {}  # suffix -> why none of its backend's binaries ship
    compilers = compilers if compilers is not None else release_compilers(config)
    for kind, compiler in compilers.items():
        if compiler.why_not:
            missing[kind.suffix] = compiler.why_not
    for role_spec, stage_id, kernel in trusted_needed(catalog, config):
        for kind, compiler in compilers.items():
            path = catalog.reference_file(stage_id, kind.suffix, kernel)
            if not path.is_file() or compiler.why_not or kind.shipping is None:
                continue
            rel = str(path.relative_to(checkout))
            try:
                made = compiler.compile(path.read_text(encoding="utf-8"), role_spec.defines, rel, progress)
            except ShipError as error:
                raise ReleaseError(str(error)) from None
            binary = kind.shipping.binary.lower()
            for arch, image in made:
                where = Path("release") / binary / stage_id / f"{kernel}.{kind.name}.{arch}.{binary}"
                (folder / where).parent.mkdir(parents=True, exist_ok=True)
                (folder / where).write_bytes(image)
                binaries.append(TrustedBinary(stage_id, kernel, kind.suffix, arch, str(where)))

    manifest = ReleaseManifest(open=config.open, solutions=config.solutions, digests=digests,
                               binaries=tuple(binaries), missing=missing, digest_scheme=DIGEST_SCHEME,
                               handout_digests=handout_digests)
    (folder / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    packaged = folder / "grader" / "course" / "release"  # an installed copy's course is grader/course
    if packaged.parent.is_dir() and not packaged.exists():
        os.symlink(os.path.join("..", "..", "release"), packaged)
    count = write_zip(folder, archive, name)
    notes = tuple(f"no {kind.title} {kind.shipping.binary}: {missing[kind.suffix]}; {kind.title} speed is "
                  f"pending on a student's GPU" for kind in compilers if kind.suffix in missing and kind.shipping)
    notes += handed_out_solutions(catalog, config)
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
        for suffix in registry.suffixes():
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
