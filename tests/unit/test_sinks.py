"""grader.course.sinks: every sink function fed the same hostile strings, each holding its guarantee; and
the outputs built from a report whose every text is hostile."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from grader.backends.base import KernelResources
from grader.course.sinks import (
    for_csv_cell,
    for_html,
    for_json,
    for_markdown,
    for_markdown_code,
    for_markdown_inline_code,
    for_path_component,
    for_regex,
    for_regex_replacement,
    for_terminal,
    for_text,
)
from grader.feedback import TEMPLATES, render_html, render_json, render_markdown
from grader.gradescope import gradescope_results
from grader.report import Check, DeviceShown, Report
from grader.results import FailureKind, SanitizerFinding, SanitizerResult
from grader.terminal import render
from lab.batch.gradebook import render_gradebook
from lab.batch.html import environment
from lab.batch.layout import NotGraded
from lab.batch.not_graded import render_not_graded_csv, render_not_graded_json
from tests.hostile import (
    HOSTILE,
    dangerous_html,
    formula_cells,
    markdown_to_html,
    parse_html,
    raw_characters,
)

IDS = [repr(s)[:40] for s in HOSTILE]


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_every_invisible_or_control_character_is_shown_as_an_escape():
    """Against the running Python's Unicode database: Cc but tab and newline, Cf but ZWNJ and
    ZWJ, Zl, Zp and Cs are all escaped (the pattern in grader.course.sinks is written out by hand)."""
    kept = {"\t", "\n", "\u200c", "\u200d"}
    missed = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
              if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Cs") and chr(c) not in kept
              and for_text(chr(c)) == chr(c)]
    assert not missed


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_text_shows_every_control_character(text):
    shown = for_text(text)
    assert not raw_characters(shown)
    assert for_text("tab\tand\nnewline stay; ZWJ \u200d too") == "tab\tand\nnewline stay; ZWJ \u200d too"
    assert for_text("\x1b[2J\r\udcff\u202e") == "\\x1b[2J\\r\\xff\\u202e"


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_terminal_prints_as_written_with_no_escape_sequence(text):
    for terminal in (False, True):
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, color_system="truecolor" if terminal else None,
                          width=100_000, highlight=False, emoji=False)
        console.print(f"[bold]{for_terminal(text)}[/bold]", soft_wrap=True)
        console.print(Text(for_text(text), style="red"), soft_wrap=True)
        printed = out.getvalue()
        own = re.sub(r"\x1b\[[0-9;]*m", "", printed)  # rich's own styles, only on a terminal
        assert "\x1b" not in own and not raw_characters(own)
        if not terminal:  # the markup is escaped: the text comes out exactly as for_text shows it
            shown = for_text(text).expandtabs(8)  # rich expands tabs
            assert printed == shown + "\n" + shown + "\n"


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_csv_cell_is_never_a_formula_and_has_no_control(text):
    cell = for_csv_cell(text)
    assert not raw_characters(cell) and not re.search(r"[\t\r\n]", cell)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow([cell, "7"])
    rows = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert rows == [[cell, "7"]] and not formula_cells(rows)
    if text.lstrip(" \u00a0").startswith(("=", "+", "-", "@")):  # a leading tab or CR is shown as \\t, \\r
        assert cell.startswith("'")


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_markdown_renders_as_the_text_itself(text):
    md = for_markdown(text)
    assert "\n" not in md and not raw_characters(md)
    for where in ("{}", "- {}", "| a | b |\n|---|---|\n| x | {} |", "**Where to look:** {}"):
        html = markdown_to_html(where.format(md))
        assert not dangerous_html(html), html
        assert parse_html(html).tags == parse_html(markdown_to_html(where.format("x"))).tags, html
    rendered = "".join(parse_html(markdown_to_html(md)).text)
    assert one_line(rendered) == one_line(for_text(text.replace("\r", " ").replace("\x0b", " ").replace("\x0c", " ")))


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_markdown_code_cannot_be_closed_early(text):
    block = for_markdown_code(text)
    html = markdown_to_html(f"before\n\n{block}\n\nafter <b>x</b>")
    parsed = parse_html(html)
    assert parsed.tags.count("pre") == 1 and not dangerous_html(html) and not raw_characters(block)
    code = html[html.index("<code>") + len("<code>"):html.index("</code></pre>")]
    assert parse_html(code).text == [] or "".join(parse_html(code).text).rstrip("\n") == \
        for_text(text.replace("\r\n", "\n")).strip("\n")
    span = for_markdown_inline_code(text)
    html = markdown_to_html(f"file {span} here")
    assert parse_html(html).tags.count("code") == (1 if span else 0) and not dangerous_html(html)


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_html_is_text_only(text):
    escaped = for_html(text)
    parsed = parse_html(f"<p title=\"{escaped}\">{escaped}</p>")
    assert parsed.tags == ["p"] and parsed.attributes == [("title", for_text(text))]
    assert "".join(parsed.text) == for_text(text) and not raw_characters(escaped)


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_json_round_trips_and_hides_nothing(text):
    data = {"name": text, text: [text, 1]} if text else {"name": text}
    written = for_json(data)
    assert json.loads(written) == data
    assert not raw_characters(written.replace("\n", " "))


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_regex_matches_the_text_and_inserts_it_as_written(text):
    assert re.fullmatch(for_regex(text), text, re.DOTALL)
    assert re.compile("PLACE").sub(for_regex_replacement(text), "a PLACE b") == f"a {text} b"


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_for_path_component_stays_in_its_folder(tmp_path, text):
    name = for_path_component(text)
    assert name and name not in (".", "..") and not name.startswith(".")
    assert "/" not in name and "\x00" not in name and not raw_characters(name)
    assert len(name.encode("utf-8", "surrogateescape")) <= 255
    path = tmp_path / name
    assert path.parent == tmp_path and path.resolve().parent == tmp_path.resolve()
    path.mkdir()  # a real folder can be made of it


def test_for_path_component_keeps_safe_names_and_never_merges_two():
    for name in ("amara", "Jean-Luc O'Neil", "名前", "a b", "x~1"):
        assert for_path_component(name) == name
    names = [*HOSTILE, "a\x1b", "a%1B", "a\\x1b", "100%", "100%25"]
    assert len({for_path_component(n) for n in names}) == len(set(names))


def test_a_very_long_string_takes_linear_time():
    text = ("<\x1b`_*[" * 200_000)
    started = time.monotonic()
    for sink in (for_text, for_terminal, for_csv_cell, for_markdown, for_markdown_code, for_html, for_json):
        sink(text)
    assert time.monotonic() - started < 10


# A report whose every text field is hostile, through the real renderers.

def hostile_report(text: str) -> Report:
    checks = [Check("compiles", "failed", f"compile error: {text}", 0, 10, failure=FailureKind.COMPILE_ERROR),
              Check("correct", "skipped", text, 0, 90)]
    return Report(assignment="reduce_interleaved", title="t", concept=text, backend="opencl",
                  device=DeviceShown(text, "cpu"), file=f"{text}/reduce_interleaved.cl", status="failed",
                  score=0, max_score=100, checks=checks, performance=None,
                  resources={text: KernelResources(registers=1, shared_bytes=0, spill_bytes=0)},
                  notes=[text], flags=[text], hints={"compile": text},
                  sections={"sanitizer": SanitizerResult((SanitizerFinding("memcheck", (text,), text),))},
                  compile_log=f"error: {text}\n{text}", output_tail=text, seed=1, grader_version="3")


HOSTILE_REPORTS = [hostile_report("\n".join(HOSTILE[:-1])), hostile_report(HOSTILE[-1])]


@pytest.mark.parametrize("report", HOSTILE_REPORTS, ids=["all", "long"])
def test_feedback_markdown_renders_no_html_and_hides_nothing(report):
    md = render_markdown(report)
    html = markdown_to_html(md)
    assert not dangerous_html(html) and not raw_characters(md)
    if "{{ 7*7 }}" in report.concept:  # a template is not run on the values it shows
        assert "49" not in md and "{{ 7\\*7 }}" in md and "{% raw %}" in md
    assert parse_html(html).tags.count("pre") == 1  # the compiler output stays one block
    # Gradescope's output is that same Markdown; the tests' outputs are plain text
    results = gradescope_results(report)
    assert results["output"] == md and results["output_format"] == "md"
    assert all(not raw_characters(t["output"]) for t in results["tests"])


@pytest.mark.parametrize("report", HOSTILE_REPORTS, ids=["all", "long"])
def test_feedback_html_and_json_and_terminal(report):
    html = render_html(report)
    parsed = parse_html(html)
    assert "script" not in parsed.tags and "img" not in parsed.tags and not raw_characters(html)
    assert not [k for k, _ in parsed.attributes if k.startswith("on")]
    written = render_json(report)
    assert json.loads(written)["checks"][0]["message"] == report.checks[0].message
    assert not raw_characters(written.replace("\n", " "))
    out = io.StringIO()
    render(report, Console(file=out, width=120, highlight=False, emoji=False))
    assert not raw_characters(out.getvalue().replace("\n", " "))


def test_class_files_hide_nothing_and_run_no_formula():
    students = [s for s in HOSTILE if s]
    gradebook = list(csv.reader(io.StringIO(render_gradebook(students, ["reduce_interleaved"], []))))
    assert not formula_cells(gradebook) and not raw_characters(str(gradebook))
    items = [NotGraded(s, s, s) for s in HOSTILE]
    not_graded = list(csv.reader(io.StringIO(render_not_graded_csv(items))))
    assert not formula_cells(not_graded) and not raw_characters(str(not_graded))
    assert len(not_graded) == len(HOSTILE) + 1
    data = render_not_graded_json(items)
    assert [n["path"] for n in json.loads(data)] == list(HOSTILE) and not raw_characters(data.replace("\n", " "))


def test_every_html_template_escapes_and_marks_nothing_safe_but_the_chart():
    for template in sorted(TEMPLATES.glob("*.html.j2")):
        marked = re.findall(r"\{\{[^}]*\|\s*safe\b[^}]*\}\}", template.read_text(encoding="utf-8"))
        # the charts are SVG built by lab.batch.charts / concept_chart and grader.mismatch_view,
        # which escape every text they draw (test_the_chart_escapes_its_title below;
        # tests/batch/test_summary_counters.py: hostile names through the concept chart)
        assert marked in ([], ["{{ chart | safe }}"], ["{{ mismatch.svg() | safe }}"],
                          ["{{ chart | safe }}", "{{ concept_charts[st.stage] | safe }}"]), (template.name, marked)
    env = environment()
    assert env.autoescape is True and env.finalize is not None
    page = env.from_string("{{ x }}|{{ n }}").render(x=HOSTILE[0] + "<b>", n=3)
    assert page == "\\x1b[2J\\x1b[H&lt;b&gt;|3"


def test_the_chart_escapes_its_title():
    from lab.batch.charts import speedup_histogram

    svg = speedup_histogram([1.0, 2.0], title="\x1b[2J<script>alert(1)</script>")
    assert "<script" not in svg and "\x1b" not in svg and "&lt;script&gt;" in svg


def test_templates_are_the_ones_checked():
    # similarity.html.j2: tests/batch/test_similarity.py renders it with hostile names and kernels
    assert {p.name for p in Path(TEMPLATES).glob("*.j2")} == {"batch_summary.html.j2", "report.html.j2",
                                                              "report.md.j2", "similarity.html.j2"}


def test_the_mismatch_picture_escapes_its_legend():
    from grader.course.mismatch_picture import MismatchPicture
    from grader.mismatch_view import MismatchView

    view = MismatchView(MismatchPicture("<b>", (1, 2), (1, 1), (".x",)), "\x1b[2J<script>", None)
    svg = view.svg()
    assert "<script" not in svg and "<b>" not in svg and "\x1b" not in svg and "&lt;script&gt;" in svg
