"""The whole parent side of a profiling run with a stand-in ncu (this machine has no GPU):
the argv it gets, the request on its stdin, the log file and the launch manifest it leaves,
read back as counters; in the worker's sandbox too where bwrap works. The stand-in writes
what fixtures/README.md describes; it says nothing about a real ncu."""

import stat
import sys

import pytest

from grader.counters import ncu, runner
from grader.counters.view import build
from tests.conftest import catalog

FAKE = r'''#!{python}
import json, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
metrics = args[args.index("--metrics") + 1].split(",")
assert args[args.index("--kernel-name") + 1] == "regex:^(transpose)$"
entry = args[args.index("-m"):]
assert entry[:2] == ["-m", "grader.counters.entry"] and entry[2:] in ([], ["--sandboxed"])
request = json.loads(sys.stdin.read())
launches = [{{"role": r["role"], "kernel": "transpose"}} for r in request["roles"]]
with open(request["out"], "w") as out:
    import os
    json.dump({{"launches": launches, "errors": {{}}, "device": "Stand-in GPU" + (" uid %d" % os.getuid() if entry[2:] else "")}}, out)

def value(metric, role):
    if "requests" in metric:
        return "32,768"
    if metric.endswith("global_op_st.sum") and role != "reference":
        return "1,048,576"
    return "131,072"

head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC"]
with open(log, "w") as f:
    f.write("==PROF== Connected to process 1 (python3)\n")
    f.write(",".join('"%s"' % h for h in head + metrics) + "\n")
    f.write(",".join('""' for _ in head + metrics) + "\n")
    for i, launch in enumerate(launches):
        cells = [str(i), "1", "python3", "h", "transpose", "1", "7", "(32, 8, 1)", "(32, 32, 1)", "0", "9.0"]
        f.write(",".join('"%s"' % c for c in cells + [value(m, launch["role"]) for m in metrics]) + "\n")
    f.write("==PROF== Disconnected from process 1\n")
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    folder = tmp_path / "nsight"
    folder.mkdir()
    tool = folder / "ncu"
    tool.write_text(FAKE.format(python=sys.executable))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setenv(ncu.NCU_ENV, str(tool))
    monkeypatch.setattr(ncu.admin_only, "__defaults__", (tmp_path / "no-params",))
    return tool


def check(result):
    assert result.ok, result.line
    assert result.roles == ("baseline", "reference", "submission") and result.device.startswith("Stand-in GPU")
    spec = catalog().get("transpose_coalesced")
    store = build(spec, result).rows[0]
    assert (store.yours, store.reference, store.baseline, store.worse) == (32.0, 4.0, 32.0, True)


def test_unsandboxed(stand_in):
    spec = catalog().get("transpose_coalesced")
    check(runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "src", "x.cu"), sandboxed=False))


def test_in_the_sandbox(stand_in, monkeypatch):
    from grader import sandbox

    monkeypatch.setenv("LAB_SANDBOX", "on")
    plan = sandbox.decide()
    if isinstance(plan, str):
        pytest.skip(f"no sandbox here: {plan}")
    spec = catalog().get("transpose_coalesced")
    result = runner.profile(catalog(), spec, runner.roles_for(catalog(), spec, "src", "x.cu"), sandboxed=True)
    check(result)
    assert " uid " in result.device  # ncu (here its stand-in) ran inside the sandbox
