"""`lab grade` on kernels and paths that carry hostile text: what reaches the terminal, the
Markdown and HTML feedback and the JSON result hides nothing and renders as text (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.cli import app
from tests.conftest import targets
from tests.hostile import dangerous_html, markdown_to_html, parse_html, raw_characters

runner = CliRunner()
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")
ROOT = Path(__file__).resolve().parents[2]
STAGE = "reduce_interleaved"
FOLDER = "\x1b]0;pwned\x07 \x1b[2J \x9b31m \u202eevil abc\x08\x08\x08xyz <img src=x onerror=alert(1)> [x](javascript:alert(1))"
HOSTILE = "\x1b[2J\x1b]0;pwned\x07 \x9b31m \u202e ``` [x](javascript:alert(1)) {{ 7*7 }} =cmd|' /C calc'!A0"
SIGNATURE = "__global float *out, __global const float *in, int n"


def lab(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def submission(tmp_path: Path, text: str, name: str = f"{STAGE}.cl") -> Path:
    path = tmp_path / FOLDER / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_terminal_clean(output: str) -> None:
    assert "Traceback" not in output
    assert not raw_characters(output.replace("\n", " ")), output


def assert_markdown_renders_as_text(path: Path) -> str:
    md = path.read_text(encoding="utf-8")
    assert not raw_characters(md.replace("\n", " "))
    assert not dangerous_html(markdown_to_html(md)), md
    return md


@needs_opencl
def test_an_error_directive_quoting_a_script_is_text_in_the_feedback(tmp_path):
    path = submission(tmp_path, f"#error <script>alert(1)</script> {HOSTILE}\n"
                                f"__kernel void reduce({SIGNATURE}) {{}}\n")
    report, result_json = tmp_path / "feedback.md", tmp_path / "result.json"
    result = lab("grade", STAGE, path, "--report", report, "--json", result_json, "--no-timing")
    assert result.exit_code == 1, result.output
    assert_terminal_clean(result.output)
    md = assert_markdown_renders_as_text(report)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md  # the message in the table, escaped
    assert parse_html(markdown_to_html(md)).tags.count("pre") == 1  # the compiler output, one block
    written = result_json.read_text(encoding="utf-8")
    assert not raw_characters(written.replace("\n", " "))
    assert "<script>alert(1)</script>" in json.loads(written)["checks"][0]["message"]  # the data is exact


@needs_opencl
def test_a_signature_message_quoting_hostile_parameters(tmp_path):
    path = submission(tmp_path, f"__kernel void reduce(__global float *out {HOSTILE} <script>, "
                                f"__global const float *in, int n) {{}}\n")
    for report in (tmp_path / "feedback.md", tmp_path / "feedback.html"):
        result = lab("grade", STAGE, path, "--report", report, "--no-timing")
        assert result.exit_code == 1, result.output
        assert_terminal_clean(result.output)
        assert "takes (" in result.output.replace("\n", " ")
    assert_markdown_renders_as_text(tmp_path / "feedback.md")
    page = (tmp_path / "feedback.html").read_text(encoding="utf-8")
    assert "script" not in parse_html(page).tags and not raw_characters(page.replace("\n", " "))


@needs_opencl
def test_a_divergent_barrier_message_quoting_hostile_code(tmp_path):
    source = (ROOT / "reference" / STAGE / "solution.cl").read_text(encoding="utf-8")
    store = "    if (t == 0)\n        out[get_group_id(0)] = partialSum[0];"
    assert store in source, "the reference kernel changed shape: update this test"
    hostile = HOSTILE.replace('"', "'").replace("\\", "/")
    path = submission(tmp_path, source.replace(store, (
        f'    if (t == 0 && "{hostile} <script>"[0]) {{\n'
        "        barrier(CLK_LOCAL_MEM_FENCE);\n        out[get_group_id(0)] = partialSum[0];\n    }")))
    report = tmp_path / "feedback.md"
    result = lab("grade", STAGE, path, "--report", report, "--no-timing", "--time-limit", "5")
    assert result.exit_code == 1, result.output
    assert_terminal_clean(result.output)
    assert_markdown_renders_as_text(report)


def test_an_error_naming_a_hostile_path_is_one_clean_line(tmp_path):
    missing = tmp_path / FOLDER / "[bold]missing\x1b[2J.cl"
    result = lab("grade", STAGE, missing)
    assert result.exit_code == 2, result.output
    assert_terminal_clean(result.output)
    assert "[bold]missing\\x1b[2J.cl: no such file" in result.output.replace("\n", "")
