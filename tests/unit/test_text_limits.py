"""What a report keeps of a compiler's log and of a refusal's line (grader.text_limits)."""

from grader.results import CompileResult, SourceResult
from grader.text_limits import MAX_LINE_CHARS, MAX_LOG_CHARS, MAX_LOG_LINES, clip_log


def test_a_short_log_is_kept_as_it_is() -> None:
    log = "kernel.cl:3:1: error: expected ';'\n1 error generated."
    assert clip_log(log) == log


def test_a_flood_is_cut_and_keeps_its_first_error() -> None:
    log = "\n".join(f"warning: NUL byte {n} ignored" for n in range(400_000)) + "\nk.cu:9: error: bad\n"
    assert len(log) > 10_000_000  # an include of /bin/bash made such a log
    kept = clip_log(log)
    assert len(kept) <= MAX_LOG_CHARS + 2 * MAX_LINE_CHARS
    assert kept.count("\n") <= MAX_LOG_LINES + 2
    assert "k.cu:9: error: bad" in kept and "more lines of the compiler's log not kept" in kept


def test_a_long_line_and_nul_bytes_are_cut() -> None:
    kept = clip_log("x" * 100_000 + "\0")
    assert len(kept) < MAX_LINE_CHARS + 100 and "\0" not in kept


def test_the_results_hold_bounded_text() -> None:
    assert len(CompileResult(False, "e\n" * 1_000_000).log) <= MAX_LOG_CHARS + 2 * MAX_LINE_CHARS
    refused = SourceResult(refused="k.cu:1: " + "a" * 50_000 + "\nsecond line")
    assert refused.refused is not None and len(refused.refused) <= 800 and "second" not in refused.refused
