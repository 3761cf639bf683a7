"""Why a submission did not pass, as a short label that groups like failures across a class.

The group is (check, kind, label): the first check that did not pass, the kind of failure
the grader recorded (grader.results.FailureKind), and a label of a few words with file
paths and line numbers removed, so that two students with the same bug land in the same group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.report import ERROR, FAILED, Check
from grader.results import FailureKind

KIND_LABELS = {
    FailureKind.WRONG: "wrong results",
    FailureKind.OUT_OF_BOUNDS: "writes out of bounds",
    FailureKind.READ_OUT_OF_BOUNDS: "reads out of bounds",
    FailureKind.RACE: "results change between runs (a race)",
    FailureKind.INPUT_MODIFIED: "modifies its input",
    FailureKind.DIVERGENT_BARRIER: "a barrier only some threads reach",
    FailureKind.SANITIZER: "compute-sanitizer found an error",
    FailureKind.REFUSED_LAUNCH: "launch refused",
    FailureKind.LAUNCH_FAILED: "the kernel failed on the device",
    FailureKind.MEMORY: "ran out of memory",
    FailureKind.BENCHMARK_WRONG: "wrong at the benchmark size only",
    FailureKind.TIMEOUT: "timed out (an endless loop or a barrier not all reach)",
    FailureKind.TOO_SLOW: "too slow",
    FailureKind.NO_DEVICE: "not graded: no device for its backend here",
    FailureKind.SANDBOX_UNAVAILABLE: "not graded: no sandbox starts here",
    FailureKind.GRADER_ERROR: "the grader failed",
}
_LOCATION = re.compile(r"(?:(?<=\s)|^)[^\s:]+(?::\d+){1,2}:\s*")  # path:line:col:
_LEADING_FILE = re.compile(r"^[^\s:]+\.[A-Za-z]\w*(?::\d+){0,2}:\s*")  # file.cl:3:
MAX_WORDS = 9


@dataclass(frozen=True)
class Failure:
    check: str  # "compiles" | "correct" | "fast" | ...
    kind: FailureKind
    label: str  # a few words, the same for the same bug
    message: str  # the check's message with the submission's path shortened to its file name


def first_words(text: str, limit: int = MAX_WORDS) -> str:
    text = text.strip()
    for stop in (" (", "; ", ": "):
        cut = text.find(stop)
        if cut > 0:
            text = text[:cut]
    words = text.split()
    return " ".join(words[:limit]) + (" ..." if len(words) > limit else "")


def shorten_paths(text: str, path: str) -> str:
    """The submission's path as given becomes its file name alone."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return text.replace(path, name) if path else text


def _compile_label(message: str) -> str:
    text = message.removeprefix("compile error:").strip()
    text = _LOCATION.sub("", text.replace("error:", " ")).strip()
    return "compile error: " + first_words(text) if text else "compile error"


def classify(checks: list[Check], path: str = "") -> Failure | None:
    """The failure of a result (its report's checks), or None if nothing failed. The kind is the
    one the grader recorded; the label only shortens the message where the kind alone does not
    group (compile errors and refusals by their first words, crashes by signal)."""
    for check in checks:
        if check.status not in (FAILED, ERROR):
            continue
        name = check.name
        message = shorten_paths(check.message, path)
        kind = check.failure or (FailureKind.GRADER_ERROR if check.status == ERROR else FailureKind.WRONG)
        if kind == FailureKind.CRASH:
            return Failure(name, kind, f"crashed ({check.signal})" if check.signal else "crashed", message)
        if kind == FailureKind.COMPILE_ERROR:
            return Failure(name, kind, _compile_label(message), message)
        if kind == FailureKind.REFUSED_SOURCE:
            reason = _LOCATION.sub("", _LEADING_FILE.sub("", message))
            return Failure(name, kind, "refused: " + first_words(reason), message)
        if kind == FailureKind.GRADER_ERROR and check.status == ERROR:
            return Failure(name, kind, "grader error: " + first_words(_LOCATION.sub("", message)), message)
        label = KIND_LABELS.get(kind, kind.value)
        if kind == FailureKind.WRONG and check.unwritten:
            label += " (some elements never written)"
        return Failure(name, kind, label, message)
    return None
