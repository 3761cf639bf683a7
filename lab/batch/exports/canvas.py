"""Canvas's "Download Submissions" zip: one flat folder of files, each named

    <sortable name>[_LATE]_<user id>_<file id>_<original file name>

as Canvas's ContentZipper builds it (lib/content_zipper.rb, instructure/canvas-lms): the
student's sortable name ("Last, First") lowercased with everything but letters, digits and `_`
removed, `LATE` where the submission was late, the student's Canvas user ID, the ID of the
uploaded file (a number Canvas gives each upload, growing with time), and the name the student
gave the file. Under anonymous grading the name is left out and the user ID is `anon_<id>`.
The zip holds each student's latest submission only; a file a student uploaded again under a
name they had used before is renamed by Canvas to `name-1.cl`, `name-2.cl`, ...
(Attachment.make_unique_filename). Text entries and URLs come as `<prefix>_text.html` and
`<prefix>_link.html`.

Each file maps to the student (`<sortable name>_<user id>`, or `anon_<id>`) and to the stage
its original name names (`reduce_sequential-1.cl` is reduce_sequential). Where one student has
several files for one stage, the one uploaded last (the highest file ID) is graded and the
others are listed as superseded. Lateness is Canvas's own LATE mark.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from lab.batch.exports.archive import DIR, FILE, Export, litter
from lab.batch.exports.materialize import Pick, place_all
from lab.batch.exports.naming import kernel_stage
from lab.batch.layout import Layout, NotGraded, StudentIdentity, student_sort_key

KIND = "canvas"

NOT_CANVAS_NAME = "not named the way Canvas names a submitted file"
TEXT_ENTRY = "a text entry or URL submission, not a kernel file"
FOLDER_IN_EXPORT = "a folder inside a Canvas export (Canvas's zip is one flat folder)"
SUPERSEDED = "an earlier file for a stage the student submitted again (the latest one is graded)"

_IDS = re.compile(r"(?=_(\d+)_(\d+)_)")
_ANONYMOUS = re.compile(r"^(?:(?i:late)_)?anon_([A-Za-z0-9]+)_(\d+)_(.+)$")
_LATE = re.compile(r"_late$", re.IGNORECASE)
_TEXT = re.compile(r"^(.+)_(?:text|link)\.html$")
_TEXT_OWNER = re.compile(r"^(.+?)(?:_(?i:late))?_(\d+)_(?:text|link)\.html$")


@dataclass(frozen=True)
class CanvasName:
    """What a file name in Canvas's zip says."""

    student: str  # "<sortable name>_<user id>", or "anon_<id>"
    name: str  # the sortable name as Canvas spelled it ("" when anonymous)
    user_id: str  # "" when anonymous
    file_id: int
    original: str  # the name the student gave the file
    late: bool


def parse_name(filename: str, stage_ids: Collection[str] = ()) -> CanvasName | None:
    """None when `filename` is not named as Canvas names submitted files. A sortable name may
    itself hold `_<digits>`; of the ways to read such a name, the first whose original file
    name is a stage's is taken (else the first)."""
    anonymous = _ANONYMOUS.match(filename)
    if anonymous:
        anon, file_id, original = anonymous.groups()
        late = filename[:5].lower() == "late_"
        return CanvasName(f"anon_{anon}", "", "", int(file_id), original, late)
    readings = []
    for match in _IDS.finditer(filename):
        start = match.start()
        head, user_id, file_id = filename[:start], match.group(1), match.group(2)
        original = filename[start + len(user_id) + len(file_id) + 3:]
        late = bool(_LATE.search(head))
        name = _LATE.sub("", head) if late else head
        if not name or not original:
            continue
        readings.append(CanvasName(f"{name}_{user_id}", name, user_id, int(file_id), original, late))
    if not readings:
        return None
    for reading in readings:
        stem = reading.original.rsplit(".", 1)[0]
        if stem in stage_ids or stem.rsplit("-", 1)[0] in stage_ids:
            return reading
    return readings[0]


def looks_like_canvas(names: list[str]) -> bool:
    """Some name is one Canvas gives a submitted file (the caller checks there is no folder)."""
    return any(parse_name(n) is not None or _TEXT.match(n) for n in names)


def read_canvas(export: Export, root: str, stage_ids: Collection[str], work: Path) -> Layout:
    """The class in a Canvas zip (or its unpacked folder) whose files lie in `root` ("" for the top)."""
    skipped: list[NotGraded] = list(export.refused)
    students: dict[str, StudentIdentity] = {}
    latest_name: dict[str, tuple[int, str]] = {}  # user id -> (file id, student) of its latest file
    picks: dict[tuple[str, str], list[tuple[int, Pick]]] = {}
    for entry in export.children(root):
        problem = litter(entry)
        if problem is not None:
            skipped.append(problem)
            continue
        if entry.kind == DIR:
            count = sum(e.kind == FILE for e in export.under(entry.path))
            skipped.append(NotGraded(entry.shown, FOLDER_IN_EXPORT,
                                     f"{entry.shown}: a folder ({count} file{'s' if count != 1 else ''} inside, "
                                     "none graded)"))
            continue
        parsed = parse_name(entry.name, stage_ids)
        if parsed is None:
            owner = _TEXT_OWNER.match(entry.name)
            if owner:  # a student who submitted, with nothing to grade
                students.setdefault(f"{owner.group(1)}_{owner.group(2)}",
                                    StudentIdentity(name=owner.group(1), canvas_id=owner.group(2)))
            reason = TEXT_ENTRY if _TEXT.match(entry.name) else NOT_CANVAS_NAME
            skipped.append(NotGraded(entry.path, reason, f"{entry.path}: {reason}"))
            continue
        if parsed.user_id:  # one student, one key: the name on their latest file
            seen = latest_name.get(parsed.user_id)
            if seen is None or parsed.file_id > seen[0]:
                latest_name[parsed.user_id] = (parsed.file_id, parsed.student)
        students.setdefault(parsed.student, StudentIdentity(name=parsed.name, canvas_id=parsed.user_id))
        mapped = kernel_stage(parsed.original, stage_ids, entry.path, renamed=True)
        if isinstance(mapped, NotGraded):
            skipped.append(mapped)
            continue
        stage, backend = mapped
        pick = Pick(parsed.student, stage, entry, backend, late=parsed.late)
        picks.setdefault((parsed.user_id or parsed.student, stage), []).append((parsed.file_id, pick))

    # A user ID seen under two sortable names (a renamed student): the name on the latest file.
    key_of = {student: student for student in students}
    for user_id, (_, student) in latest_name.items():
        for other in list(students):
            if other.endswith(f"_{user_id}") and other != student and students[other].canvas_id == user_id:
                key_of[other] = student
                del students[other]
    chosen: list[Pick] = []
    for _, candidates in sorted(picks.items()):
        candidates.sort(key=lambda item: item[0])
        _, last = candidates[-1]
        for file_id, older in candidates[:-1]:
            skipped.append(NotGraded(older.entry.path, SUPERSEDED,
                                     f"{older.entry.path}: file {file_id}; file {candidates[-1][0]} "
                                     f"({last.entry.name}) is later and is graded"))
        chosen.append(Pick(key_of[last.student], last.stage, last.entry, last.backend, last.late))
    found, problems = place_all(export, chosen, work)
    skipped.extend(problems)
    found.sort(key=lambda s: (student_sort_key(s.student), s.stage))
    skipped.sort(key=lambda n: student_sort_key(n.path))
    names = tuple(sorted(students, key=student_sort_key))
    return Layout(work, names, tuple(found), tuple(skipped), kind=KIND, identities=dict(students))
