"""The `lab` command line as a student uses it: outputs, files written, exit codes."""

from __future__ import annotations

import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader.backends.nvcc import nvcc_path
from lab.cli import app
from tests.conftest import targets

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "transpose_coalesced.cl"
runner = CliRunner()
has_opencl = any(t.backend == "opencl" for t in targets())
needs_opencl = pytest.mark.skipif(not has_opencl, reason="no OpenCL device")


def lab(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_list_shows_stages_in_course_order():
    result = lab("list")
    assert result.exit_code == 0
    out = result.output
    assert out.index("transpose_naive") < out.index("transpose_coalesced") < out.index("transpose_padded")


def _listed(monkeypatch, *args: str, width: int = 80) -> list[str]:
    import io

    from rich.console import Console

    from lab.cli import course

    out = io.StringIO()
    monkeypatch.setattr(course, "console", Console(file=out, width=width, highlight=False, emoji=False))
    assert lab("list", *args).exit_code == 0
    return out.getvalue().splitlines()


def test_list_is_one_line_a_stage_in_80_columns(monkeypatch):
    from grader.course.catalog import default_catalog

    stages = default_catalog().stages
    lines = _listed(monkeypatch)
    assert len(lines) == 1 + len(stages) and max(len(line) for line in lines) <= 80, lines
    assert lines[0].split() == ["stage", "track", "points", "title"]
    for spec, line in zip(stages, lines[1:]):
        words = line.split()
        assert words[:4] == [spec.id, spec.track, str(spec.stage), str(spec.max_score)], line
        shown = " ".join(words[4:])
        assert spec.title.startswith(shown.removesuffix("…").rstrip()) and (shown == spec.title) != shown.endswith("…")
    long = "\n".join(_listed(monkeypatch, "--long"))
    assert all(spec.baseline in long for spec in stages if spec.baseline) and "baseline" in long


def test_help_groups_the_commands_by_who_uses_them():
    import typer.main

    panels = {name: getattr(command, "rich_help_panel", None)
              for name, command in typer.main.get_command(app).commands.items()}
    assert {"Students", "Instructors", "Course server"} <= set(panels.values()), panels
    assert {name for name, panel in panels.items() if panel == "Students"} >= {
        "list", "show", "init", "grade", "devices", "occupancy", "profile", "login", "submit", "history"}
    assert {name for name, panel in panels.items() if panel == "Instructors"} >= {
        "batch", "gradescope", "release", "tokens", "export-grades"}
    assert {name for name, panel in panels.items() if panel == "Course server"} >= {"serve", "work"}
    shown = lab("--help").output
    at = [shown.index(f"{panel} ") for panel in ("─ Students", "│ list", "─ Instructors", "│ batch", "│ gradescope",
                                                 "─ Course server", "│ serve")]
    assert at == sorted(at), shown  # the panels in this order, `lab batch` first among the instructors'


def test_show_prints_the_readme():
    result = lab("show", "transpose_padded")
    assert result.exit_code == 0 and "bank" in result.output.lower()


def test_init_copies_the_skeleton_and_never_overwrites(tmp_path):
    target = tmp_path / "mine.cl"
    assert lab("init", "transpose_naive", "--backend", "opencl", "-o", target).exit_code == 0
    assert target.read_text() == (ROOT / "assignments/transpose_naive/skeleton.cl").read_text()
    target.write_text("my work")
    result = lab("init", "transpose_naive", "--backend", "opencl", "-o", target)
    assert result.exit_code == 2 and "already exists" in result.output
    assert target.read_text() == "my work"
    assert lab("init", "transpose_naive", "--backend", "metal").exit_code == 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("grade", "no_such_stage", EXAMPLE), "unknown stage"),
        (("grade", "transpose_coalesced", "missing.cl"), "no such file"),
        (("grade", "transpose_coalesced", EXAMPLE, "--report", "x.pdf"), ".html or .md"),
        (("grade", "transpose_coalesced", EXAMPLE, "--backend", "cuda"), "cannot run on the cuda backend"),
        (("show", "transpose_coalesced_x"), "did you mean"),
        (("grade", "TRANSPOSE_COALESCED", EXAMPLE), "did you mean transpose_coalesced"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, words):
    result = lab(*args)
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert "Traceback" not in result.output


def test_a_text_file_is_a_usage_error(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    result = lab("grade", "transpose_coalesced", notes)
    assert result.exit_code == 2 and ".cu (CUDA) or .cl" in result.output


@needs_opencl
def test_example_passes_and_writes_json_and_reports(tmp_path):
    out = tmp_path / "r.json"
    result = lab("grade", "transpose_coalesced", EXAMPLE, "--json", out, "--report", tmp_path / "f.html",
                 "--backend", "opencl")
    data = json.loads(out.read_text())
    assert data["assignment"] == "transpose_coalesced" and data["max_score"] == 100  # the full maximum anywhere
    assert data["device"]["kind"] in ("cpu", "gpu")
    if data["device"]["kind"] == "gpu":
        assert result.exit_code == 0, result.output
        assert data["status"] == "passed" and data["performance"]["time_ms"] > 0
    else:  # speed is not graded on a CPU device, so by default nothing is timed there
        assert result.exit_code == 5, result.output  # correct, speed still to be graded
        assert data["status"] == "pending" and data["score"] == 70
        assert [c["status"] for c in data["checks"]] == ["passed", "passed", "pending"]
        assert data["performance"] is None and "--cpu-timing" in " ".join(data["notes"])
        assert "CORRECT, SPEED NOT GRADED HERE" in result.output and "still to be graded on a GPU" in result.output
    assert "<html" in (tmp_path / "f.html").read_text()
    assert lab("grade", "transpose_coalesced", EXAMPLE, "--report", tmp_path / "f.md", "--no-timing").exit_code == 5
    assert (tmp_path / "f.md").read_text().startswith("# transpose_coalesced")


BAD_SUBMISSIONS = {
    "empty.cl": (b"", "empty"),
    "binary.cl": (b"\x00\x01\x02kernel", "binary"),
    "include.cl": (b'#include "../reference/transpose_coalesced/solution.cl"\n', "#include is not allowed"),
    "misspelled.cl": (b"__kernel void transpos(__global float *out, __global const float *in, int width, int height) {}",
                      "no kernel named `transpose`"),
    "syntax.cl": (b"__kernel void transpose(__global float *out, __global const float *in, int width, int height)\n{\n  int x = 1\n}\n",
                  "syntax.cl:3"),
}


@needs_opencl
@pytest.mark.parametrize("name", list(BAD_SUBMISSIONS))
def test_bad_submissions_fail_with_a_reason(tmp_path, name):
    data, words = BAD_SUBMISSIONS[name]
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "r.json"
    result = lab("grade", "transpose_coalesced", path, "--json", out, "--no-timing")
    assert result.exit_code == 1, result.output
    check = json.loads(out.read_text())["checks"][0]
    assert check["name"] == "compiles" and check["status"] == "failed"
    assert words in check["message"], check["message"]
    assert "Traceback" not in result.output


@needs_opencl
def test_wrong_result_exits_1_with_mismatch_details(tmp_path):
    wrong = tmp_path / "w.cl"
    wrong.write_text(EXAMPLE.read_text().replace("= tile[get_local_id(0)][get_local_id(1) + j]",
                                                 "= tile[get_local_id(1) + j][get_local_id(0)]"))
    out = tmp_path / "r.json"
    result = lab("grade", "transpose_coalesced", wrong, "--json", out, "--no-timing")
    assert result.exit_code == 1
    correct = json.loads(out.read_text())["checks"][1]
    assert correct["status"] == "failed" and "expected" in correct["message"]
    assert "elements of `out` are wrong" in correct["message"]


@needs_opencl
def test_out_of_bounds_write_is_named(tmp_path):
    wrong = tmp_path / "w.cl"
    wrong.write_text(EXAMPLE.read_text().replace("out[(y + j) * height + x]", "out[(y + j) * width + x]"))
    out = tmp_path / "r.json"
    assert lab("grade", "transpose_coalesced", wrong, "--json", out, "--no-timing").exit_code == 1
    correct = json.loads(out.read_text())["checks"][1]
    assert "out of bounds of `out`" in correct["message"] and "past its end" in correct["message"]


def test_devices_lists_or_explains():
    result = lab("devices")
    assert result.exit_code == 0
    assert "opencl" in result.output or "not usable" in result.output


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_occupancy_of_a_cuda_kernel_without_a_gpu():
    result = lab("occupancy", ROOT / "examples" / "transpose_coalesced.cu", "--stage", "transpose_coalesced",
                 "--extra-registers", "9")
    assert result.exit_code == 0, result.output
    assert "registers per thread" in result.output and "theoretical occupancy" in result.output
    assert "more register" in result.output


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_occupancy_counts_the_dynamic_shared_memory_a_stage_launches_with():
    result = lab("occupancy", ROOT / "tests" / "styles" / "reduce_dynamic_shared.cu", "--stage", "reduce_sequential")
    assert result.exit_code == 0, result.output
    assert re.search(r"dynamic shared memory the stage adds \(bytes\)\s+1024", result.output), result.output


def test_results_are_never_written_over_the_submission(tmp_path):
    mine = tmp_path / "mine.cl"
    mine.write_text(EXAMPLE.read_text())
    result = lab("grade", "transpose_coalesced", mine, "--json", tmp_path / "." / "mine.cl")
    assert result.exit_code == 2 and "the submission itself" in result.output
    assert lab("grade", "transpose_coalesced", mine, "--report", mine).exit_code == 2  # not .html/.md
    assert mine.read_text() == EXAMPLE.read_text()


@needs_opencl
def test_a_backslash_in_the_file_name_is_only_a_name(tmp_path):
    wrong = tmp_path / "my\\dkernel.cl"
    wrong.write_text("__kernel void transpose(__global float *out, __global const float *in, int width, "
                     "int height) { undeclared = 1; }\n")
    result = lab("grade", "transpose_coalesced", wrong, "--no-timing")
    assert result.exit_code == 1 and "bad escape" not in result.output and "compile error" in result.output


def run_lab(*args, timeout: float = 60.0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m lab ARGS` as a process of its own, its address space capped (a read without
    end fails in seconds rather than taking the machine's memory); a hang fails the test."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "lab", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=cap, env=env)


@pytest.mark.parametrize(("make", "words"), [
    (os.mkfifo, "is a named pipe (FIFO), not a regular file"),
    (lambda path: path.symlink_to("/dev/zero"), "is a character device, not a regular file"),
], ids=["fifo", "dev_zero"])
def test_a_pipe_or_a_device_named_like_a_kernel_is_refused_at_once(tmp_path, make, words):
    path = tmp_path / "k.cl"
    make(path)
    result = run_lab("grade", "transpose_coalesced", path, "--json", tmp_path / "r.json", timeout=30)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {path}: {words}; a submission is a kernel source file"]
    assert not (tmp_path / "r.json").exists()


def _processes_with(marker: str) -> list[int]:
    """Pids whose environment holds `marker` (a `lab` and the workers it started)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{name}/environ").read_bytes():
                    found.append(int(name))
            except OSError:
                continue
    return found


# `python -S -c CTRL_C_STARTER FD ARGS...`: `lab ARGS...`, after one byte written on FD once the
# entry point is imported and about to run.
CTRL_C_STARTER = """import os, sys
from lab.launch import main
os.write(int(sys.argv.pop(1)), b".")
sys.argv[0] = "lab"
main()
"""


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize("delay", [0.05, 0.2, 1.0])
def test_ctrl_c_at_any_moment_says_one_line_exits_130_and_leaves_no_worker(tmp_path, delay):
    """0.05 s: in the command line's imports; 0.2 s: about when typer starts; 1.0 s: grading (a
    kernel that never ends). The delay counts from when lab's entry point is about to run: the
    child writes a byte on a pipe just before it calls `lab.launch.main` (CTRL_C_STARTER), since a
    Ctrl-C while Python itself starts comes before any of the lab's code, and Python's start-up
    alone takes from 30 ms to far more than 50 ms on a loaded machine. The interpreter runs with -S
    (its own site-packages on PYTHONPATH instead), as `python -m lab` would see them."""
    marker = f"LAB_TEST_MARKER={uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, sys.path)]),
               POCL_CACHE_DIR=str(tmp_path / "pocl"), LAB_TEST_MARKER=marker.split("=", 1)[1])
    hang = ROOT / "tests" / "adversarial" / "kernels" / "hang_spin.cl"
    ready, started = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-c", CTRL_C_STARTER, str(started), "grade",
                                 "transpose_coalesced", hang, "--json", tmp_path / "r.json", "--no-timing"],
                                cwd=ROOT, env=env, pass_fds=(started,), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        os.close(started)
        started = -1
        readable, _, _ = select.select([ready], [], [], 60)
        if not readable or os.read(ready, 1) != b".":
            proc.kill()
            proc.communicate()
            pytest.fail("the lab's entry point did not start within 60 s")
    finally:
        os.close(ready)
        if started >= 0:
            os.close(started)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running 30 s after Ctrl-C at {delay} s")
    assert "Traceback" not in err and "Error" not in err, err
    assert err.strip().splitlines() == ["interrupted; nothing was graded or written"], (err, out)
    assert proc.returncode == 130
    assert not (tmp_path / "r.json").exists()
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []  # its worker's process group is gone
    # and what its worker left in PoCL's folder is gone (grader.pocl_scratch: links and locks stay)
    left = [p for p in (tmp_path / "pocl").glob("lab-worker-*/*")
            if not p.is_symlink() and p.name not in (".owner", ".complete")]
    assert left == []


@contextmanager
def read_only(folder: Path):
    """`folder` unwritable, even by root (chattr +i), or the test is skipped."""
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    immutable = False
    try:
        if os.access(folder, os.W_OK):  # root: file modes do not stop it
            immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
            if not immutable:
                pytest.skip("cannot make a folder read-only here (root, no chattr)")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


@pytest.mark.parametrize("where", ["read_only_folder", "a_folder", "proc", "under_a_file"])
@pytest.mark.parametrize("option", ["--json", "--report"])
def test_an_output_that_cannot_be_written_is_a_usage_error_before_any_grading(tmp_path, where, option):
    name = "r.json" if option == "--json" else "r.md"
    (tmp_path / "file.txt").write_text("x")
    target = {"read_only_folder": tmp_path / "ro" / name, "a_folder": tmp_path / name,
              "proc": Path("/proc") / name, "under_a_file": tmp_path / "file.txt" / name}[where]
    if where == "a_folder":
        target.mkdir()
    if where == "proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc")
    (tmp_path / "ro").mkdir()
    with read_only(tmp_path / "ro"):
        result = lab("grade", "transpose_coalesced", EXAMPLE, option, target)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {option} {target}: "), lines
    assert "Traceback" not in result.output and "score" not in result.output  # nothing graded
    assert not list((tmp_path / "ro").iterdir())


@needs_opencl
def test_a_write_that_fails_after_grading_loses_nothing(tmp_path, monkeypatch):
    import grader.feedback
    from lab.cli import written

    def refuse(path, text):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(grader.feedback, "write_atomic", refuse)  # what write_report writes with
    monkeypatch.setattr(written, "write_atomic", refuse)
    result = lab("grade", "transpose_coalesced", EXAMPLE, "--json", tmp_path / "r.json", "--report",
                 tmp_path / "f.md", "--no-timing")
    assert result.exit_code == 4, result.output  # graded (correct, speed not timed), but not written
    assert "SPEED NOT GRADED HERE" in result.output and "score 70 / 100 so far" in result.output  # on the terminal
    assert "Traceback" not in result.output
    for option, path in (("--json", tmp_path / "r.json"), ("--report", tmp_path / "f.md")):
        assert (f"error: {option} {path}: could not be written (Read-only file system); the result is shown above"
                in result.output)
    assert not list(tmp_path.iterdir())


def test_version_names_the_package_and_the_grader():
    from grader import GRADER_VERSION

    result = lab("--version")
    assert result.exit_code == 0 and result.output.startswith("lab ")
    assert f"(grader {GRADER_VERSION})" in result.output


@needs_opencl
def test_json_dash_is_standard_output_and_the_report_goes_to_standard_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "lab", "grade", "transpose_coalesced", str(EXAMPLE), "--json", "-",
                           "--report", str(tmp_path / "f.md")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))})
    assert proc.returncode in (0, 5), proc.stderr  # 5 on a CPU device: speed still to be graded
    assert json.loads(proc.stdout)["status"] in ("passed", "pending")  # nothing but the JSON on stdout
    assert "score" in proc.stderr and "feedback written to" in proc.stderr
    assert not (tmp_path / "-").exists() and (tmp_path / "f.md").exists()


def test_help_shows_arguments_and_types_plainly():
    import typer

    major_minor = tuple(int(part) for part in typer.__version__.split(".")[:2])
    if major_minor >= (0, 27):  # pyproject pins typer below 0.27; a machine running the tree uninstalled may not
        pytest.skip(f"typer {typer.__version__} is outside the pinned range (<0.27), whose help this checks")
    text = lab("grade", "--help").output
    assert "STAGE FILE" in text, text
    assert "<bool>" not in text and "{stage}" not in text and "<str>" not in text, text


def test_init_writes_the_skeleton_this_machine_can_grade(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    usable = {t.backend for t in targets()}
    result = lab("init", "transpose_naive")
    assert result.exit_code == 0, result.output
    written = [p.suffix for p in tmp_path.iterdir()]
    if "cuda" in usable:
        assert written == [".cu"]
    else:  # here (CI: PoCL only) the .cl, which lab grade can run
        assert written == [".cl"] and "cannot grade" not in result.output
        asked = lab("init", "transpose_naive", "--backend", "cuda", "-o", tmp_path / "k.cu")
        assert asked.exit_code == 0 and "cannot grade a .cu file" in asked.output


def test_the_status_line_is_never_written_where_standard_error_is_not_a_terminal():
    from io import StringIO

    from rich.console import Console

    from lab.cli.status_line import grading_status

    piped = Console(file=StringIO(), force_terminal=False)
    with grading_status(piped) as line:
        assert line is None
    assert piped.file.getvalue() == ""
    shown = Console(file=StringIO(), force_terminal=True, width=80)
    with grading_status(shown) as line:
        line.enter("correctness case 1 (n=256)")
        assert "grading: correctness case 1 (n=256)" in str(line.__rich__())


def test_a_time_limit_is_reported_as_what_it_is():
    from grader.pipeline import Limits

    limits = Limits(run_s=5)
    assert limits.describe("run") == "limit 5 s (--time-limit)"
    assert limits.describe("first_run").startswith("limit 5 s (--time-limit), plus 60 s allowed for the device")


def test_each_command_is_registered_by_the_module_the_launcher_loads_for_it():
    import typer.main

    from lab import cli

    group = typer.main.get_group(app)
    for name, command in group.commands.items():
        inner = getattr(command, "commands", None)
        callbacks = [c.callback for c in inner.values()] if inner else [command.callback]
        modules = {f.__module__ for f in callbacks}
        wanted = f"lab.cli.{cli.COMMAND_MODULES[name]}"
        assert modules <= {wanted, *(f"{wanted}_{part}" for part in ("run", "slurm", "lms", "common"))}, name


def test_a_command_line_naming_submit_imports_neither_grading_nor_the_server():
    import subprocess
    import sys

    code = ("import sys; from lab import cli; cli.register('submit'); "
            "print(sorted(m for m in ('grader.grading', 'lab.cli.grade', 'lab.cli.serve', 'lab.cli.batch') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
