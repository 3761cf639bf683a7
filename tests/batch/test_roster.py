"""--roster and the gradebooks an LMS imports (--gradebook canvas|moodle): the roster's forms and
its problems (each one line), matching students to rows, and each format's columns as the LMS's
importer reads them. No device needed."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.batch.gradebook import render_gradebook
from lab.batch.gradebook_formats import (
    POINTS_POSSIBLE,
    MoodleIdentifier,
    canvas_headers,
    lms_students,
    parse_canvas_assignments,
    parse_formats,
    render_canvas,
    render_moodle,
)
from lab.batch.layout import StudentIdentity
from lab.batch.outcome import Outcome
from lab.batch.roster import (
    AMBIGUOUS,
    CANVAS_EXPORT,
    NO_SUBMISSION,
    NOT_IN_ROSTER,
    RosterError,
    load_roster,
    match_roster,
)
from lab.cli import app
from tests.batch.classroom import solution, wrong_kernels
from tests.conftest import catalog, targets

A, B = "reduce_interleaved", "reduce_sequential"

# A gradebook as Canvas's Grades > Export writes it: student columns, assignments "Name (id)",
# computed columns, the Points Possible row, a manual-posting row, the test student.
CANVAS_EXPORT_CSV = (
    '"Student","ID","SIS User ID","SIS Login ID","Section","Reduce_Interleaved (4757)","Lab 2 (4766)",'
    '"Current Score","Final Score"\r\n'
    '"    Points Possible","","","","","100","100","(read only)","(read only)"\r\n'
    '"","","","","","Manual Posting","","",""\r\n'
    '"Smith, Ann","101","S-1","asmith","Period 2","90","","",""\r\n'
    '"Jones, Bob","102","S-2","bjones","Period 2","","","",""\r\n'
    '"Student, Test","999","","","Period 2","","","",""\r\n')


def write(tmp_path: Path, text: str, name: str = "roster.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def outcome(student: str, stage: str, score: int | None, status: str = "passed") -> Outcome:
    return Outcome(student, stage, f"{student}/{stage}.cl", status, score, 100, None, None, None, None, False,
                   "Test CPU", "cpu", 1.0, True, {})


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_the_labs_roster_reads_its_columns_in_any_spelling(tmp_path):
    roster = load_roster(write(tmp_path, "Folder,Name,Canvas ID,SIS_User_ID,email,ID Number\n"
                                         "ann,\"Smith, Ann\",101,S-1,ann@x.edu,7\nbob,Bob,,,,\n"))
    assert [e.folder for e in roster.entries] == ["ann", "bob"]
    assert roster.entries[0].canvas_id == "101" and roster.entries[0].id_number == "7"
    assert roster.entries[0].line == 2


def test_a_canvas_gradebook_export_is_a_roster_and_names_the_assignments(tmp_path):
    roster = load_roster(write(tmp_path, CANVAS_EXPORT_CSV))
    assert roster.kind == CANVAS_EXPORT
    assert [(e.name, e.canvas_id, e.sis_login_id, e.section) for e in roster.entries] == [
        ("Smith, Ann", "101", "asmith", "Period 2"), ("Jones, Bob", "102", "bjones", "Period 2")]
    assert roster.canvas_assignments == (("Reduce_Interleaved", "4757"), ("Lab 2", "4766"))


@pytest.mark.parametrize("text, words", [
    (None, "no such file"),
    ("", "empty"),
    ("folder,emial\n,a@x\n", "line 2 names no student"),  # a column it does not know is not read
    ("name,section\nAnn,A\n", "no column to match students by"),
    ("name,emial\nAnn,a@x\n", "no column to match students by ('emial' not read)"),
    ("folder,email\nann,a@x.edu\nbob,A@X.edu\n", "line 3 has email 'A@X.edu', as line 2 does"),
    ("folder,canvas_id\nann,1\nbob,1\n", "line 3 has canvas_id '1'"),
    ("folder,name\n,Ann\n", "line 2 names no student"),
    ("folder,name\nann,Ann,extra\n", "line 2 has 3 cells"),
    ("folder,folder\nann,bob\n", "column 'folder' twice"),
    ('"Student","ID","SIS Login ID","Lab (1)"\n"Ann","1","a",""\n', "no Section column"),
    ('"Student","ID","SIS User ID","SIS Login ID","Section"\n"Ann","1","","","A"\n"Bob","1","","","A"\n',
     "line 3 has canvas_id '1'"),
])
def test_every_roster_problem_is_one_line(tmp_path, text, words):
    path = tmp_path / "missing.csv" if text is None else write(tmp_path, text)
    with pytest.raises(RosterError) as caught:
        load_roster(path)
    message = str(caught.value)
    assert words in message and "\n" not in message, message


def test_columns_the_roster_does_not_know_are_not_read_and_named(tmp_path):
    roster = load_roster(write(tmp_path, "folder,Notes,email,Grade last year,,\nann,\"likes GPUs, a lot\",a@x.edu,B,,\n"
                                         "bob,,b@x.edu,,\n"))
    assert roster.ignored_columns == ("Notes", "Grade last year")
    assert [(e.folder, e.email) for e in roster.entries] == [("ann", "a@x.edu"), ("bob", "b@x.edu")]
    assert load_roster(write(tmp_path, "folder,email\nann,a@x.edu,,\n")).ignored_columns == ()  # empty cells past it


def test_lab_batch_names_the_columns_it_does_not_read_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    write(tmp_path, "folder,notes,email\nann,hi,a@x.edu\n")
    result = CliRunner().invoke(app, ["batch", "run", "subs", "--out", "out", "--roster", "roster.csv", "--backend", "x"])
    assert result.exit_code == 2  # the note comes while the options are read; a bad option still stops it
    assert result.output.count("'notes' not read") == 1 and "unknown column" not in result.output


def test_a_roster_with_folders_matches_an_export_by_the_ids_it_carries(tmp_path):
    roster = load_roster(write(tmp_path, "folder,email,id_number,canvas_id\nann,ann@x.edu,,\nbob,,77,\ncy,,,303\n"))
    identities = {"Smith, Ann": StudentIdentity(email="ANN@x.edu"), "Jones, Bob": StudentIdentity(sid="77"),
                  "cy_303": StudentIdentity(canvas_id="303"), "Nobody": StudentIdentity(email="no@x.edu")}
    match = match_roster(roster, list(identities), identities)
    assert {s: e.folder for s, e in match.by_student.items()} == {"Smith, Ann": "ann", "Jones, Bob": "bob",
                                                                   "cy_303": "cy"}
    assert {(w.kind, w.who) for w in match.warnings} == {(NOT_IN_ROSTER, "Nobody")}
    # the folder column first: a folder it names wins over another row's ids
    roster = load_roster(write(tmp_path, "folder,email\nann,x@x.edu\nzed,ann@x.edu\n"))
    match = match_roster(roster, ["ann"], {"ann": StudentIdentity(email="ann@x.edu")})
    assert match.by_student["ann"].line == 2


def test_a_student_left_out_of_an_lms_gradebook_is_told_the_next_step(tmp_path):
    stages = [catalog().get(A)]
    roster = load_roster(write(tmp_path, "folder,name\nann,Ann\n"))
    people = lms_students(["ann"], {}, match_roster(roster, ["ann"], {}))
    _, left_out = render_canvas(people, stages, [A], [outcome("ann", A, 100)], roster.path.name)
    assert "roster.csv gives none for them: add a canvas_id, sis_user_id or sis_login_id" in left_out[0].detail
    _, left_out = render_moodle(people, stages, [outcome("ann", A, 100)], MoodleIdentifier.USERNAME, "roster.csv")
    assert "roster.csv gives none for them: add a username" in left_out[0].detail
    _, left_out = render_canvas(people, stages, [A], [outcome("ann", A, 100)])
    assert "give --roster with" in left_out[0].detail


def test_a_roster_that_is_not_text_or_is_a_folder_is_one_line(tmp_path):
    with pytest.raises(RosterError, match="not UTF-8"):
        load_roster(tmp_path.joinpath("bin.csv") if tmp_path.joinpath("bin.csv").write_bytes(b"\xff\xfe\x00a,b")
                    else None)
    with pytest.raises(RosterError, match="a folder"):
        load_roster(tmp_path)


def test_students_match_rows_and_what_does_not_match_is_a_warning(tmp_path):
    roster = load_roster(write(tmp_path, "folder,email,sis_login_id\nann,ann@x.edu,\n,cy@x.edu,\n,,dee\n,,ed\n"))
    # a folder layout: by the folder column, else a folder named after an id
    match = match_roster(roster, ["ann", "bob", "cy@X.edu", "DEE"], {})
    assert {s: e.line for s, e in match.by_student.items()} == {"ann": 2, "cy@X.edu": 3, "DEE": 4}
    kinds = {(w.kind, w.who) for w in match.warnings}
    assert kinds == {(NOT_IN_ROSTER, "bob"), (NO_SUBMISSION, "roster line 5")}
    # an export: by the ids it carries
    canvas = load_roster(write(tmp_path, CANVAS_EXPORT_CSV, "canvas.csv"))
    match = match_roster(canvas, ["smithann_101", "anon_xyz"], {"smithann_101": StudentIdentity(canvas_id="101"),
                                                               "anon_xyz": StudentIdentity()})
    assert set(match.by_student) == {"smithann_101"}
    assert {(w.kind, w.who) for w in match.warnings} == {(NOT_IN_ROSTER, "anon_xyz"), (NO_SUBMISSION, "roster line 5")}


def test_a_student_two_rows_fit_is_left_out_with_a_warning(tmp_path):
    roster = load_roster(write(tmp_path, "email,sis_login_id\nann@x.edu,\n,ann@x.edu\n"))
    match = match_roster(roster, ["ann@x.edu"], {})
    assert not match.by_student and AMBIGUOUS in {w.kind for w in match.warnings}


def test_the_canvas_gradebook_has_canvas_columns_and_a_points_possible_row(tmp_path):
    stages = [catalog().get(A), catalog().get(B)]
    roster = load_roster(write(tmp_path, CANVAS_EXPORT_CSV))
    students = ["smithann_101", "jonesbob_102", "anon_x"]
    identities = {"smithann_101": StudentIdentity(canvas_id="101"), "jonesbob_102": StudentIdentity(canvas_id="102"),
                  "anon_x": StudentIdentity()}
    people = lms_students(students, identities, match_roster(roster, students, identities))
    headers, notes = canvas_headers(stages, {B: f"{B} (4766)"}, roster.canvas_assignments)
    assert headers == ["Reduce_Interleaved (4757)", f"{B} (4766)"] and not notes
    outcomes = [outcome("smithann_101", A, 90), outcome("smithann_101", B, 40, "pending"),
                outcome("jonesbob_102", A, None, "error")]
    text, left_out = render_canvas(people, stages, headers, outcomes)
    table = rows(text)
    # Canvas's importer: "Student" then "ID" first; SIS User ID, SIS Login ID; the last student
    # column is Section; a row whose first cell holds "Points Possible" is the points row.
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *headers]
    assert table[1] == [POINTS_POSSIBLE, "", "", "", "", "100", "100"] and "Points Possible" in table[1][0]
    assert table[2] == ["Smith, Ann", "101", "S-1", "asmith", "Period 2", "90", ""]  # pending: empty
    assert table[3] == ["Jones, Bob", "102", "S-2", "bjones", "Period 2", "", ""]  # no grade: empty
    assert len(table) == 4 and [w.who for w in left_out] == ["anon_x"]  # no id: left out, listed
    # no id for a stage: its id as the column's name, and a note
    headers, notes = canvas_headers(stages, {}, ())
    assert headers == [A, B] and [n.who for n in notes] == [A, B]


def test_the_moodle_gradebook_has_one_identifier_and_no_row_without_it():
    stages = [catalog().get(A)]
    people = lms_students(["a", "b", "c"], {"a": StudentIdentity(name="=cmd()", email="a@x.edu", sid="7"),
                                            "b": StudentIdentity(name="Bob", sid="8"), "c": StudentIdentity()}, None)
    outcomes = [outcome("a", A, 100), outcome("b", A, 10, "pending")]
    text, left_out = render_moodle(people, stages, outcomes)
    assert rows(text) == [["Email address", "Full name", A], ["a@x.edu", "'=cmd()", "100"]]
    assert {w.who for w in left_out} == {"b", "c"}
    text, left_out = render_moodle(people, stages, outcomes, MoodleIdentifier.IDNUMBER)
    assert rows(text) == [["ID number", "Full name", A], ["7", "'=cmd()", "100"]]  # b: pending only, no row
    assert {w.who for w in left_out} == {"c"}


def test_the_plain_gradebook_says_pending_and_leaves_it_out_of_the_total():
    text = render_gradebook(["a"], [A, B], [outcome("a", A, 100), outcome("a", B, 40, "pending")])
    assert rows(text) == [["student", A, B, "total"], ["a", "100", "pending", "100"]]
    text = render_gradebook(["a"], [A], [outcome("a", A, 100)], late={("a", A)})
    assert rows(text) == [["student", A, "total", "late"], ["a", "100", "100", A]]


def test_format_and_assignment_options_are_checked():
    assert parse_formats(["canvas,moodle:idnumber"]) == ([*parse_formats(["canvas"])[0], *parse_formats(
        ["moodle"])[0]], MoodleIdentifier.IDNUMBER)
    for bad, words in ((["blackboard"], "not a format"), (["canvas:x"], "only moodle"), (["moodle:sid"], "email")):
        with pytest.raises(ValueError, match=words):
            parse_formats(bad)
    ids = catalog().ids()
    assert parse_canvas_assignments([f"{A}=4757", f"{B}=Lab 2 (4766)"], ids) == {A: f"{A} (4757)", B: "Lab 2 (4766)"}
    for bad, words in ((["nostage=1"], "not a stage"), ([A], "STAGE=ID")):
        with pytest.raises(ValueError, match=words):
            parse_canvas_assignments(bad, ids)


@pytest.mark.parametrize("args, words", [
    (["--roster", "missing.csv"], "no such file"),
    (["--gradebook", "blackboard"], "not a format"),
    (["--from", "moodle"], "--from must be one of folders, canvas, gradescope"),
    (["--canvas-assignment", "x=1"], "not a stage"),
])
def test_lab_batch_says_what_is_wrong_with_an_lms_option_in_one_line(tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    result = CliRunner().invoke(app, ["batch", "run", "subs", "--out", "out", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")
def test_lab_batch_matches_a_roster_with_folders_to_a_gradescope_export_by_email(tmp_path):
    from tests.batch.test_lms_exports import FAST, gradescope_files, make_zip, table
    from tests.batch.test_lms_exports import A as STAGE_A
    from tests.batch.test_lms_exports import B as STAGE_B

    c = catalog()
    source = make_zip(tmp_path / "gs.zip", gradescope_files(solution(c, STAGE_A), wrong_kernels(c, STAGE_B)[0]))
    roster = write(tmp_path, "folder,email,id_number,notes\nann,ANN@example.edu,1001,front row\n"
                             "bob,bob@example.edu,1002,\ncy,cy@example.edu,1003,\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["batch", "run", str(source), "--out", str(out), *FAST, "--roster", str(roster),
                                      "--gradebook", "moodle:idnumber"])
    assert result.exit_code == 0, result.output
    assert result.output.count("'notes' not read") == 1
    moodle = table(out / "gradebook_moodle.csv")
    assert moodle[0][0] == "ID number" and {r[0] for r in moodle[1:]} == {"1001", "1002", "1003"}
    check = table(out / "roster_check.csv")
    assert not [r for r in check[1:] if r[0] == NOT_IN_ROSTER and r[1] != "dee@example.edu"], check
