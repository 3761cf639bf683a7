"""`lab batch` on a class of two students whose folder names, file names and kernels carry hostile
text (terminal escapes, spreadsheet formulas, HTML, Markdown, bidi overrides): nothing of it
reaches the terminal, gradebook.csv, not_graded.csv/json, summary.html, feedback.md/html or
results.json raw (issue 14, items 4 to 6)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.cli import app
from tests.conftest import targets
from tests.hostile import dangerous_html, formula_cells, markdown_to_html, parse_html, raw_characters

OPENCL = [t for t in targets() if t.backend == "opencl"]
pytestmark = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")

STAGE = "reduce_interleaved"
# Folder names may hold anything but "/" and NUL.
COMPILES_NOT = (" =1+1 \x1b[2J\x1b]0;pwned\x07 \u202egnp.exe <img src=x onerror=alert(1)> "
                "[x](javascript:alert(1)) {{ 7*7 }} {% raw %}")
CUDA_ONLY = "-2+3 \x9b31m ok\rEVIL\x08 `` ``` <script>alert(1)<\\script> $(rm -rf ~) \\d @SUM(A1)"
HOSTILE_TEXT = ("<script>alert(1)</script> </code></pre> \x1b[2J\x1b]0;pwned\x07 \x9b31m \u202e "
                "``` [x](javascript:alert(1)) {{ 7*7 }} =cmd|' /C calc'!A0")
NOT_GRADED_FILES = {  # path under SUBMISSIONS -> folder it is in
    "\t=1 \x1b]0;pwned\x07.cl": None,
    "+1 \u202e<script>.txt": None,
    "=cmd|' -C calc'!A0 \x1b[2J.txt": CUDA_ONLY,
}


def error_kernel() -> str:
    """A kernel whose compiler error quotes the hostile text (and a line of backticks)."""
    return (f"#error {HOSTILE_TEXT}\n```````\n"
            "__kernel void reduce(__global float *out, __global const float *in, int n) {}\n")


def signature_kernel() -> str:
    """A CUDA kernel whose parameters (quoted in the signature message) carry the hostile text."""
    return f'extern "C" __global__ void reduce(float *out {HOSTILE_TEXT}, const float *in, int n) {{}}\n'


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[Path, Path, object]:
    root = tmp_path_factory.mktemp("hostile") / "submissions"
    (root / COMPILES_NOT).mkdir(parents=True)
    (root / COMPILES_NOT / f"{STAGE}.cl").write_text(error_kernel(), encoding="utf-8")
    (root / CUDA_ONLY).mkdir()
    (root / CUDA_ONLY / f"{STAGE}.cu").write_text(signature_kernel(), encoding="utf-8")
    for name, folder in NOT_GRADED_FILES.items():
        (root / (folder or "") / name).write_text("not a kernel", encoding="utf-8")
    out = root.parent / "results"
    result = CliRunner().invoke(app, ["batch", "run", str(root), "--out", str(out), "--no-timing",
                                      "--time-limit", "5", "--jobs", "1"])
    return root, out, result


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def compile_error_folder(out: Path) -> Path:
    """The results of the student whose kernel does not compile (the other has no CUDA device here)."""
    found = [p.parent for p in out.glob(f"*/{STAGE}/result.json")
             if json.loads(read(p))["checks"][0].get("failure") == "compile_error"]
    assert len(found) == 1, list(out.rglob("*"))
    return found[0]


def test_the_terminal_gets_no_escape_sequence(batch):
    _, _, result = batch
    assert result.exit_code in (0, 3), result.output  # 3: no CUDA device for the .cu file here
    assert "Traceback" not in result.output
    assert not raw_characters(result.output.replace("\n", " ")), result.output
    if result.exit_code == 3:  # the line naming the submission that could not be graded
        assert "\\x9b31m" in result.output.replace("\n", "")


def test_gradebook_and_not_graded_run_no_formula_and_hide_nothing(batch):
    root, out, _ = batch
    gradebook = list(csv.reader(io.StringIO(read(out / "gradebook.csv"))))
    assert len(gradebook) == 3 and gradebook[1][0].startswith("'") and gradebook[2][0].startswith("'")
    assert not formula_cells(gradebook) and not raw_characters(read(out / "gradebook.csv").replace("\r\n", " "))
    not_graded = list(csv.reader(io.StringIO(read(out / "not_graded.csv"))))
    assert len(not_graded) == 1 + len(NOT_GRADED_FILES)
    assert not formula_cells(not_graded) and not raw_characters(read(out / "not_graded.csv").replace("\r\n", " "))
    listed = json.loads(read(out / "not_graded.json"))
    expected = {f"{folder}/{name}" if folder else name for name, folder in NOT_GRADED_FILES.items()}
    assert {n["path"] for n in listed} == expected  # the data itself is exact
    assert not raw_characters(read(out / "not_graded.json").replace("\n", " "))


def test_summary_html_has_no_markup_of_the_students(batch):
    _, out, _ = batch
    page = read(out / "summary.html")
    parsed = parse_html(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert "&lt;script&gt;" in page  # the compile error's message, shown as one of the class's reasons
    assert not [k for k, _ in parsed.attributes if k.startswith("on")]
    assert not raw_characters(page.replace("\n", " "))


def test_feedback_and_gradescope_render_as_text(batch):
    _, out, _ = batch
    folder = compile_error_folder(out)
    md = read(folder / "feedback.md")
    assert not raw_characters(md.replace("\n", " ")) and not dangerous_html(markdown_to_html(md))
    assert "&lt;script&gt;" in md and parse_html(markdown_to_html(md)).tags.count("pre") == 1
    page = read(folder / "feedback.html")
    assert "script" not in parse_html(page).tags and not raw_characters(page.replace("\n", " "))
    text = read(folder / "results.json")
    assert not raw_characters(text.replace("\n", " "))
    results = json.loads(text)
    assert results["output_format"] == "md" and results["output"] == md
    assert all(not raw_characters(t["output"]) for t in results["tests"])
    data = json.loads(read(folder / "result.json"))  # the record keeps the exact text, escaped in the file
    assert data["status"] == "failed" and COMPILES_NOT in data["file"]
    assert not raw_characters(read(folder / "result.json").replace("\n", " "))


def test_result_folders_stay_inside_and_hide_nothing(batch):
    _, out, _ = batch
    for path in out.rglob("*"):
        assert out.resolve() in path.resolve().parents and not raw_characters(path.name), path
    assert len(list(out.glob(f"*/{STAGE}/result.json"))) == 2


def test_feedback_names_the_file_inside_submissions_not_the_instructors_folders(batch):
    root, out, _ = batch
    for result in out.glob(f"*/{STAGE}/result.json"):
        folder = result.parent
        for name in ("result.json", "feedback.md", "feedback.html", "results.json"):
            if (folder / name).exists():
                assert str(root) not in read(folder / name), f"{folder.name}/{name} shows {root}"
        assert json.loads(read(result))["file"].endswith(f"/{STAGE}.cl") or json.loads(read(result))["file"].endswith(f"/{STAGE}.cu")
