"""The profiling entry's own work, without ncu, on this machine's OpenCL CPU device (PoCL):
it compiles the roles (trusted first), launches each once in order and writes the launches;
a submission that does not compile is named, the others are launched. (On a GPU ncu runs it.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.counters import runner
from grader.counters.entry import ProfileRequest
from tests.conftest import catalog

ROOT = Path(__file__).resolve().parents[2]


def run_entry(tmp_path, stage, source):
    spec = catalog().get(stage)
    roles = runner.roles_for(catalog(), spec, source, f"{stage}.cl", suffix=".cl")
    out = tmp_path / "launches.json"
    request = ProfileRequest(str(catalog().root), stage, "opencl", -1, dict(spec.cpu_bench_cases[0]), str(out), roles)
    done = subprocess.run([sys.executable, "-m", "grader.counters.entry"], input=request.to_json(), text=True,
                          capture_output=True, cwd=ROOT, timeout=300)
    return done, json.loads(out.read_text())


@pytest.fixture(autouse=True)
def pocl():
    pytest.importorskip("pyopencl")
    from grader.backends.discovery import discover

    if not discover((by_name("opencl"),)).targets:
        pytest.skip("no OpenCL device")


def test_every_role_launched_in_order(tmp_path):
    source = (ROOT / "examples" / "transpose_coalesced.cl").read_text()
    done, manifest = run_entry(tmp_path, "transpose_coalesced", source)
    assert done.returncode == 0, done.stderr
    assert [launch["role"] for launch in manifest["launches"]] == ["baseline", "reference", "submission"]
    assert {launch["kernel"] for launch in manifest["launches"]} == {"transpose"}
    assert manifest["errors"] == {} and manifest["device"]
    assert done.stdout == ""  # everything printed goes to stderr: nothing can pass for ncu's table


def test_a_submission_that_does_not_compile_is_named(tmp_path):
    done, manifest = run_entry(tmp_path, "transpose_coalesced", "__kernel void transpose( {")
    assert done.returncode == 0, done.stderr
    assert [launch["role"] for launch in manifest["launches"]] == ["baseline", "reference"]
    assert manifest["errors"]["submission"].startswith("does not compile")


def test_only_the_chosen_launches_are_listed(tmp_path):
    """mlp_train profiles its products once each (grader.counters.selection): every launch of the
    step runs, and the manifest lists the five ncu's table will have, per role."""
    source = (ROOT / "reference" / "mlp_train" / "solution.cl").read_text()
    done, manifest = run_entry(tmp_path, "mlp_train", source)
    assert done.returncode == 0, done.stderr
    assert manifest["errors"] == {}
    by_role = {}
    for launch in manifest["launches"]:
        by_role.setdefault(launch["role"], []).append(launch["kernel"])
    assert by_role == {role: ["kf", "kf", "kb2", "kb1", "kb2"] for role in ("baseline", "reference", "submission")}
