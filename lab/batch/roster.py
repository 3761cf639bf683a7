"""`--roster FILE`: who each student of the class is in the LMS the grades go to.

Two forms are read:

- the lab's own roster, a CSV with a header naming any of these columns (letter case, spaces
  and `_` do not matter): folder, name, canvas_id, sis_user_id, sis_login_id, section, email,
  id_number, username. Every column but name and section identifies a student, so no two rows
  may share a value in it. Any other column (notes, a grade) is not read: Roster.ignored_columns
  names them, for the command to say once.
- a gradebook exported from Canvas (Grades > Export): its first columns are Student, ID, SIS
  User ID, SIS Login ID (Integration ID), Section; its "Points Possible" row, Canvas's test
  student ("Student, Test") and its muted/manual-posting row are skipped, and its assignment
  columns, "Name (id)", tell the Canvas format which assignment a stage goes to.

A student of the class (a folder, or a student of an LMS export) is matched to a row by, in
order, the first of these that any row fits: the folder column; the export's own ids (Canvas
user ID to canvas_id; Gradescope email to email, SID to id_number or sis_user_id); and, for a
folder layout, a folder named after any of the row's ids. A row's folder, where it names another
folder, does not keep the export's ids from matching it. What does not match is a warning, never
an error: a student with no row, a row with no student, a student two rows fit.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from lab.batch.layout import StudentIdentity, student_sort_key

MAX_ROSTER_BYTES = 16 << 20

LAB, CANVAS_EXPORT = "lab", "canvas-export"

# Canvas's gradebook: the student columns (GradebookImporter::GRADEBOOK_IMPORTER_RESERVED_NAMES)
# and the computed ones an import ignores (its NON_ASSIGNMENT_COLUMN_HEADERS, matched as parts).
CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Root Account",
                          "Section")
CANVAS_COMPUTED = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points",
                   "Final Grade", "Override Score", "Override Grade", "Override Status")
CANVAS_TEST_STUDENT = "Student, Test"
_TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z")  # Canvas's Assignment.title_and_id

# Warnings (kinds).
NOT_IN_ROSTER = "not in the roster"
NO_SUBMISSION = "in the roster, no submission"
AMBIGUOUS = "fits more than one roster row"
SHARED_ROW = "a roster row another student fits too"


class RosterError(ValueError):
    """The roster cannot be used; the message says why in one line."""


@dataclass(frozen=True, kw_only=True)
class LmsIdentity:
    """How the LMS knows a student: the name and the ids its grade imports match on."""

    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    id_number: str = ""
    username: str = ""


IDENTITY_FIELDS = tuple(f.name for f in fields(LmsIdentity))


@dataclass(frozen=True, kw_only=True)
class RosterEntry(LmsIdentity):
    """One row of the roster: a student folder and how the LMS knows that student."""

    line: int  # in the file, for messages
    folder: str = ""


COLUMNS = ("folder", *IDENTITY_FIELDS)
ID_COLUMNS = ("folder", "canvas_id", "sis_user_id", "sis_login_id", "email", "id_number", "username")
_FOLDED = ("email", "sis_login_id", "username")  # compared without letter case


@dataclass(frozen=True)
class Roster:
    path: Path
    kind: str  # LAB | CANVAS_EXPORT
    entries: tuple[RosterEntry, ...]
    canvas_assignments: tuple[tuple[str, str], ...] = ()  # (title, id) of a Canvas export's columns
    ignored_columns: tuple[str, ...] = ()  # the lab roster's columns it does not read, as the header names them


@dataclass(frozen=True)
class RosterWarning:
    kind: str  # one of the warning kinds above
    who: str  # the student, or "roster line N"
    detail: str


@dataclass(frozen=True)
class RosterMatch:
    by_student: Mapping[str, RosterEntry] = field(default_factory=dict)
    warnings: tuple[RosterWarning, ...] = ()


def _column_key(header: str) -> str:
    return re.sub(r"[\s_]+", "_", header.strip().lower())


def _read_rows(path: Path) -> list[list[str]]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_ROSTER_BYTES + 1)
    except FileNotFoundError as error:
        raise RosterError(f"--roster {path}: no such file") from error
    except IsADirectoryError as error:
        raise RosterError(f"--roster {path}: a folder, not a CSV file") from error
    except OSError as error:
        raise RosterError(f"--roster {path}: cannot be read ({error.strerror or error})") from error
    if len(raw) > MAX_ROSTER_BYTES:
        raise RosterError(f"--roster {path}: over {MAX_ROSTER_BYTES >> 20} MiB; is it a roster?")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RosterError(f"--roster {path}: not UTF-8 text (save it as CSV UTF-8)") from error
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise RosterError(f"--roster {path}: not a CSV file that can be read ({error})") from error
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise RosterError(f"--roster {path}: empty; it needs a header row and one row per student")
    return rows


def _is_canvas_export(header: list[str]) -> bool:
    # As Canvas's importer tells its own header: "Student" first, "ID" second.
    return len(header) > 3 and header[0].strip() == "Student" and header[1].strip() == "ID"


def _check_unique(path: Path, entries: list[RosterEntry]) -> None:
    for column in ID_COLUMNS:
        seen: dict[str, int] = {}
        for entry in entries:
            value = getattr(entry, column)
            if not value:
                continue
            key = value.casefold() if column in _FOLDED else value
            if key in seen:
                raise RosterError(f"--roster {path}: line {entry.line} has {column} {value!r}, as line {seen[key]} "
                                  "does; each student once")
            seen[key] = entry.line


def _lab_roster(path: Path, rows: list[list[str]]) -> Roster:
    header = [_column_key(h) for h in rows[0]]
    ignored = tuple(rows[0][i].strip() for i, h in enumerate(header) if h and h not in COLUMNS)
    header = [h if h in COLUMNS else "" for h in header]  # a column it does not know is not read
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise RosterError(f"--roster {path}: column {repeated[0]!r} twice")
    if not any(h in ID_COLUMNS for h in header):
        not_read = f" ({', '.join(repr(c) for c in ignored)} not read)" if ignored else ""
        raise RosterError(f"--roster {path}: no column to match students by{not_read}; give folder or one of "
                          f"{', '.join(c for c in ID_COLUMNS if c != 'folder')}")
    entries = []
    for number, row in enumerate(rows[1:], 2):
        if any(cell.strip() for cell in row[len(header):]):  # empty cells past the header are a spreadsheet's
            raise RosterError(f"--roster {path}: line {number} has {len(row)} cells, the header {len(header)}")
        values = {h: row[i].strip() for i, h in enumerate(header) if h and i < len(row)}
        entry = RosterEntry(line=number, **values)
        if not any(getattr(entry, c) for c in ID_COLUMNS):
            raise RosterError(f"--roster {path}: line {number} names no student (every id column is empty)")
        entries.append(entry)
    _check_unique(path, entries)
    return Roster(path, LAB, tuple(entries), ignored_columns=ignored)


def _canvas_export(path: Path, rows: list[list[str]]) -> Roster:
    header = [h.strip() for h in rows[0]]
    where = {name: header.index(name) for name in CANVAS_STUDENT_COLUMNS if name in header}
    if "Section" not in where:
        raise RosterError(f"--roster {path}: a Canvas gradebook with no Section column; export it again from "
                          "Canvas's Grades page")
    assignments = []
    for title in header[where["Section"] + 1:]:
        match = _TITLE_AND_ID.match(title)
        if match and not any(part in title for part in CANVAS_COMPUTED):
            assignments.append((match.group(1), match.group(2)))

    def cell(row: list[str], name: str) -> str:
        i = where.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    entries = []
    for number, row in enumerate(rows[1:], 2):
        first = row[0].strip() if row else ""
        if "Points Possible" in first or first == CANVAS_TEST_STUDENT:
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*|\(read only\))?\s*", c, re.IGNORECASE) for c in row):
            continue
        entry = RosterEntry(line=number, name=first, canvas_id=cell(row, "ID"), sis_user_id=cell(row, "SIS User ID"),
                            sis_login_id=cell(row, "SIS Login ID"), section=cell(row, "Section"))
        if not (entry.canvas_id or entry.sis_user_id or entry.sis_login_id):
            raise RosterError(f"--roster {path}: line {number} of the Canvas gradebook has no ID")
        entries.append(entry)
    _check_unique(path, entries)
    return Roster(path, CANVAS_EXPORT, tuple(entries), tuple(assignments))


def load_roster(path: Path) -> Roster:
    """Raises RosterError with a one-line reason."""
    rows = _read_rows(path)
    if _is_canvas_export(rows[0]):
        return _canvas_export(path, rows)
    return _lab_roster(path, rows)


def _fits_by_folder(entry: RosterEntry, student: str) -> bool:
    return bool(entry.folder) and entry.folder == student


def _fits_by_export_ids(entry: RosterEntry, identity: StudentIdentity | None) -> bool:
    if identity is None:
        return False
    if identity.canvas_id and identity.canvas_id == entry.canvas_id:
        return True
    if identity.email and entry.email and identity.email.casefold() == entry.email.casefold():
        return True
    return bool(identity.sid) and identity.sid in (entry.id_number, entry.sis_user_id)


def _fits_by_folder_name(entry: RosterEntry, student: str) -> bool:
    """A folder named after one of the row's ids (a row with a folder of its own is matched by it)."""
    if entry.folder:
        return False
    folded = student.casefold()
    return (student in (entry.canvas_id, entry.sis_user_id, entry.id_number)
            or folded in (entry.sis_login_id.casefold(), entry.email.casefold(), entry.username.casefold()))


def _fitting(roster: Roster, student: str, identity: StudentIdentity | None,
             by_folder_name: bool) -> list[RosterEntry]:
    """The rows that fit `student` by the first way of matching that any row fits (see above)."""
    ways = [lambda e: _fits_by_folder(e, student), lambda e: _fits_by_export_ids(e, identity)]
    if by_folder_name:
        ways.append(lambda e: _fits_by_folder_name(e, student))
    for fits in ways:
        found = [e for e in roster.entries if fits(e)]
        if found:
            return found
    return []


def match_roster(roster: Roster, students: Sequence[str], identities: Mapping[str, StudentIdentity]) -> RosterMatch:
    """Each student's roster row, and the warnings. `identities`: from an LMS export (empty for
    a folder layout, whose folder names are then matched to the rows' ids)."""
    by_folder_name = not identities
    matches: dict[str, RosterEntry] = {}
    warnings: list[RosterWarning] = []
    claimed: dict[int, list[str]] = {}
    for student in students:
        fitting = _fitting(roster, student, identities.get(student), by_folder_name)
        if not fitting:
            warnings.append(RosterWarning(NOT_IN_ROSTER, student, f"{student}: no row of {roster.path.name} fits"))
        elif len(fitting) > 1:
            lines = ", ".join(str(e.line) for e in fitting)
            warnings.append(RosterWarning(AMBIGUOUS, student, f"{student}: lines {lines} of {roster.path.name} all "
                                          "fit; left out of the LMS gradebooks"))
        else:
            claimed.setdefault(fitting[0].line, []).append(student)
    for line, who in claimed.items():
        entry = next(e for e in roster.entries if e.line == line)
        if len(who) > 1:
            for student in who:
                warnings.append(RosterWarning(SHARED_ROW, student, f"{student}: line {line} of {roster.path.name} fits "
                                              f"{', '.join(who)}; left out of the LMS gradebooks"))
        else:
            matches[who[0]] = entry
    for entry in roster.entries:
        if entry.line not in claimed:
            label = entry.name or entry.folder or entry.email or entry.sis_login_id or entry.canvas_id
            warnings.append(RosterWarning(NO_SUBMISSION, f"roster line {entry.line}",
                                          f"line {entry.line} ({label}): no submission of this student was found"))
    warnings.sort(key=lambda w: (w.kind, student_sort_key(w.who)))
    return RosterMatch(matches, tuple(warnings))
