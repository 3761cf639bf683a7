"""Every format one Report is written in, as one table: each entry a name, the --report file
suffixes that choose it, and a render function from the Report to the text written.

`lab grade` and `lab submit` (lab.cli.written) pick their files' entries here, and the batch
writes each result's files from it (lab.batch.outputs, whose own table holds the class
files: those render a whole class). A new format is a new entry, not a new branch elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.course.sinks import for_json
from grader.feedback import render_html, render_json, render_markdown
from grader.gradescope import gradescope_results
from grader.report import Report
from grader.terminal import render_text


@dataclass(frozen=True)
class ReportFormat:
    name: str
    suffixes: tuple[str, ...]  # the --report file suffixes that choose it, lower case; () for none
    render: Callable[[Report], str]  # the file's whole text


def render_gradescope(report: Report) -> str:
    """Gradescope's autograder results.json for one report (grader.gradescope), as a file."""
    return for_json(gradescope_results(report)) + "\n"


TERMINAL = ReportFormat("terminal", (), render_text)  # what `lab grade` shows, as plain text
MARKDOWN = ReportFormat("markdown", (".md", ".markdown"), render_markdown)
HTML = ReportFormat("html", (".html", ".htm"), render_html)
JSON = ReportFormat("json", (), render_json)  # Report.from_json reads it back
GRADESCOPE = ReportFormat("gradescope", (), render_gradescope)
REPORT_FORMATS = (TERMINAL, HTML, MARKDOWN, JSON, GRADESCOPE)
FEEDBACK_SUFFIXES = tuple(suffix for entry in REPORT_FORMATS for suffix in entry.suffixes)


def named(name: str) -> ReportFormat:
    """The entry named `name`. Raises ValueError naming the formats."""
    for entry in REPORT_FORMATS:
        if entry.name == name:
            return entry
    raise ValueError(f"{name!r} is not a report format; the formats are "
                     f"{', '.join(entry.name for entry in REPORT_FORMATS)}")


def feedback_format(path: Path) -> ReportFormat:
    """The entry `--report PATH` writes, chosen by its suffix. Raises ValueError with one line."""
    suffix = path.suffix.lower()
    for entry in REPORT_FORMATS:
        if suffix in entry.suffixes:
            return entry
    raise ValueError(f"{path}: a report is {' or '.join(e.suffixes[0] for e in REPORT_FORMATS if e.suffixes)}")
