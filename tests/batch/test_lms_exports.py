"""`lab batch` on LMS exports: Canvas's "Download Submissions" zip and Gradescope's "Export
Submissions" zip, read without trusting them (unsafe names, links, encrypted and duplicated
entries, zip bombs), every file mapped to a student and stage or listed with its reason; and a
small class of each graded end to end on the OpenCL device present (PoCL in CI)."""

from __future__ import annotations

import csv
import io
import os
import stat
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader.course.checks.source_checks import MAX_BYTES
from lab.batch.exports import InputKind, read_class
from lab.batch.exports.archive import (
    DUPLICATE,
    ENCRYPTED,
    UNSAFE_PATH,
    ExportError,
    ZipExport,
)
from lab.batch.exports.canvas import NOT_CANVAS_NAME, SUPERSEDED, TEXT_ENTRY, parse_name
from lab.batch.exports.gradescope_export import (
    EARLIER_SUBMISSION,
    NO_FOLDER,
    NO_SUBMITTER,
    NOT_IN_METADATA,
)
from lab.batch.layout import MACOS_METADATA, NESTED_FOLDER, NOT_A_KERNEL_FILE, SYMLINK, UNKNOWN_STAGE
from lab.batch.similarity import Skip, compare_class
from lab.cli import app
from tests.batch.classroom import solution, wrong_kernels
from tests.conftest import catalog, targets

PROJECT = Path(__file__).resolve().parents[2]
A, B = "reduce_interleaved", "reduce_sequential"
IDS = catalog().ids()
OPENCL = [t for t in targets() if t.backend == "opencl"]
KERNEL_TEXT = "__kernel void k(__global float *x) { x[get_global_id(0)] = 1.0f; }\n"
FAST = ("--no-timing", "--time-limit", "5", "--jobs", "2", "--backend", "opencl")


def make_zip(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def encrypt(source: Path, name: str) -> None:
    """Set an entry's "encrypted" flag in the central directory (zipfile writes none)."""
    data = bytearray(source.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at != -1:
        length = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + length] == name.encode():
            data[at + 8] |= 0x1
        at = data.find(b"PK\x01\x02", at + 4)
    source.write_bytes(bytes(data))


def reasons(layout) -> dict[str, str]:
    return {n.path: n.reason for n in layout.not_graded}


# -- Canvas ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, student, user, file_id, original, late", [
    ("smithann_101_9001_reduce_sequential.cl", "smithann_101", "101", 9001, "reduce_sequential.cl", False),
    ("smithann_LATE_101_9001_reduce_sequential-1.cl", "smithann_101", "101", 9001, "reduce_sequential-1.cl", True),
    ("smithann_late_101_9001_x_2_3_.cl", "smithann_101", "101", 9001, "x_2_3_.cl", True),  # older Canvas: lower case
    ("anon_aB3dE_9001_reduce_sequential.cl", "anon_aB3dE", "", 9001, "reduce_sequential.cl", False),
    ("LATE_anon_aB3dE_9001_k.cl", "anon_aB3dE", "", 9001, "k.cl", True),
    ("o_brien_12_101_9001_reduce_sequential.cl", "o_brien_12_101", "101", 9001, "reduce_sequential.cl", False),
])
def test_canvas_file_names_are_read_as_canvas_writes_them(name, student, user, file_id, original, late):
    parsed = parse_name(name, IDS)
    assert (parsed.student, parsed.user_id, parsed.file_id, parsed.original, parsed.late) == (
        student, user, file_id, original, late)


def test_a_canvas_zip_maps_each_file_to_a_student_and_stage(tmp_path):
    source = make_zip(tmp_path / "subs.zip", {
        f"smithann_101_9001_{A}.cl": "a", f"smithann_101_9002_{B}.cl": "old",
        f"smithann_101_9005_{B}-1.cl": "new", f"jonesbob_LATE_102_9003_{A}.cu": "c",
        "jonesbob_LATE_102_9004_notes.txt": "n", "leecy_103_text.html": "<p>",
        "roeda_104_9006_reduce_sequental.cl": "typo", "README.txt": "x", "__MACOSX/._x": "m",
    })
    layout = read_class(source, IDS, tmp_path / "work")
    assert layout.kind == InputKind.CANVAS and layout.students == ("jonesbob_102", "leecy_103", "roeda_104",
                                                                   "smithann_101")
    got = {(s.student, s.stage): (s.path.read_text(), s.backend, s.late, s.origin) for s in layout.submissions}
    assert got == {("jonesbob_102", A): ("c", "cuda", True, f"jonesbob_LATE_102_9003_{A}.cu"),
                   ("smithann_101", A): ("a", "opencl", False, f"smithann_101_9001_{A}.cl"),
                   ("smithann_101", B): ("new", "opencl", False, f"smithann_101_9005_{B}-1.cl")}
    assert all(s.relative == f"{s.student}/{s.stage}{s.path.suffix}" for s in layout.submissions)
    assert reasons(layout) == {f"smithann_101_9002_{B}.cl": SUPERSEDED, "jonesbob_LATE_102_9004_notes.txt":
                               NOT_A_KERNEL_FILE, "leecy_103_text.html": TEXT_ENTRY,
                               "roeda_104_9006_reduce_sequental.cl": UNKNOWN_STAGE, "README.txt": NOT_CANVAS_NAME,
                               "__MACOSX/": MACOS_METADATA}
    assert layout.identities["smithann_101"].canvas_id == "101" and layout.late == {("jonesbob_102", A)}


def test_unsafe_entries_are_listed_and_nothing_lands_outside_the_work_folder(tmp_path):
    source = tmp_path / "subs.zip"
    make_zip(source, {f"smithann_101_9001_{A}.cl": "a", f"../smithann_101_9002_{B}.cl": "up",
                      f"/etc/smithann_101_9003_{B}.cl": "abs", f"a/../../smithann_101_9004_{B}.cl": "x"})
    with zipfile.ZipFile(source, "a") as zf:
        link = zipfile.ZipInfo(f"smithann_101_9007_{B}.cl")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr(f"jonesbob_102_9008_{A}.cl", "x")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr(f"smithann_101_9001_{A}.cl", "second")
    encrypt(source, f"jonesbob_102_9008_{A}.cl")
    work = tmp_path / "deep" / "work"
    layout = read_class(source, IDS, work, "canvas")
    got = reasons(layout)
    assert got[f"../smithann_101_9002_{B}.cl"] == UNSAFE_PATH and got[f"/etc/smithann_101_9003_{B}.cl"] == UNSAFE_PATH
    assert got[f"a/../../smithann_101_9004_{B}.cl"] == UNSAFE_PATH
    assert got[f"smithann_101_9007_{B}.cl"] == SYMLINK and got[f"jonesbob_102_9008_{A}.cl"] == ENCRYPTED
    assert got[f"smithann_101_9001_{A}.cl"] == DUPLICATE
    assert [(s.student, s.stage, s.path.read_text()) for s in layout.submissions] == [("smithann_101", A, "a")]
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["deep/work/smithann_101/reduce_interleaved.cl", "subs.zip"]


def test_a_zip_bomb_is_never_unpacked(tmp_path):
    big = b"\0" * (64 << 20)  # 64 MiB of zeros: 64 KiB compressed
    source = make_zip(tmp_path / "bomb.zip", {f"smithann_101_9001_{A}.cl": big, "smithann_101_9002_notes.txt": big})
    export = ZipExport(source)
    layout = read_class(source, IDS, tmp_path / "work")
    (sub,) = layout.submissions
    assert sub.path.stat().st_size == MAX_BYTES + 1 and sub.path.stat().st_blocks * 512 < MAX_BYTES  # sparse
    assert export.read_bytes == 0
    too_many = make_zip(tmp_path / "many.zip", {f"s_1_{n}_x.cl": "" for n in range(20_001)})
    with pytest.raises(ExportError, match="more than the 20000"):
        read_class(too_many, IDS, tmp_path / "work2")


def _lie_about_size(source: Path, declared: int) -> None:
    """Make the zip's local and central headers of its one entry declare `declared` bytes."""
    data = bytearray(source.read_bytes())
    for signature, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        header = data.find(signature)
        data[header + at:header + at + 4] = declared.to_bytes(4, "little")
    source.write_bytes(bytes(data))


def test_a_kernel_whose_entry_understates_its_size_is_over_the_limit_as_read(tmp_path):
    source = make_zip(tmp_path / "lie.zip", {f"smithann_101_9001_{A}.cl": b"x" * (MAX_BYTES * 4)})
    _lie_about_size(source, 10)
    export = ZipExport(source)
    (entry,) = [e for e in export.entries if e.kind == "file"]
    assert entry.size == 10
    assert len(export.read(entry, MAX_BYTES)) == MAX_BYTES + 1  # measured as inflated, not as declared
    layout = read_class(source, IDS, tmp_path / "work")
    (sub,) = layout.submissions
    assert sub.path.stat().st_size == MAX_BYTES + 1  # grading says: over the limit


def test_a_kernel_whose_entry_claims_4_gib_costs_nothing(tmp_path):
    """Issue 25: a 1.4 KB Canvas zip whose entry claimed 4 GB took the batch's memory to 4 GB."""
    source = make_zip(tmp_path / "claim.zip", {f"smithann_101_9001_{A}.cl": KERNEL_TEXT})
    _lie_about_size(source, 0xFFFFFFF0)
    assert source.stat().st_size < 2048
    export = ZipExport(source)
    (entry,) = [e for e in export.entries if e.kind == "file"]
    assert entry.size == 0xFFFFFFF0
    assert export.read(entry, MAX_BYTES) == KERNEL_TEXT.encode()  # the data is what it is
    layout = read_class(source, IDS, tmp_path / "work")
    (sub,) = layout.submissions
    assert sub.path.stat().st_size == MAX_BYTES + 1  # it says it is too big: it is refused as that
    assert compare_class(catalog(), layout.submissions).stages[0].skipped == ((sub.relative, Skip.TOO_LARGE),)



# Runs its arguments as a child and writes that child's peak resident memory (KiB) to the file
# named first. A process this test starts directly would count this test process's own peak:
# the child of a vfork records its parent's resident set when it calls exec.
PEAK_OF = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(command: list[str], folder: Path, timeout_s: float) -> tuple[int, str, int]:
    """Run `command`: its exit code, its output (stdout then stderr) and the peak resident memory
    in KiB of it and the children it waited for (os.wait4's account of that one process, taken
    by a small wrapper process: PEAK_OF)."""
    import subprocess
    import sys

    peak = folder / "peak.txt"
    with open(folder / "out.txt", "w+b") as out, open(folder / "err.txt", "w+b") as err:
        child = subprocess.Popen([sys.executable, "-c", PEAK_OF, str(peak), *command], stdout=out, stderr=err,
                                 env={**os.environ, "PYTHONPATH": str(PROJECT)})
        try:
            child.wait(timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        out.seek(0), err.seek(0)
        text = out.read().decode(errors="replace") + err.read().decode(errors="replace")
    return child.returncode, text, int(peak.read_text()) if peak.is_file() else 1 << 30


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")
def test_lab_batch_on_a_zip_claiming_4_gib_stays_small_and_writes_its_summary(tmp_path):
    import sys

    source = make_zip(tmp_path / "claim.zip", {f"smithann_101_9001_{A}.cl": KERNEL_TEXT})
    _lie_about_size(source, 0xFFFFFFF0)
    out = tmp_path / "out"
    code, output, peak_kib = run_measured([sys.executable, "-m", "lab", "batch", "run", str(source), "--out", str(out),
                                           *FAST], tmp_path, timeout_s=300)
    assert code == 0, output
    assert (out / "summary.html").is_file() and "MemoryError" not in output
    assert peak_kib < 1 << 20, f"lab batch (or a child it waited for) reached {peak_kib >> 10} MiB"
    feedback = (out / "smithann_101" / A / "feedback.md").read_text(encoding="utf-8")
    assert "over the 256 KiB limit" in feedback

# -- Gradescope ------------------------------------------------------------------------------

METADATA = """---
submission_1001:
  :submitters:
  - :name: Ann Smith
    :sid: 'S-1'
    :email: Ann@Example.edu
  - :name: Bob Jones
    :sid: 'S-2'
    :email: bob@example.edu
  :created_at: 2024-03-01 10:00:00.000000000 Z
  :score: !ruby/object:BigDecimal 18:0.1e2
  :status: processed
  :results:
    output: |
      submission_2002:
        :submitters: []
    tests: []
  :history:
  - :submitters: []
    :created_at: 2024-02-28 09:00:00.000000000 Z
    :id: 999
submission_1002:
  :submitters:
  - :name: "=HYPERLINK(\\"x\\")"
    :sid: 'S-3'
    :email: cy@example.edu
  :created_at: 2024-03-02 10:00:00.000000000 Z
  :history: []
submission_1003:
  :submitters: []
  :created_at: 2024-03-02 10:00:00.000000000 Z
submission_1004:
  :submitters:
  - :name: Dee
    :sid: ''
    :email: dee@example.edu
"""


def gradescope_files(a: str = "a", b: str = "b") -> dict[str, str]:
    root = "assignment_77_export"
    return {f"{root}/submission_metadata.yml": METADATA, f"{root}/submission_1001/{A}.cl": a,
            f"{root}/submission_1001/README.md": "r", f"{root}/submission_999/{A}.cl": "old",
            f"{root}/submission_1002/{B}.cl": b, f"{root}/submission_1002/src/{A}.cl": "nested",
            f"{root}/submission_1003/{B}.cl": "nobody", f"{root}/submission_5/{B}.cl": "stray"}


def test_a_gradescope_export_grades_every_submitter_of_a_submission(tmp_path):
    source = make_zip(tmp_path / "gs.zip", gradescope_files())
    layout = read_class(source, IDS, tmp_path / "work")
    assert layout.kind == InputKind.GRADESCOPE
    assert layout.students == ("ann@example.edu", "bob@example.edu", "cy@example.edu", "dee@example.edu")
    got = {(s.student, s.stage): s.path.read_text() for s in layout.submissions}
    assert got == {("ann@example.edu", A): "a", ("bob@example.edu", A): "a", ("cy@example.edu", B): "b"}
    root = "assignment_77_export"
    assert reasons(layout) == {
        f"{root}/submission_1001/README.md": NOT_A_KERNEL_FILE, f"{root}/submission_999/": EARLIER_SUBMISSION,
        f"{root}/submission_1002/src/": NESTED_FOLDER, f"{root}/submission_1003/": NO_SUBMITTER,
        f"{root}/submission_5/": NOT_IN_METADATA, "submission_1004/": NO_FOLDER}
    assert layout.identities["ann@example.edu"].name == "Ann Smith" and layout.identities["cy@example.edu"].sid == "S-3"


@pytest.mark.parametrize("metadata, words", [
    ("submission_1: [unclosed\n", "not YAML that can be read (line 2)"),
    ("- a list\n", "not Gradescope's submission metadata"),
    ("!!python/object/apply:os.system ['true']\n", "not Gradescope's submission metadata"),
])
def test_unreadable_gradescope_metadata_is_one_line(tmp_path, metadata, words):
    source = make_zip(tmp_path / "gs.zip", {"submission_metadata.yml": metadata, f"submission_1/{A}.cl": "a"})
    with pytest.raises(ExportError) as caught:
        read_class(source, IDS, tmp_path / "work")
    assert words in str(caught.value) and "\n" not in str(caught.value)


# -- the kind of input ----------------------------------------------------------------------

def test_the_kind_is_found_from_the_names_and_from_overrides_it(tmp_path):
    folders = tmp_path / "folders"
    (folders / "ann").mkdir(parents=True)
    (folders / "ann" / f"{A}.cl").write_text("a")
    assert read_class(folders, IDS, tmp_path / "w1").kind == InputKind.FOLDERS
    canvas = tmp_path / "canvas"  # an unpacked Canvas zip
    canvas.mkdir()
    (canvas / f"smithann_101_9001_{A}.cl").write_text("a")
    (canvas / ".DS_Store").write_text("x")
    layout = read_class(canvas, IDS, tmp_path / "w2")
    assert layout.kind == InputKind.CANVAS and [s.student for s in layout.submissions] == ["smithann_101"]
    forced = read_class(canvas, IDS, tmp_path / "w3", "folders")  # as folders: a stray file at the top
    assert forced.kind == InputKind.FOLDERS and not forced.submissions
    zipped = make_zip(tmp_path / "folders.zip", {f"ann/{A}.cl": "a", "ann/notes.txt": "n", f"{B}.cl": "top"})
    layout = read_class(zipped, IDS, tmp_path / "w4")
    assert layout.kind == InputKind.FOLDERS and [(s.student, s.path.read_text()) for s in layout.submissions] == [
        ("ann", "a")]
    assert set(reasons(layout)) == {"ann/notes.txt", f"{B}.cl"}
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ExportError, match="a file, but not a zip"):
        read_class(tmp_path / "notes.txt", IDS, tmp_path / "w5")


# -- end to end -----------------------------------------------------------------------------

def lab(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def table(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")
def test_lab_batch_grades_a_canvas_zip_into_a_gradebook_canvas_imports(tmp_path):
    c = catalog()
    source = make_zip(tmp_path / "canvas.zip", {
        f"smithann_101_9001_{A}.cl": solution(c, A), f"smithann_101_9002_{B}.cl": wrong_kernels(c, B)[0],
        f"smithann_101_9005_{B}-1.cl": solution(c, B), f"jonesbob_LATE_102_9003_{A}.cl": wrong_kernels(c, A)[0],
        "jonesbob_LATE_102_9004_notes.txt": "hi"})
    roster = tmp_path / "canvas_export.csv"
    roster.write_text('"Student","ID","SIS User ID","SIS Login ID","Section","reduce_sequential (4766)"\r\n'
                      '"    Points Possible","","","","","100"\r\n"Smith, Ann","101","S-1","asmith","P2",""\r\n'
                      '"Jones, Bob","102","S-2","bjones","P2",""\r\n"Lee, Cy","103","S-3","clee","P2",""\r\n')
    out = tmp_path / "out"
    result = lab("batch", "run", source, "--out", out, *FAST, "--roster", roster, "--gradebook", "canvas",
                 "--canvas-assignment", f"{A}=4757")
    assert result.exit_code == 0, result.output
    assert "read as a Canvas submissions export" in result.output and "1 submission marked late" in result.output
    plain = table(out / "gradebook.csv")
    assert plain[0] == ["student", A, B, "total", "late"]
    bob, ann = plain[1], plain[2]
    assert bob[0] == "jonesbob_102" and bob[-1] == A and ann[0] == "smithann_101" and ann[-1] == ""
    assert ann[2] in ("100", "pending")  # the resubmitted, correct file is the one graded
    canvas = table(out / "gradebook_canvas.csv")
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A} (4757)",
                         "reduce_sequential (4766)"]
    assert canvas[1][0].strip() == "Points Possible" and canvas[1][5:] == [str(c.get(A).max_score),
                                                                          str(c.get(B).max_score)]
    assert [r[:5] for r in canvas[2:]] == [["Jones, Bob", "102", "S-2", "bjones", "P2"],
                                           ["Smith, Ann", "101", "S-1", "asmith", "P2"]]
    assert canvas[3][6] == ("" if ann[2] == "pending" else ann[2])
    not_graded = {r[0]: r[1] for r in table(out / "not_graded.csv")[1:]}
    assert not_graded == {"jonesbob_LATE_102_9004_notes.txt": NOT_A_KERNEL_FILE, f"smithann_101_9002_{B}.cl": SUPERSEDED}
    check = table(out / "roster_check.csv")
    assert any("Lee, Cy" in r[2] for r in check[1:])
    feedback = (out / "smithann_101" / B / "feedback.md").read_text(encoding="utf-8")
    assert f"smithann_101/{B}.cl" in feedback and "lab-batch-input" not in feedback
    again = lab("batch", "run", source, "--out", out, *FAST)
    assert again.exit_code == 0 and "0 to grade, 3 up to date" in again.output


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")
def test_lab_batch_grades_a_gradescope_export_into_a_gradebook_moodle_imports(tmp_path):
    c = catalog()
    source = make_zip(tmp_path / "gs.zip", gradescope_files(solution(c, A), wrong_kernels(c, B)[0]))
    out = tmp_path / "out"
    result = lab("batch", "run", source, "--out", out, *FAST, "--gradebook", "moodle")
    assert result.exit_code == 0, result.output
    assert "read as a Gradescope export" in result.output
    moodle = table(out / "gradebook_moodle.csv")
    assert moodle[0] == ["Email address", "Full name", A, B]
    got = {r[0]: r[1:] for r in moodle[1:]}
    assert set(got) == {"Ann@Example.edu", "bob@example.edu", "cy@example.edu"}  # dee: no grade, no row
    assert got["cy@example.edu"][0] == "'=HYPERLINK(\"x\")" and got["cy@example.edu"][2] not in ("", "100")
    assert got["Ann@Example.edu"][1] in ("100", "")
    plain = table(out / "gradebook.csv")
    assert [r[0] for r in plain[1:]] == ["ann@example.edu", "bob@example.edu", "cy@example.edu", "dee@example.edu"]
