"""`lab gradescope`: the autograder zip an instructor uploads to a Gradescope assignment.

    setup.sh, run_autograder      scripts/ of this package (Gradescope wants them at the root)
    lab-autograder.json           the assignment's stages, and the course GPU server's address (config.py)
    lab-server-token              the autograder's token for that server (only where one is named)
    wheels/<the lab>.whl          the lab, built from its source checkout (or given: --wheel)
    course/assignments/, course/reference/
                                  the course, whole: a stage's spec may name another stage's
                                  kernels (its baseline), and a wheel carries no course

The course goes in as files, not in the wheel: an installed lab finds its course through
LAB_COURSE_ROOT, which run_autograder points at course/.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from grader.course.catalog import Catalog, UnknownStageError
from lab.autograder.config import DEFAULT_SERVER_WAIT_S, AutograderConfig
from lab.autograder.paths import CONFIG_NAME, COURSE_FOLDER, SERVER_TOKEN_NAME, WHEELS_FOLDER

SCRIPTS = ("setup.sh", "run_autograder")
COURSE_PARTS = ("assignments", "reference")  # what of a course goes in: the sandbox's view of it too
PROJECT_PARTS = ("pyproject.toml", "README.md", "lab", "grader")  # what a wheel is built from
SKIPPED_NAMES = ("__pycache__",)
WHEEL_TIMEOUT_S = 300
# Fixed timestamps: the same course and lab make the same zip.
ZIP_TIME = (2024, 1, 1, 0, 0, 0)


class BuildError(ValueError):
    """The zip cannot be built; the message says why in one line."""


@dataclass(frozen=True)
class CourseServer:
    """The course GPU server that grades the speed of each upload (lab serve), and how to reach it."""

    url: str  # http(s)://HOST[:PORT][/path], without a trailing /
    token: str  # an autograder's token (lab tokens --grader NAME)
    wait_s: float = DEFAULT_SERVER_WAIT_S


def course_server(url: str, token: str, wait_s: float = DEFAULT_SERVER_WAIT_S) -> CourseServer:
    """The server, checked; a BuildError says what is wrong in one line."""
    from urllib.parse import urlsplit

    url = url.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok \
            or parts.query or parts.fragment:
        raise BuildError(f"--server {url or '(empty)'}: a server's address is http(s)://HOST[:PORT]")
    token = token.strip()
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise BuildError("--server-token: give the autograder's token (lab tokens --grader NAME on the server)")
    if not wait_s > 0:
        raise BuildError(f"--server-wait {wait_s:g}: give a positive number of seconds")
    return CourseServer(url, token, wait_s)


@dataclass(frozen=True)
class Built:
    path: Path
    stages: tuple[str, ...]
    wheel: str  # the wheel's file name
    files: int
    size: int  # bytes


def project_root() -> Path:
    """The checkout this lab runs from (where its pyproject.toml is, for an editable install)."""
    return Path(__file__).resolve().parent.parent.parent


def _lab_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-teaching-lab")
    except PackageNotFoundError:
        return "unknown"


def _kept(path: Path) -> bool:
    return not any(part in SKIPPED_NAMES or part.startswith(".") or part.endswith(".egg-info")
                   for part in path.parts) and path.suffix != ".pyc"


def _files_under(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not path.is_symlink() and _kept(relative):
            yield path


def build_wheel(root: Path, out: Path) -> Path:
    """Build the lab's wheel from the checkout at `root` into the folder `out`. The sources are
    copied to a temporary folder first, so the build writes nothing into the checkout."""
    if not (root / "pyproject.toml").is_file():
        raise BuildError(f"{root}: not a source checkout of the lab (no pyproject.toml), so no wheel can be "
                         f"built here; build one elsewhere (pip wheel --no-deps .) and pass it with --wheel")
    with tempfile.TemporaryDirectory(prefix="lab-wheel-") as tmp:
        staged = Path(tmp) / "src"
        for part in PROJECT_PARTS:
            source = root / part
            if source.is_dir():
                shutil.copytree(source, staged / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc",
                                                                                       "*.egg-info"))
            elif source.is_file():
                staged.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, staged / part)
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                   "-w", str(out), str(staged)]
        done = _pip(command)
        if done.returncode != 0 and importlib.util.find_spec("setuptools") is not None:
            # No index to fetch the build backend from: build with this Python's setuptools.
            done = _pip(command[:4] + ["--no-build-isolation"] + command[4:])
    wheels = sorted(out.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise BuildError(f"building the lab's wheel failed ({_last_error(done)}); pass one with --wheel")
    return wheels[0]


def _pip(command: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=WHEEL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise BuildError(f"building the lab's wheel took over {WHEEL_TIMEOUT_S} s; pass one with --wheel") from None


def _last_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(("hint:", "note:", "[end of output]"))]
    return said[-1] if said else f"pip exited with {done.returncode}"


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False, mode: int | None = None) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100000 | (mode if mode is not None else 0o755 if executable else 0o644)) << 16
    archive.writestr(info, data)


def check_stages(catalog: Catalog, stages: Sequence[str]) -> tuple[str, ...]:
    """The stages, each once and in course order; a BuildError names one that is not a stage or
    has no OpenCL reference kernel (Gradescope's machines grade OpenCL)."""
    if not stages:
        raise BuildError("name at least one stage (lab list shows them)")
    for stage in stages:
        try:
            catalog.get(stage)
        except UnknownStageError as error:
            raise BuildError(str(error)) from None
        if not catalog.reference_file(stage, ".cl").is_file():
            raise BuildError(f"stage {stage} has no OpenCL reference kernel ({catalog.reference_file(stage, '.cl')}): "
                             f"Gradescope's machines grade OpenCL only")
    order = catalog.ids()
    return tuple(sorted(set(stages), key=order.index))


def build_zip(catalog: Catalog, stages: Sequence[str], out: Path, wheel: Path | None = None,
              server: CourseServer | None = None) -> Built:
    """Write the autograder zip for `stages` to `out` (atomically: a zip is whole or absent).
    With `server`, each upload's speed is asked of that course GPU server: its address goes in
    the config, its token in a file of its own (mode 0600)."""
    chosen = check_stages(catalog, stages)
    if wheel is not None and (wheel.suffix != ".whl" or not wheel.is_file()):
        raise BuildError(f"--wheel {wheel}: not a wheel file (.whl)")
    if out.suffix.lower() != ".zip":
        raise BuildError(f"{out}: the autograder is a .zip file")
    if out.is_dir():
        raise BuildError(f"{out}: is a folder; name the zip file to write")
    out.parent.mkdir(parents=True, exist_ok=True)
    from grader import GRADER_VERSION

    config = AutograderConfig(chosen, _lab_version(), GRADER_VERSION, server.url if server else "",
                              server.wait_s if server else DEFAULT_SERVER_WAIT_S)
    scripts = resources.files("lab.autograder") / "scripts"
    with tempfile.TemporaryDirectory(prefix="lab-gradescope-") as tmp:
        if wheel is None:
            wheel = build_wheel(project_root(), Path(tmp) / "wheel")
        fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", dir=str(out.parent))
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)  # as an ordinary file would be, not mkstemp's 0600
        files = 0
        try:
            with zipfile.ZipFile(partial, "w") as archive:
                for script in SCRIPTS:
                    _add(archive, script, (scripts / script).read_bytes(), executable=True)
                _add(archive, CONFIG_NAME, config.to_json().encode())
                _add(archive, f"{WHEELS_FOLDER}/{wheel.name}", wheel.read_bytes())
                files += len(SCRIPTS) + 2
                if server is not None:
                    _add(archive, SERVER_TOKEN_NAME, f"{server.token}\n".encode(), mode=0o600)
                    files += 1
                for part in COURSE_PARTS:
                    folder = catalog.root / part
                    for path in _files_under(folder):
                        name = f"{COURSE_FOLDER}/{part}/{path.relative_to(folder).as_posix()}"
                        _add(archive, name, path.read_bytes())
                        files += 1
            os.replace(partial, out)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return Built(out, chosen, wheel.name, files, out.stat().st_size)
