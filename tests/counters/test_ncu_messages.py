"""What ncu said, carried by the typed reason: recorded output text of ncu's documented
failures (NVIDIA's ERR_NVGPUCTRPERM page, the Kernel Profiling Guide's FAQ, users' logs of
ncu 2023-2025 in public issue threads), on its log file, its stdout or its stderr."""

from grader.counters import ncu
from grader.counters.model import REASON_TEXT, Unavailable, reason_line
from grader.counters.runner import interpret

CASE = {"width": 1024, "height": 1024}
MANIFEST = {"launches": [{"role": "reference", "kernel": "transpose"}], "errors": {}, "device": "GPU"}

PERMISSION = ("==PROF== Connected to process 77 (/usr/bin/python3.12)\n"
              "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0. For instructions on enabling permissions and to get more "
              "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
              "==PROF== Disconnected from process 77\n"
              "==ERROR== The application returned an error code (1).\n"
              "==WARNING== No kernels were profiled.\n")
BUSY = ("==PROF== Connected to process 12 (/usr/bin/python3)\n"
        "==ERROR== Profiling failed because a driver resource was unavailable. Ensure that no other tool "
        "(like DCGM) is concurrently collecting profiling data. See "
        "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#faq for more details.\n"
        "==ERROR== Failed to profile \"transpose\" in process 12\n"
        "==WARNING== No kernels were profiled.\n")
DRIVER = ("==ERROR== An error was reported by the driver:\n"
          "==ERROR== Cuda driver is not compatible with Nsight Compute.\n"
          "==PROF== Connected to process 2305223 (/usr/bin/python3.11)\n"
          "==ERROR== The application returned an error code (11).\n")
UNKNOWN_ERROR = ("==PROF== Connected to process 9137 (/usr/bin/python3.11)\n"
                 "==ERROR== Failed to prepare kernel for profiling\n"
                 "==ERROR== Unknown Error on device 0.\n"
                 "==ERROR== Failed to profile \"transpose\" in process 9137\n"
                 "==PROF== Trying to shutdown target application\n"
                 "==ERROR== The application returned an error code (9).\n"
                 "==ERROR== An error occurred while trying to profile.\n"
                 "==WARNING== No kernels were profiled.\n")
METRIC = "==ERROR== Failed to find metric smsp__no_such_thing.sum\n"


def test_permission_on_stderr_when_the_log_is_empty():
    result = interpret("", PERMISSION, None, CASE, status=1)
    assert result.reason == Unavailable.PERMISSION and result.detail == ""
    assert result.line == REASON_TEXT[Unavailable.PERMISSION]


def test_permission_in_the_log_file():
    assert interpret(PERMISSION, "", MANIFEST, CASE, status=1).reason == Unavailable.PERMISSION


def test_permission_said_without_its_code():
    text = "==ERROR== The user does not have permission to access NVIDIA GPU Performance Counters on device 0.\n"
    assert ncu.classify(text) == (Unavailable.PERMISSION, "")


def test_another_tool_holds_the_counters():
    result = interpret(BUSY, "", MANIFEST, CASE, status=1)
    assert result.reason == Unavailable.PROFILER_BUSY
    assert result.detail.startswith("Profiling failed because a driver resource was unavailable")
    assert len(result.detail) <= ncu.DETAIL_CHARS and "\n" not in result.line


def test_a_driver_ncu_does_not_work_with():
    result = interpret("", DRIVER, None, CASE, status=11)
    assert result.reason == Unavailable.DRIVER_INCOMPATIBLE
    assert result.detail == "Cuda driver is not compatible with Nsight Compute."


def test_an_unknown_metric_names_it():
    assert ncu.classify(METRIC) == (Unavailable.UNKNOWN_METRIC, "Failed to find metric smsp__no_such_thing.sum")


def test_an_error_of_no_known_kind_is_failed_with_its_first_telling_line():
    result = interpret(UNKNOWN_ERROR, "", MANIFEST, CASE, status=9)
    assert result.reason == Unavailable.FAILED
    assert result.detail == "Failed to prepare kernel for profiling"
    assert result.line.endswith("(Failed to prepare kernel for profiling)")


def test_the_closing_error_code_line_gives_way_to_the_entrys_own_words():
    own = "lab-profile-entry: RuntimeError: cuInit failed: no CUDA-capable device is detected\n"
    result = interpret("", "==ERROR== The application returned an error code (3).\n", None, CASE, status=3, own=own)
    assert result.reason == Unavailable.FAILED
    assert result.detail == "RuntimeError: cuInit failed: no CUDA-capable device is detected"


def test_no_error_line_at_all_carries_the_last_words():
    """The sandbox's own failure (bwrap, setpriv) before ncu ran: no ==ERROR== line, yet the
    reason says what was printed rather than only 'exit status 1'."""
    out = "bwrap: Can't bind mount /oldroot/usr/local/cuda on /newroot/usr/local/cuda: No such file or directory\n"
    result = interpret("", out, None, CASE, status=1)
    assert result.reason == Unavailable.FAILED
    assert result.detail.startswith("bwrap: Can't bind mount")
    traceback = ("Traceback (most recent call last):\n  File \"/usr/lib/python3.12/runpy.py\", line 198, in x\n"
                 "ModuleNotFoundError: No module named 'numpy'\n==PROF== Disconnected from process 5\n")
    assert interpret("", traceback, None, CASE, status=1).detail == "ModuleNotFoundError: No module named 'numpy'"
    assert interpret("", "", None, CASE, status=1).detail == "exit status 1"


def test_what_a_kernel_prints_never_passes_for_ncus_words():
    """A submission's printf goes to the entry's own output: a fake ERR_NVGPUCTRPERM there does
    not turn a failed concept check into 'not graded here'."""
    own = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n"
    table_missing = interpret("", "", MANIFEST, CASE, status=0, own=own)
    assert table_missing.reason == Unavailable.FAILED


def test_details_are_cleaned_and_capped():
    line = "==ERROR== \x1b[31mUnknown\x1b[0m Error\ton device 0 " + "x" * 400 + "\n"
    detail = ncu.first_error(line)
    assert detail.startswith("Unknown Error on device 0 x") and len(detail) == ncu.DETAIL_CHARS
    assert "\x1b" not in detail and "\t" not in detail and detail.endswith("\u2026")
    assert "\n" not in reason_line(Unavailable.FAILED, detail)


def test_every_new_reason_has_a_line():
    for reason in (Unavailable.PROFILER_BUSY, Unavailable.DRIVER_INCOMPATIBLE):
        assert REASON_TEXT[reason] and "\n" not in REASON_TEXT[reason]
