"""Why a submission did not pass, as a short label that groups like failures across a class.

The group is (check, kind, label): the first check that did not pass, the kind of failure
(from the check's details["kind"] where the grader set one, else from its message), and a
label of a few words with file paths, line numbers and case sizes removed, so that two
students with the same bug land in the same group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from grader.report import ERROR, FAILED

KIND_LABELS = {
    "wrong": "wrong results",
    "out_of_bounds": "writes out of bounds",
    "race": "results change between runs (a race)",
    "input_modified": "modifies its input",
    "refused": "launch refused",
    "launch_failed": "the kernel failed on the device",
    "benchmark_wrong": "wrong at the benchmark size only",
    "no_device": "not graded: no device for its backend here",
    "grader_error": "the grader failed",
}
_LOCATION = re.compile(r"(?:(?<=\s)|^)[^\s:]+(?::\d+){1,2}:\s*")  # path:line:col:
_LEADING_FILE = re.compile(r"^[^\s:]+\.(?:cu|cl)(?::\d+){0,2}:\s*", re.IGNORECASE)  # file.cl:3:
_CASE = re.compile(r"^[\w=, ]+?: ")  # "width=32, height=32: " before a case's message
_SIGNAL = re.compile(r"crashed \((\w+)\)")
MAX_WORDS = 9


@dataclass(frozen=True)
class Failure:
    check: str  # "compiles" | "correct" | "fast" | ...
    kind: str  # "compile_error", "refused_source", "crash", "timeout", "wrong", "too_slow", ...
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


def classify(checks: list[dict[str, Any]], path: str = "") -> Failure | None:
    """The failure of a result (its checks as in result.json), or None if nothing failed."""
    for check in checks:
        status = check.get("status")
        if status not in (FAILED, ERROR):
            continue
        name = str(check.get("name", "?"))
        message = shorten_paths(str(check.get("message", "")), path)
        kind = str((check.get("details") or {}).get("kind", ""))
        if kind in ("no_device", "grader_error"):
            return Failure(name, kind, KIND_LABELS[kind], message)
        if (signal := _SIGNAL.search(message)) is not None:
            return Failure(name, "crash", f"crashed ({signal.group(1)})", message)
        if "timed out" in message:
            return Failure(name, "timeout", "timed out (an endless loop or a barrier not all reach)", message)
        if status == ERROR:
            return Failure(name, "grader_error", "grader error: " + first_words(_LOCATION.sub("", message)), message)
        if name == "compiles":
            if message.startswith("compile error"):
                return Failure(name, "compile_error", _compile_label(message), message)
            reason = _LOCATION.sub("", _LEADING_FILE.sub("", message))
            return Failure(name, "refused_source", "refused: " + first_words(reason), message)
        if name == "fast":
            return Failure(name, "too_slow", "too slow", message)
        if kind in KIND_LABELS:
            label = KIND_LABELS[kind]
            if kind == "wrong" and "never written" in message:
                label += " (some elements never written)"
            return Failure(name, kind, label, message)
        return Failure(name, kind or "other", first_words(_CASE.sub("", message, count=1)) or name, message)
    return None
