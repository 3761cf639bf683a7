"""The Gradescope autograder end to end: `lab gradescope` builds the zip, and its run_autograder
grades uploads in a temporary folder laid out as Gradescope's /autograder (LAB_AUTOGRADER_ROOT),
on PoCL. setup.sh itself runs too, against a prepared virtual environment that sees the lab's
dependencies installed where these tests run (no download), and so installs the lab from the zip's wheel.

The prepared environments never see the base Python's packages: `venv` builds them from the base
interpreter, which may have none of the lab's dependencies (a stock Debian python3 under a
virtual environment); they see this interpreter's own site-packages instead, where pyopencl is.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.autograder.build import build_zip
from lab.cli import app
from tests.conftest import as_submission, catalog, targets

PROJECT = Path(__file__).resolve().parents[2]
STAGES = ("reduce_interleaved", "reduce_sequential")  # fast on PoCL; the second has a speed check
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "autograder.zip"
    build_zip(catalog(), STAGES, out)
    return out


def these_site_packages() -> list[str]:
    """The folders this interpreter installs packages into (a virtual environment's own
    site-packages where the tests run in one), as they exist."""
    paths = sysconfig.get_paths()
    found = [*site.getsitepackages(), paths["purelib"], paths["platlib"]]
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return [p for p in dict.fromkeys(found) if Path(p).is_dir()]


def prepared_venv(folder: Path, *first: Path) -> Path:
    """A virtual environment at `folder` that sees `first` (if given), then this interpreter's
    packages and nothing of the base Python's. Its own site-packages still comes before them all,
    so what is installed into it wins."""
    venv.create(folder, system_site_packages=False, with_pip=False, symlinks=True)
    own = next(folder.glob("lib/python3*/site-packages"))
    (own / "lab-tests.pth").write_text("".join(f"{p}\n" for p in (*map(str, first), *these_site_packages())))
    return folder


@pytest.fixture(scope="module")
def checkout_venv(tmp_path_factory) -> Path:
    """A virtual environment that imports the lab from this checkout (as an editable install would,
    whichever checkout this Python's own editable install points at)."""
    return prepared_venv(tmp_path_factory.mktemp("venv") / "lab-venv", PROJECT)


def unpack(archive: Path, into: Path) -> None:
    """As Gradescope does: the zip's content, with its modes, in /autograder/source."""
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            path = Path(opened.extract(info, into))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                path.chmod(mode)


def autograder_root(tmp_path: Path, archive: Path, upload: dict[str, bytes | str], venv_folder: Path | None) -> Path:
    root = tmp_path / "autograder"
    unpack(archive, root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")  # Gradescope copies it there
    submission = root / "submission"
    submission.mkdir()
    for name, content in upload.items():
        path = submission / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    (root / "submission_metadata.json").write_text(json.dumps({"id": 123456, "submission_method": "upload"}))
    if venv_folder is not None:
        (root / "lab-venv").symlink_to(venv_folder)
    return root


def run_autograder(root: Path, **settings: str) -> tuple[dict, str]:
    env = {**os.environ, "LAB_AUTOGRADER_ROOT": str(root), **settings}
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text()), done.stdout + done.stderr


def solution(stage: str) -> str:
    return as_submission((PROJECT / "reference" / stage / "solution.cl").read_text())


def test_the_zip_holds_the_scripts_the_wheel_and_the_course(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as opened:
        names = set(opened.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in opened.infolist()}
        config = json.loads(opened.read("lab-autograder.json"))
        wheel_name = next(n for n in names if n.startswith("wheels/"))
        with opened.open(wheel_name) as wheel_file, zipfile.ZipFile(wheel_file) as wheel:
            in_wheel = set(wheel.namelist())
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert config["stages"] == list(STAGES)
    assert "course/assignments/reduce_sequential/assignment.toml" in names
    assert "course/reference/reduce_interleaved/solution.cl" in names  # reduce_sequential's baseline
    assert not any("__pycache__" in n for n in names)
    assert {"lab/autograder/__main__.py", "lab/autograder/scripts/run_autograder", "grader/templates/report.md.j2",
            "grader/kernels/device_ops.cl"} <= in_wheel
    assert not any(n.startswith(("assignments/", "reference/")) for n in in_wheel)  # the course is in the zip


def test_lab_gradescope_writes_the_zip_with_a_given_wheel(tmp_path, autograder_zip):
    with zipfile.ZipFile(autograder_zip) as opened:
        name = next(n for n in opened.namelist() if n.startswith("wheels/"))
        wheel = tmp_path / Path(name).name
        wheel.write_bytes(opened.read(name))
    out = tmp_path / "hw" / "reduce.zip"
    result = CliRunner().invoke(app, ["gradescope", "reduce_sequential", "reduce_interleaved", "-o", str(out),
                                      "--wheel", str(wheel)])
    assert result.exit_code == 0, result.output
    assert "students upload reduce_interleaved.cl and reduce_sequential.cl" in " ".join(result.output.split())
    with zipfile.ZipFile(out) as opened:
        assert json.loads(opened.read("lab-autograder.json"))["stages"] == list(STAGES)  # in course order
        assert opened.read(name) == wheel.read_bytes()


def test_lab_gradescope_refuses_an_unknown_stage_and_a_bad_output(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["gradescope", "reduce_interleavd", "-o", str(tmp_path / "a.zip")])
    assert result.exit_code == 2 and "did you mean reduce_interleaved" in result.output
    result = runner.invoke(app, ["gradescope", "reduce_interleaved", "-o", str(tmp_path / "a.tar")])
    assert result.exit_code == 2 and "is a .zip file" in result.output
    assert not list(tmp_path.iterdir())


@needs_opencl
def test_correct_uploads_pass_and_speed_is_left_to_the_course_gpu(tmp_path, autograder_zip, checkout_venv):
    upload = {"reduce_interleaved.cl": solution("reduce_interleaved"),
              "reduce_sequential.cl": solution("reduce_sequential"), "notes.txt": "my notes"}
    results, log = run_autograder(autograder_root(tmp_path, autograder_zip, upload, checkout_venv))
    tests = {t["name"]: t for t in results["tests"]}
    assert results["score"] == 100 + 10 + 60, results
    assert all(tests[f"reduce_interleaved: {c}"]["status"] == "passed" for c in ("compiles", "correct"))
    fast = next(t for name, t in tests.items() if name.startswith("reduce_sequential: fast"))
    assert not {"status", "score", "max_score"} & set(fast) and "pending: 30 points" in fast["name"]
    assert "course's GPU" in fast["output"]
    assert "no GPU" in results["output"] and "notes.txt: not a kernel file" in results["output"]
    assert [s["status"] for s in results["extra_data"]["stages"]] == ["passed", "pending"]
    assert "reduce_sequential: reduce_sequential.cl: pending" in log


@needs_opencl
@pytest.mark.parametrize("sandbox_mode", ["off", "on"])
def test_an_upload_graded_without_the_sandbox_says_so_to_the_instructor(tmp_path, autograder_zip, monkeypatch,
                                                                        sandbox_mode):
    """Issue 25: results.json's extra_data and the autograder's log say so; the student's text does
    not. Graded in this process, as run_autograder's `python -m lab.autograder` grades."""
    from lab.autograder.paths import AutograderPaths
    from lab.autograder.run import run

    upload = {"reduce_interleaved.cl": solution("reduce_interleaved")}  # its code runs: in the sandbox or not
    root = autograder_root(tmp_path, autograder_zip, upload, None)
    monkeypatch.setenv("LAB_SANDBOX", sandbox_mode)
    log = "\n".join(run(AutograderPaths(root)))
    results = json.loads((root / "results" / "results.json").read_text())
    recorded = results["extra_data"].get("sandbox")
    if sandbox_mode == "off":
        assert recorded == {"sandboxed": False, "reason": "LAB_SANDBOX=off"}, (log, results["extra_data"])
        assert "warning: graded without a sandbox" in log and "LAB_SANDBOX=off" in log
    elif "graded without a sandbox" in log:  # bwrap cannot work here: said all the same
        assert recorded["sandboxed"] is False
    else:
        assert recorded is None
    assert "sandbox" not in results["output"]


@needs_opencl
def test_a_wrong_kernel_fails_correctness_with_the_reason(tmp_path, autograder_zip, checkout_venv):
    wrong = (PROJECT / "reference/reduce_interleaved/wrong/stride_stops_early.cl").read_text()
    upload = {"reduce_interleaved.cl": wrong, "reduce_sequential.cl": solution("reduce_sequential")}
    results, _ = run_autograder(autograder_root(tmp_path, autograder_zip, upload, checkout_venv))
    correct = next(t for t in results["tests"] if t["name"] == "reduce_interleaved: correct")
    assert correct["status"] == "failed" and correct["score"] == 0 and "are wrong" in correct["output"]
    assert results["score"] == 10 + 10 + 60


@needs_opencl
def test_a_misnamed_upload_says_what_was_expected(tmp_path, autograder_zip, checkout_venv):
    upload = {"mine.cl": solution("reduce_interleaved"), "reduce_sequential.cl": solution("reduce_sequential")}
    results, _ = run_autograder(autograder_root(tmp_path, autograder_zip, upload, checkout_venv))
    first = results["tests"][0]
    assert first["name"] == "reduce_interleaved: compiles" and first["status"] == "failed"
    assert "(no file uploaded)" in results["output"]
    assert "rename mine.cl to reduce_interleaved.cl" in first["output"]
    assert results["score"] == 70
    assert "mine.cl: not named for a stage of this assignment" in results["output"]
    assert "Traceback" not in json.dumps(results)


@needs_opencl
def test_a_cuda_upload_is_left_to_the_course_gpu_and_a_hostile_name_is_shown_escaped(tmp_path, autograder_zip,
                                                                                      checkout_venv):
    cuda = as_submission((PROJECT / "reference/reduce_interleaved/solution.cu").read_text())
    upload = {"reduce_interleaved.cu": cuda, "a\x1b[31mred\u202e.cl": "x"}
    results, _ = run_autograder(autograder_root(tmp_path, autograder_zip, upload, checkout_venv))
    first = results["tests"][0]
    if "score" in first:  # a CUDA device here after all: it was graded
        pytest.skip("this machine grades CUDA")
    assert "graded on the course GPU later" in first["output"]
    assert results["extra_data"]["stages"][0]["status"] == "error"
    text = (tmp_path / "autograder/results/results.json").read_text()
    assert "\x1b" not in text and "\u202e" not in text and "\\\\x1b" in text


def test_a_broken_autograder_still_writes_results_that_say_so(tmp_path, autograder_zip, checkout_venv):
    root = autograder_root(tmp_path, autograder_zip, {"reduce_interleaved.cl": "x"}, checkout_venv)
    (root / "source" / "lab-autograder.json").unlink()
    results, log = run_autograder(root)
    assert "score" not in results and "tell your instructor" in results["output"]
    assert "lab-autograder.json: no such file" in log
    (root / "lab-venv").unlink()  # setup.sh never finished: the lab cannot even start
    results, log = run_autograder(root)
    assert "score" not in results and results["tests"][0]["status"] == "failed"
    assert "setup.sh did not finish" in log


@needs_opencl
@pytest.mark.slow  # installs the lab from the zip's wheel, twice
@pytest.mark.skipif(not shutil.which("bwrap"), reason="setup.sh would install bubblewrap with apt-get")
def test_setup_sh_installs_the_lab_from_the_zip_and_runs_again_unchanged(tmp_path, autograder_zip):
    root = autograder_root(tmp_path, autograder_zip, {"reduce_interleaved.cl": solution("reduce_interleaved")},
                           None)
    # It sees this Python's packages, the lab's dependencies and pip: pip finds them there and downloads nothing.
    prepared_venv(root / "lab-venv")
    env = {**os.environ, "LAB_AUTOGRADER_ROOT": str(root), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for _ in range(2):  # idempotent: the second run finds everything in place
        done = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "reduce_sequential: reference kernel pending" in done.stdout
    where = subprocess.run([str(root / "lab-venv/bin/python"), "-I", "-c", "import lab; print(lab.__file__)"],
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(root / "lab-venv")), where  # the wheel's lab, not a checkout's
    results, _ = run_autograder(root)
    assert results["score"] == 100
