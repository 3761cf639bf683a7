"""The sandbox of the grading worker (grader.sandbox): from inside it, code that runs where a
kernel runs cannot read another student's file or the gradebook, write outside its own
folder (the course, the results, the trusted-kernel cache), reach the network or stay root;
the same probe outside the sandbox can. A real grading passes inside; where the sandbox
cannot be set up, grading goes on and says so once, or refuses with LAB_SANDBOX=require.

Skipped, with the reason, where bubblewrap is missing or cannot make its namespaces here.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from grader import sandbox
from grader.results import Grading
from grader.worker_process import WorkerProcess
from tests.conftest import targets
from tests.sandbox.probing import RunProbe

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "transpose_coalesced.cl"
NOTE = "grading without a sandbox"


def _why_not() -> str | None:
    """Why the sandbox cannot be set up here (these tests turn it on themselves: the rest of
    the suite runs without it, tests/conftest.py)."""
    saved = os.environ.get("LAB_SANDBOX")
    os.environ["LAB_SANDBOX"] = "on"
    try:
        plan = sandbox.decide()
    except sandbox.SandboxUnavailable as error:
        return str(error)
    finally:
        if saved is None:
            del os.environ["LAB_SANDBOX"]
        else:
            os.environ["LAB_SANDBOX"] = saved
    return plan if isinstance(plan, str) else None


WHY_NOT = _why_not()
needs_sandbox = pytest.mark.skipif(WHY_NOT is not None, reason=f"no sandbox here: {WHY_NOT}")
has_opencl = any(t.backend == "opencl" for t in targets())
needs_opencl = pytest.mark.skipif(not has_opencl, reason="no OpenCL device")


class Servers:
    """A TCP and a UDP server on 127.0.0.1 that record what reaches them."""

    def __init__(self):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.5)
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def received(self, token: str) -> bool:
        try:
            while True:
                data, _ = self.udp.recvfrom(256)
                if data.decode(errors="replace") == token:
                    return True
        except (TimeoutError, OSError):
            return False

    def close(self) -> None:
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def world(tmp_path, monkeypatch):
    """Another student's submission, a gradebook, a trusted-kernel cache, a file in the home
    folder and in the course, and servers on the loopback network."""
    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    bob = tmp_path / "submissions" / "bob" / "transpose_coalesced.cl"
    bob.parent.mkdir(parents=True)
    bob.write_text("// bob's kernel: secret\n")
    results = tmp_path / "results"
    results.mkdir()
    (results / "gradebook.csv").write_text("student,score\nbob,70\n")
    home = Path(os.path.expanduser("~"))
    home_file = tempfile.NamedTemporaryFile("w", dir=home, prefix=".lab-probe-", delete=False)
    home_file.write("private\n")
    home_file.close()
    course_file = ROOT / "reference" / f".lab-probe-{uuid.uuid4().hex}.txt"
    in_project = ROOT / f".lab-probe-results-{uuid.uuid4().hex}"  # results kept in the checkout
    in_project.mkdir()
    (in_project / "gradebook.csv").write_text("student,score\nbob,70\n")
    servers = Servers()
    world = {
        "tmp": tmp_path, "servers": servers, "course_file": course_file,
        "read": {"other_student": str(bob), "gradebook": str(results / "gradebook.csv"),
                 "home": home_file.name, "gradebook_in_project": str(in_project / "gradebook.csv")},
        "write": {"results": str(results / "forged.csv"), "course": str(course_file),
                  "cache": str(tmp_path / "cache" / f"{'ab' * 32}.bin"), "home": f"{home_file.name}.w"},
    }
    if os.path.exists("/etc/shadow") and os.access("/etc/shadow", os.R_OK):
        world["read"]["shadow"] = "/etc/shadow"
    yield world
    servers.close()
    for path in (home_file.name, f"{home_file.name}.w", str(course_file)):
        Path(path).unlink(missing_ok=True)
    shutil.rmtree(in_project, ignore_errors=True)


def _probe(world, monkeypatch, run_probe: RunProbe, sandbox_mode: str, **extra) -> tuple[dict, Grading]:
    token = uuid.uuid4().hex
    args = {"read": world["read"], "write": world["write"], "tcp": world["servers"].tcp.getsockname()[1],
            "udp": world["servers"].udp.getsockname()[1], "token": token, **extra}
    monkeypatch.setenv("LAB_SANDBOX", sandbox_mode)
    probed, grading = run_probe(args)
    assert probed is not None, (grading.abort, grading.errors, grading.output_tail)
    found = dict(probed)
    found["udp_received"] = world["servers"].received(token)
    for name, path in world["write"].items():  # what reached the machine's files; then away with it
        found[f"written:{name}"] = Path(path).exists()
        Path(path).unlink(missing_ok=True)
    return found, grading


def _can_route_off_machine() -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.connect(("192.0.2.1", 9))
        return True
    except OSError:
        return False


@needs_sandbox
def test_the_probe_reaches_everything_outside_the_sandbox_and_nothing_inside(world, monkeypatch, run_probe):
    outside, graded_outside = _probe(world, monkeypatch, run_probe, "off", unshare=True)
    inside, graded_inside = _probe(world, monkeypatch, run_probe, "on", unshare=True)
    assert graded_outside.sandbox.sandboxed is False and graded_inside.sandbox.sandboxed is True

    for name in world["read"]:
        assert outside[f"read:{name}"]["ok"], (name, outside[f"read:{name}"])
        assert "FileNotFoundError" in inside[f"read:{name}"]["error"], (name, inside[f"read:{name}"])  # not there
    for name in world["write"]:
        assert outside[f"write:{name}"]["ok"] and outside[f"written:{name}"], (name, outside[f"write:{name}"])
        assert not inside[f"written:{name}"], (name, inside[f"write:{name}"])  # nothing reached the file
        if name != "home":  # (a user's sandbox may write an empty HOME folder of its own, gone with it)
            assert not inside[f"write:{name}"]["ok"], (name, inside[f"write:{name}"])
    assert inside["write:own"]["ok"] and outside["write:own"]["ok"]  # its own temporary folder

    assert outside["tcp"]["ok"] and not inside["tcp"]["ok"], inside["tcp"]
    assert outside["udp_received"] and not inside["udp_received"]
    if _can_route_off_machine():
        assert outside["udp_route"]["ok"]
    assert not inside["udp_route"]["ok"], inside["udp_route"]
    assert inside["interfaces"] == ["lo"]
    assert len(inside["pids"]) < 10  # its own process namespace: not the machine's processes

    assert outside["euid"] == os.geteuid()
    assert inside["euid"] != 0 and inside["uid"] != 0
    if os.geteuid() == 0:
        assert graded_inside.sandbox.user != "root"
    assert inside["status"]["CapEff"] == inside["status"]["CapPrm"] == "0000000000000000"
    assert inside["status"]["CapInh"] == inside["status"]["CapAmb"] == "0000000000000000"
    if os.geteuid() == 0 and any(os.access(p, os.X_OK) for p in sandbox.SETPRIV_PLACES):
        assert inside["status"]["CapBnd"] == "0000000000000000"  # setpriv empties the bounding set too
    assert inside["status"]["NoNewPrivs"] == "1"
    # No new namespaces from inside (a user namespace reopens the kernel to an unprivileged user)
    assert not inside["unshare_user"]["ok"], inside["unshare_user"]
    if sandbox.seccomp_filter() is not None:
        assert inside["status"]["Seccomp"] == "2"
    if _can_unshare_user():
        assert outside["unshare_user"]["ok"], outside["unshare_user"]


def _can_unshare_user() -> bool:
    return subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode == 0 \
        if shutil.which("unshare") else False


@needs_sandbox
def test_only_cache_entries_sent_before_the_student_code_are_kept(world, monkeypatch, run_probe):
    """The trusted-kernel cache is read-only inside (the probe's write fails, above); entries
    reach it through the parent, which keeps them only until the worker says it holds the
    student's code: a forged one after that is dropped."""
    before, after = "1" * 64, "2" * 64
    cache = world["tmp"] / "cache"
    found, _ = _probe(world, monkeypatch, run_probe, "on", cache_before=[before], cache_after=[after])
    assert not found["write:cache"]["ok"]
    assert (cache / f"{before}.bin").read_bytes() == b"before"
    assert json.loads((cache / f"{before}.json").read_text())["size"] == len(b"before")
    assert not (cache / f"{after}.bin").exists() and not (cache / f"{after}.json").exists()
    if os.geteuid() == 0:  # the worker is not the cache's owner: it reads it through its group
        assert (cache / f"{before}.bin").stat().st_mode & 0o777 == 0o640


@needs_sandbox
def test_an_unsandboxed_worker_cannot_send_cache_entries_either(world, monkeypatch, run_probe):
    """Outside the sandbox the worker writes the cache itself (as before); the parent takes no
    entries from it."""
    key = "3" * 64
    _probe(world, monkeypatch, run_probe, "off", cache_before=[key])
    assert not (world["tmp"] / "cache" / f"{key}.bin").exists()


def _lab_grade(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"{uuid.uuid4().hex}.json"
    done = subprocess.run([sys.executable, "-m", "lab", "grade", "transpose_coalesced", str(EXAMPLE),
                           "--json", str(out), *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=300)
    return done, (json.loads(out.read_text()) if out.exists() else {})


@needs_sandbox
@needs_opencl
def test_a_real_grading_passes_inside_the_sandbox(tmp_path):
    done, result = _lab_grade(tmp_path, {"LAB_SANDBOX": "require", "LAB_TEST_BACKENDS": "opencl"})
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: correct, speed pending (a CPU)
    assert result["status"] in ("passed", "pending")
    assert result["sandbox"]["sandboxed"] is True
    if os.geteuid() == 0:
        assert result["sandbox"]["user"] not in ("", "root")
    assert NOTE not in done.stderr


@needs_sandbox
@needs_opencl
def test_a_sandboxed_pocl_worker_starts_with_the_graders_kernels_made(tmp_path, monkeypatch):
    """PoCL makes a kernel's machine code at its first launch and keeps it in its cache, which a
    sandboxed worker has of its own (HOME is its /tmp): the template the sandbox makes once (the
    grader's kernels launched on each CPU device, in the sandbox) holds each of them, for the
    work-group size they run at, and a worker's copy of it is where PoCL looks."""
    from grader import worker
    from grader.backends import registry
    from grader.backends.opencl import POCL_KERNEL_CACHE
    from grader.device_ops import BLOCK, ENTRIES

    if not any(t.backend == "opencl" and t.kind == "cpu" for t in targets()):
        pytest.skip("no OpenCL CPU device (PoCL)")
    monkeypatch.setenv("LAB_SANDBOX", "require")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kind = registry.by_name("opencl")
    launch = sandbox.wrap(["true"], dict(os.environ), backend=kind)
    launch.close()
    version = POCL_KERNEL_CACHE.driver_version()
    assert version is not None, "PoCL is installed here (a CPU device was found)"
    template = tmp_path / "cache" / "gpu-teaching-lab" / POCL_KERNEL_CACHE.folder / version
    assert str(template) in launch.cache_templates
    made = {path.parent.name for path in template.glob(f"kcache/*/*/*/{BLOCK}-1-1-*")}
    assert made == set(ENTRIES), made
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    worker.copy_driver_caches(launch.cache_templates, kind)
    copied = {path.parent.name for path in (tmp_path / "home" / POCL_KERNEL_CACHE.home).glob(f"*/*/*/{BLOCK}-1-1-*")}
    assert copied == set(ENTRIES)


@needs_sandbox
def test_a_trusted_entry_made_inside_reaches_the_cache_through_the_parent_and_is_read_back(world, monkeypatch,
                                                                                         run_probe):
    """In the worker, kernel_cache.store (as a trusted compile calls it) sends the entry; the
    parent writes it; the next sandboxed worker reads it (as the unprivileged user too)."""
    key = "4" * 64
    found, _ = _probe(world, monkeypatch, run_probe, "on", store=[key])
    assert found[f"store:{key}"]["ok"]
    assert (world["tmp"] / "cache" / f"{key}.bin").read_bytes() == b"trusted"
    found, _ = _probe(world, monkeypatch, run_probe, "on", load=[key])
    assert found[f"load:{key}"] == {"ok": True, "value": "trusted"}


def _units():
    from grader.backends.base import CompileUnit

    source = "__kernel void k(__global float* x) { x[get_global_id(0)] = 1.0f; }"
    return [CompileUnit(source + "\n// student", ("k",), {}, "student.cl"),
            CompileUnit(source + "\n// reference", ("k",), {}, "reference.cl", trusted=True)]


def test_compile_all_compiles_the_trusted_units_before_it_says_student_code_follows():
    from grader.backends.fake import FakeBackend

    events = []
    backend = FakeBackend({"k": lambda *a: None})
    real = backend.compile
    backend.compile = lambda source, *a: (events.append(source.rsplit("// ", 1)[1]), real(source, *a))[1]
    results = backend.compile_all(_units(), before_untrusted=lambda: events.append("hook"))
    assert events == ["reference", "hook", "student"] and len(results) == 2


@needs_opencl
def test_opencl_sends_its_trusted_cache_entries_before_it_compiles_the_student_code(tmp_path, monkeypatch):
    from grader.backends import kernel_cache
    from grader.backends.opencl import OpenCLBackend

    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path / "cache"))
    events = []
    monkeypatch.setattr(kernel_cache, "sink", lambda key, blob, meta: events.append("entry"))
    backend = OpenCLBackend(next(t.index for t in targets() if t.backend == "opencl"))
    results = backend.compile_all(_units(), before_untrusted=lambda: events.append("hook"))
    assert events == ["entry", "hook"]
    assert all(isinstance(r, dict) and "k" in r for r in results)
    assert not (tmp_path / "cache").exists()  # the sink took it: nothing written here


def broken_bwrap(folder: Path) -> str:
    """An executable that fails as bwrap: a machine where bwrap is there but cannot work."""
    path = folder / "broken-bwrap"
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return str(path)


@needs_opencl
def test_without_bwrap_grading_goes_on_and_says_so_once(tmp_path):
    done, result = _lab_grade(tmp_path, {"LAB_BWRAP": broken_bwrap(tmp_path), "LAB_SANDBOX": "on"})
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: correct, speed pending (a CPU)
    assert result["status"] in ("passed", "pending")
    assert result["sandbox"]["sandboxed"] is False and "broken-bwrap" in result["sandbox"]["reason"]
    assert done.stderr.count(NOTE) == 1, done.stderr


@pytest.mark.parametrize("setting", ["/usr/bin/bwrapp", "bwrapp", "/tmp"])
def test_a_lab_bwrap_that_names_no_executable_is_an_error(tmp_path, setting):
    """Issue 25: a mistyped LAB_BWRAP fell back to grading without a sandbox, silently."""
    done, result = _lab_grade(tmp_path, {"LAB_BWRAP": setting, "LAB_SANDBOX": "on"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"LAB_BWRAP={setting}: no such executable file" in done.stderr and not result
    assert "Traceback" not in done.stderr


def test_lab_bwrap_is_looked_up_on_path_and_ignored_when_the_sandbox_is_off(monkeypatch):
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("no bwrap on PATH")
    assert sandbox._bwrap_binary("bwrap", os.environ.get("PATH", "")) == bwrap
    assert sandbox._bwrap_binary("", os.environ.get("PATH", "")) == bwrap
    monkeypatch.setenv("LAB_BWRAP", "/no/such/bwrap")
    monkeypatch.setenv("LAB_SANDBOX", "off")
    assert sandbox.problem() is None and sandbox.decide() == "LAB_SANDBOX=off"


def test_the_note_is_said_once_for_many_workers(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LAB_BWRAP", broken_bwrap(tmp_path))
    monkeypatch.setenv("LAB_SANDBOX", "on")
    for _ in range(3):
        worker = WorkerProcess(None)  # a device of no row
        assert worker.sandbox.sandboxed is False
        worker.discard()
    assert capfd.readouterr().err.count(NOTE) == 1


def test_require_refuses_to_grade_without_a_sandbox(tmp_path):
    done, result = _lab_grade(tmp_path, {"LAB_BWRAP": broken_bwrap(tmp_path), "LAB_SANDBOX": "require"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "LAB_SANDBOX=require" in done.stderr and not result


def test_an_unknown_setting_refuses_rather_than_grading_unsandboxed(tmp_path):
    done, _ = _lab_grade(tmp_path, {"LAB_SANDBOX": "requried"})
    assert done.returncode == 2 and "LAB_SANDBOX" in done.stderr


@needs_sandbox
def test_a_worker_killed_by_a_signal_is_reported_as_that_signal(world, monkeypatch, run_probe):
    """bwrap reports a child killed by signal N as exit code 128 + N: the verdict still names
    the signal."""
    monkeypatch.setenv("LAB_SANDBOX", "on")
    _, grading = run_probe({"crash": True})
    assert grading.sandbox.sandboxed and grading.abort is not None
    assert "SIGSEGV" in grading.abort.message, grading.abort.message


def test_the_cache_keeps_only_well_formed_keys(tmp_path, monkeypatch):
    from grader.backends import kernel_cache

    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path / "cache"))
    kernel_cache.store("../../escape", b"x", {})
    kernel_cache.store("a" * 64, base64.b64decode(b"eA=="), {})
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["a" * 64 + ".bin", "a" * 64 + ".json"]


@needs_sandbox
def test_a_trial_that_worked_is_remembered_and_forgotten_when_a_worker_fails_to_start(tmp_path, monkeypatch):
    """The next process skips the trial (25-50 ms) for the very same setup; a sandbox that then
    fails to start a worker is tried afresh."""
    monkeypatch.setenv("LAB_KERNEL_CACHE", str(tmp_path / "kernels"))
    monkeypatch.setenv("LAB_SANDBOX", "on")
    sandbox._decide.cache_clear()
    calls = []
    real = sandbox._trial
    monkeypatch.setattr(sandbox, "_trial", lambda plan: calls.append(plan) or real(plan))
    plan = sandbox.decide()
    assert isinstance(plan, sandbox._Plan) and len(calls) == 1
    remembered = sandbox._trial_file(plan)
    assert remembered is not None and remembered.is_file()
    assert (remembered.parent.stat().st_mode & 0o777) == 0o700
    sandbox._decide.cache_clear()  # as a new process would
    assert isinstance(sandbox.decide(), sandbox._Plan) and len(calls) == 1  # no trial this time
    sandbox.forget_trial()
    assert not remembered.exists()
    assert isinstance(sandbox.decide(), sandbox._Plan) and len(calls) == 2
    remembered.parent.chmod(0o777)  # a folder others could write to is not believed
    sandbox._decide.cache_clear()
    sandbox.decide()
    assert len(calls) == 3
    sandbox._decide.cache_clear()


def test_nsight_compute_is_bound_where_the_ncu_launcher_looks_for_it(tmp_path):
    """The toolkit's bin/ncu is a launcher that looks for a nsight-compute* folder beside bin/ or
    under /opt/nvidia; on the H100 the one was a link to the other, left dangling in the sandbox."""
    from grader.backends.cuda import nsight_compute_installs as _nsight_compute_installs

    cuda, opt = tmp_path / "cuda-13.0", tmp_path / "opt-nvidia"
    (cuda / "bin").mkdir(parents=True)
    (opt / "nsight-compute" / "2025.3.1").mkdir(parents=True)
    (cuda / "nsight-compute-2025.3.1").symlink_to(opt / "nsight-compute" / "2025.3.1")
    (cuda / "nvvm").mkdir()
    found = _nsight_compute_installs(cuda, opt)
    assert found == [str(opt / "nsight-compute" / "2025.3.1"), str(opt / "nsight-compute")]
    assert _nsight_compute_installs(tmp_path / "nowhere", tmp_path / "none") == []


def test_an_installed_lab_binds_its_python_install_and_withholds_a_checkout(tmp_path):
    """A wheel install's packages live in site-packages (the package root): the venv and its
    site-packages are bound (the worker imports numpy and the GPU library from there); a checkout
    is never bound whole, nor a folder holding it."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.12" / "site-packages"
    (site / "grader").mkdir(parents=True)
    assert not sandbox.withheld(str(site), [str(site)])
    assert not sandbox.withheld(str(venv), [str(site)])
    checkout = tmp_path / "course-checkout"
    (checkout / ".venv" / "lib").mkdir(parents=True)
    assert sandbox.withheld(str(checkout), [str(checkout)])
    assert sandbox.withheld(str(tmp_path), [str(checkout)])
    assert not sandbox.withheld(str(checkout / ".venv" / "lib"), [str(checkout)])
