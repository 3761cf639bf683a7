"""One profiling run's log, output and launch manifest, as a ProfileResult with a typed reason."""

import json
from pathlib import Path

from grader.counters import ncu
from grader.counters.model import Unavailable
from grader.counters.runner import interpret

FIXTURES = Path(__file__).parent / "fixtures"
LOG = (FIXTURES / "transpose_coalesced.ncu.log").read_text()
MANIFEST = json.loads((FIXTURES / "transpose_coalesced.launches.json").read_text())
CASE = {"width": 1024, "height": 1024}


def test_launches_pair_with_roles_in_order():
    result = interpret(LOG, "", MANIFEST, CASE, 2.5)
    assert result.ok and result.roles == ("baseline", "reference", "submission")
    assert result.of("reference")[0].value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum") == 131072
    assert result.of("submission")[0].value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum") == 1048576
    assert result.device == "NVIDIA H100 80GB HBM3" and result.seconds == 2.5


def test_permission_is_a_reason_not_a_message():
    result = interpret((FIXTURES / "permission.ncu.log").read_text(), "", {"launches": MANIFEST["launches"]}, CASE)
    assert result.reason == Unavailable.PERMISSION
    assert "NVreg_RestrictProfilingToAdminUsers=0" in result.line


def test_no_kernels_profiled():
    result = interpret((FIXTURES / "opencl_no_kernels.ncu.log").read_text(), "", MANIFEST, CASE)
    assert result.reason == Unavailable.NO_KERNELS


def test_more_rows_than_launches_or_another_kernel_is_unreadable():
    one = {"launches": MANIFEST["launches"][:2], "errors": {}}
    assert interpret(LOG, "", one, CASE).reason == Unavailable.UNREADABLE
    other = {"launches": [dict(launch, kernel="copy") for launch in MANIFEST["launches"]]}
    result = interpret(LOG, "", other, CASE)
    assert result.reason == Unavailable.UNREADABLE and "'copy'" in result.detail


def test_a_submission_that_stopped_the_run_loses_only_its_own_counters():
    text = LOG.splitlines()
    cut = "\n".join(line for line in text if not line.startswith('"2"'))  # its launch was never profiled
    result = interpret(cut, "", MANIFEST, CASE)
    assert result.ok and result.roles == ("baseline", "reference")
    assert "submission" in result.role_errors


def test_an_entry_failure_names_its_line():
    out = "lab-profile-entry: FileNotFoundError: no reference\n==PROF== Disconnected from process 1"
    result = interpret("", out, None, CASE, status=3)
    assert result.reason == Unavailable.FAILED and result.detail == "FileNotFoundError: no reference"


def test_compile_errors_of_every_role_say_so():
    manifest = {"launches": [], "errors": {"submission": "does not compile: x.cu(3): error"}}
    result = interpret("", "", manifest, CASE, status=0)
    assert result.reason == Unavailable.FAILED and "submission: does not compile" in result.detail


def test_unknown_metric_and_unsupported_device_lines():
    assert ncu.classify("==ERROR== Failed to find metric foo__bar.sum")[0] == Unavailable.UNKNOWN_METRIC
    assert ncu.classify("==ERROR== Profiling is not supported on this device")[0] == Unavailable.DEVICE_UNSUPPORTED
    assert ncu.classify("==PROF== Disconnected") is None


def test_the_command_is_an_argv_with_the_kernels_as_an_anchored_regex(tmp_path):
    argv = ncu.command("/opt/ncu", ("gpu__time_duration.sum", "dram__bytes_read.sum"), ("transpose", "transpose"),
                       3, tmp_path / "ncu.log", ["python3", "-m", "grader.counters.entry"])
    assert argv[:7] == ["/opt/ncu", "--csv", "--page", "raw", "--print-units", "base", "--metrics"]
    assert argv[7] == "gpu__time_duration.sum,dram__bytes_read.sum"
    assert argv[argv.index("--kernel-name") + 1] == "regex:^(transpose)$"
    assert argv[argv.index("--launch-count") + 1] == "3"
    assert argv[argv.index("--target-processes") + 1] == "all"
    assert argv[-3:] == ["python3", "-m", "grader.counters.entry"]


def test_admin_only_reads_the_drivers_parameter(tmp_path):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    assert ncu.admin_only(params) is True
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert ncu.admin_only(params) is False
    assert ncu.admin_only(tmp_path / "missing") is None
