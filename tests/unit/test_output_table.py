"""The output tables (grader.outputs, lab.batch.outputs): each format is one entry, each
entry renders what the writers write, and the writers write exactly the entries asked for.
No device: the reports are built by hand and stand for no kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.course.sinks import RESULTS_FILE_SUFFIXES
from grader.gradescope import gradescope_results
from grader.outputs import (
    FEEDBACK_SUFFIXES,
    GRADESCOPE,
    JSON,
    REPORT_FORMATS,
    TERMINAL,
    feedback_format,
    named,
)
from grader.report import FAILED, PASSED, Check, DeviceShown, Report
from grader.results import FailureKind
from lab.batch.gradebook_formats import GradebookFormat
from lab.batch.keys import batch_options
from lab.batch.layout import scan
from lab.batch.lms_outputs import ROSTER_CHECK, LmsOptions
from lab.batch.outcome import outcome_of
from lab.batch.outputs import CLASS_FILES, RESULT_FILES, write_class_outputs
from lab.batch.roster import load_roster
from lab.batch.store import RESULT, ResultStore, is_temp_file
from lab.batch.stored import BatchInfo, StoredResult
from lab.batch.summary import BatchStats
from tests.conftest import catalog

STAGE = "reduce_interleaved"
NOT_LMS = ("not_graded.csv", "not_graded.json", "gradebook.csv", "similarity.csv", "similarity.html", "summary.html")


def report(student: str = "ann", passed: bool = True) -> Report:
    correct = (Check("correct", PASSED, "correct on 5 shapes", 90, 90) if passed else
               Check("correct", FAILED, "crashed (SIGSEGV) in case 1", 0, 90, {"signal": "SIGSEGV"},
                     FailureKind.CRASH))
    return Report(assignment=STAGE, title="t", concept="c", backend="opencl",
                  device=DeviceShown("Test CPU", "cpu"), file=f"{student}/{STAGE}.cl",
                  status=PASSED if passed else FAILED, score=100 if passed else 10, max_score=100,
                  checks=[Check("compiles", PASSED, "compiles", 10, 10), correct], performance=None,
                  grader_version="1", duration_s=1.0)


def test_each_report_format_is_one_named_entry():
    names = [entry.name for entry in REPORT_FORMATS]
    assert len(set(names)) == len(names)
    assert all(named(name).name == name for name in names)
    with pytest.raises(ValueError, match="not a report format"):
        named("pdf")
    r = report(passed=False)
    assert all(isinstance(entry.render(r), str) and entry.render(r) for entry in REPORT_FORMATS)


def test_the_json_entry_reads_back_and_the_gradescope_entry_is_its_results():
    r = report(passed=False)
    assert Report.from_json(JSON.render(r)) == r
    assert Report.from_json(JSON.render(r)).failure.signal == "SIGSEGV"
    assert json.loads(GRADESCOPE.render(r)) == gradescope_results(r) and GRADESCOPE.render(r).endswith("}\n")


def test_the_terminal_entry_is_plain_text():
    text = TERMINAL.render(report())
    assert "\x1b[" not in text and "score 100 / 100" in text and "opencl on Test CPU (cpu)" in text


@pytest.mark.parametrize("name,format", [("f.html", "html"), ("F.HTM", "html"), ("f.md", "markdown"),
                                         ("f.Markdown", "markdown")])
def test_a_report_file_is_written_in_the_format_of_its_suffix(name, format):
    assert feedback_format(Path(name)).name == format
    assert Path(name).suffix.lower() in FEEDBACK_SUFFIXES


def test_a_report_file_of_another_suffix_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^f\.txt: a report is \.html or \.md$"):
        feedback_format(Path("f.txt"))


def test_every_batch_file_name_is_a_results_file_name_and_its_temporary_file_is_known():
    names = [entry.name for entry in (*RESULT_FILES, *CLASS_FILES)]
    assert len(set(names)) == len(names) and RESULT not in names
    assert all(entry.name.endswith(RESULTS_FILE_SUFFIXES) for entry in CLASS_FILES)
    assert all(is_temp_file(f".{name}.a1B2c3") for name in names)


@pytest.fixture
def graded(tmp_path):
    for student in ("ann", "bob"):
        (tmp_path / "subs" / student).mkdir(parents=True)
        (tmp_path / "subs" / student / f"{STAGE}.cl").write_text(f"// {student}\n", encoding="utf-8")
    layout = scan(tmp_path / "subs", catalog().ids())
    store = ResultStore(tmp_path / "out")
    outcomes = []
    for sub in layout.submissions:
        stored = store.save(sub, report(sub.student, passed=sub.student == "ann"), "key",
                            BatchInfo(sub.student, sub.stage, sub.relative))
        outcomes.append(outcome_of(sub, stored, graded_now=True))
    stats = BatchStats(len(outcomes), len(outcomes), 0, 0, 2.0, 2.0, ("w",), batch_options(timing=False))
    return tmp_path, layout, store, outcomes, stats


def test_each_result_folder_holds_its_entries_and_result_json_reads_back(graded):
    _, layout, store, _, _ = graded
    folder = store.folder(layout.submissions[1])
    r = report("bob", passed=False)
    for entry in RESULT_FILES:
        assert (folder / entry.name).read_text(encoding="utf-8") == entry.format.render(r)
    assert StoredResult.from_json((folder / RESULT).read_text(encoding="utf-8")).report == r


def test_the_class_files_are_the_table_entries_asked_for(graded):
    tmp_path, layout, store, outcomes, stats = graded
    results = write_class_outputs(store, catalog(), layout, outcomes, stats)
    assert results.lms is None
    assert sorted(p.name for p in store.root.glob("*.*")) == sorted(NOT_LMS)
    assert results.outcomes[1].failure is not None and results.outcomes[1].failure.label == "crashed (SIGSEGV)"
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,name,canvas_id,email\nann,Ann A,101,ann@x.edu\n", encoding="utf-8")
    lms = LmsOptions((GradebookFormat.CANVAS, GradebookFormat.MOODLE), roster=load_roster(roster))
    results = write_class_outputs(store, catalog(), layout, outcomes, stats, lms)
    assert results.lms is not None and results.lms.files == ("gradebook_canvas.csv", "gradebook_moodle.csv",
                                                             ROSTER_CHECK)
    assert sorted(p.name for p in store.root.glob("*.*")) == sorted((*NOT_LMS, *results.lms.files))
    canvas = (store.root / "gradebook_canvas.csv").read_text(encoding="utf-8").splitlines()
    assert canvas[2] == "Ann A,101,,,,100" and len(canvas) == 3  # bob: no Canvas id, left out and listed
    check = (store.root / ROSTER_CHECK).read_text(encoding="utf-8")
    assert "left out of gradebook_canvas.csv,bob" in check and "left out of gradebook_moodle.csv,bob" in check
