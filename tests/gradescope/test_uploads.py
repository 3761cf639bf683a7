"""Which uploaded file is graded for which stage, and results.json for several stages: no device."""

from __future__ import annotations

import os

from grader.backends import registry
from grader.course.checks.source_checks import MAX_BYTES
from grader.report import ERROR, FAILED, PASSED, PENDING, Check, DeviceShown, Report
from lab.autograder.config import AutograderConfig, ConfigError, load_config
from lab.autograder.results import failure_results, upload_results
from lab.autograder.uploads import MAX_ENTRIES, SHOWN_IGNORED, scan_upload, take_in

STAGES = ("reduce_interleaved", "reduce_sequential")


def files(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("__kernel void reduce() {}\n")
    return root


def test_files_named_for_their_stage_are_found_at_the_top(tmp_path):
    files(tmp_path, "reduce_interleaved.cl", "reduce_sequential.cu", "README.md")
    upload = scan_upload(tmp_path, STAGES)
    assert {s: f.shown for s, f in upload.found.items()} == {
        "reduce_interleaved": "reduce_interleaved.cl", "reduce_sequential": "reduce_sequential.cu"}
    assert upload.missing == {}
    assert upload.ignored == (f"README.md: not a kernel file ({registry.suffix_list()})",)


def test_a_kernel_file_in_a_folder_is_not_graded_as_lab_batch_would_not(tmp_path):
    files(tmp_path, "reduce_interleaved.cl", "hw3/reduce_sequential.cl")
    upload = scan_upload(tmp_path, STAGES)
    assert list(upload.found) == ["reduce_interleaved"]
    assert upload.missing["reduce_sequential"] == (
        "no file named reduce_sequential.cu or reduce_sequential.cl was uploaded at the top of the upload; "
        "hw3/reduce_sequential.cl is inside a folder: upload the file itself")
    assert upload.ignored == ("hw3/reduce_sequential.cl: inside a folder, so not graded (upload "
                              "reduce_sequential.cl itself, not a folder holding it)",)


def test_a_misnamed_file_says_what_to_rename_it_to(tmp_path):
    files(tmp_path, "mine.cl")
    upload = scan_upload(tmp_path, STAGES[:1])
    assert upload.found == {}
    assert upload.missing["reduce_interleaved"] == ("no file named reduce_interleaved.cu or reduce_interleaved.cl "
                                                    "was uploaded; rename mine.cl to reduce_interleaved.cl")
    assert upload.ignored == ("mine.cl: not named for a stage of this assignment",)


def test_a_name_close_to_a_stage_gets_a_hint(tmp_path):
    files(tmp_path, "Reduce_Interleaved.cl", "reduce_sequental.cl")
    upload = scan_upload(tmp_path, STAGES)
    assert upload.found == {}
    assert "did you mean reduce_interleaved.cl?" in upload.ignored[0]
    assert "did you mean reduce_sequential.cl?" in upload.ignored[1]
    assert "kernel files found: Reduce_Interleaved.cl, reduce_sequental.cl" in upload.missing["reduce_sequential"]


def test_two_files_for_one_stage_grade_neither(tmp_path):
    files(tmp_path, "reduce_interleaved.cl", "reduce_interleaved.cu")
    upload = scan_upload(tmp_path, STAGES[:1])
    assert upload.found == {}
    assert upload.missing["reduce_interleaved"] == ("reduce_interleaved.cl and reduce_interleaved.cu are all for "
                                                    "stage reduce_interleaved: upload only the one to be graded")


def test_an_empty_upload_says_what_was_expected(tmp_path):
    upload = scan_upload(tmp_path, STAGES[:1])
    assert upload.missing["reduce_interleaved"] == ("the upload is empty: expected reduce_interleaved.cu or "
                                                    "reduce_interleaved.cl")


def test_hidden_files_macos_metadata_and_links_are_never_graded(tmp_path):
    files(tmp_path, ".git/reduce_interleaved.cl", "__MACOSX/reduce_interleaved.cl", ".reduce_interleaved.cl",
          "elsewhere/kernel.txt")
    os.symlink(tmp_path / "elsewhere" / "kernel.txt", tmp_path / "reduce_interleaved.cl")
    upload = scan_upload(tmp_path, STAGES[:1])
    assert upload.found == {}
    assert "reduce_interleaved.cl: a symbolic link, not graded (upload the file itself)" in upload.ignored


def test_a_large_upload_is_cut_short_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr("lab.autograder.uploads.MAX_ENTRIES", 30)
    files(tmp_path, *(f"notes/{n:03}.txt" for n in range(40)))
    upload = scan_upload(tmp_path, STAGES[:1])
    assert len(upload.ignored) == SHOWN_IGNORED + 2
    assert upload.ignored[-2] == "and 19 more files not graded"
    assert "more than 30 files and folders" in upload.ignored[-1]
    assert MAX_ENTRIES >= 1000


def report(stage: str, status, score, checks) -> Report:
    return Report(assignment=stage, title=stage, concept="", backend="opencl", device=DeviceShown("cpu", "cpu"),
                  file=f"{stage}.cl", status=status, score=score, max_score=sum(c.max_points for c in checks),
                  checks=checks, performance=None, duration_s=1.4)


def test_each_upload_is_read_once_into_the_graders_own_folder(tmp_path):
    """Issue 25: the files are read before any student code runs; a link put there later is not
    followed, a file changed later is graded as it was, a sparse giant is refused by its size."""
    upload_folder = files(tmp_path / "submission", "reduce_interleaved.cl", "reduce_sequential.cl")
    secret = tmp_path / "private.cl"
    secret.write_text("the autograder's own\n")
    upload = scan_upload(upload_folder, STAGES)
    (upload_folder / "reduce_sequential.cl").unlink()
    (upload_folder / "reduce_sequential.cl").symlink_to(secret)
    taken = take_in(upload, upload_folder, tmp_path / "work")
    assert "became a symbolic link" in taken.missing["reduce_sequential"]
    (copy,) = taken.found.values()
    assert copy.shown == "reduce_interleaved.cl" and tmp_path / "work" in copy.path.parents
    (upload_folder / "reduce_interleaved.cl").write_text("changed later\n")
    assert copy.path.read_text() == "__kernel void reduce() {}\n"
    os.truncate(upload_folder / "reduce_interleaved.cl", 12 << 30)
    (giant,) = take_in(scan_upload(upload_folder, STAGES), upload_folder, tmp_path / "work2").found.values()
    assert giant.path.stat().st_size == MAX_BYTES + 1

def test_several_stages_make_one_results_json_and_an_ungraded_one_counts_nothing():
    graded = report("reduce_sequential", PENDING, 70, [Check("compiles", PASSED, "compiles", 10, 10),
                                                       Check("correct", PASSED, "correct", 60, 60),
                                                       Check("fast", PENDING, "speed is graded on a GPU", 0, 30)])
    ungraded = report("reduce_interleaved", ERROR, None, [Check("compiles", ERROR, "no device", 0, 10)])
    results = upload_results([ungraded, graded], ["notes.txt: not a kernel file"])
    assert results["score"] == 70
    assert [t["number"] for t in results["tests"]] == ["1.1", "2.1", "2.2", "2.3"]
    assert "score" not in results["tests"][0]
    fast = results["tests"][-1]
    assert not {"status", "score", "max_score"} & set(fast) and "pending: 30 points" in fast["name"]
    assert sum(t.get("max_score", 0) for t in results["tests"]) == 70  # what Gradescope graded: all of it
    assert "notes.txt: not a kernel file" in results["output"]
    assert results["extra_data"]["not_graded"] == ["notes.txt: not a kernel file"]


def test_one_stage_is_gradescope_results_with_the_upload_notes_first():
    one = report("reduce_interleaved", FAILED, 10, [Check("compiles", PASSED, "compiles", 10, 10),
                                                     Check("correct", FAILED, "wrong", 0, 90)])
    results = upload_results([one], ["=cmd|' /C calc'!A0.txt: not a kernel file"])
    assert results["score"] == 10
    assert results["output"].index("Not graded in your upload") < results["output"].index("reduce_interleaved")
    assert "\\|" in results["output"]  # student text as Markdown text


def test_an_ungraded_upload_alone_has_no_score():
    ungraded = report("reduce_interleaved", ERROR, None, [Check("compiles", ERROR, "no device", 0, 10)])
    assert "score" not in upload_results([ungraded], [])
    assert "score" not in failure_results("broken")
    assert failure_results("broken")["tests"][0]["status"] == "failed"


def test_the_config_round_trips_and_a_bad_one_is_one_line(tmp_path):
    path = tmp_path / "lab-autograder.json"
    config = AutograderConfig(STAGES, "0.1.0", "4")
    path.write_text(config.to_json())
    assert load_config(path) == config
    for text in ("{", "[]", '{"format": 1, "stages": []}', '{"format": 9, "stages": ["a"]}'):
        path.write_text(text)
        try:
            load_config(path)
        except ConfigError as error:
            assert "\n" not in str(error)
        else:
            raise AssertionError(f"{text!r} was accepted")


def test_lab_gradescope_says_the_points_gradescope_grades(tmp_path):
    from typer.testing import CliRunner

    from lab.cli import app

    wheel = tmp_path / "gpu_teaching_lab-0-py3-none-any.whl"
    wheel.write_bytes(b"stands in for the lab's wheel")
    result = CliRunner().invoke(app, ["gradescope", "reduce_interleaved", "reduce_sequential", "-o",
                                      str(tmp_path / "a.zip"), "--wheel", str(wheel)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "the assignment's points on Gradescope: 170 (compiles and correct; the 30 points of fast" in text
