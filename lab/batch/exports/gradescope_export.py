"""Gradescope's "Export Submissions" zip of a programming assignment:

    assignment_<id>_export/
        submission_metadata.yml
        submission_<id>/          one folder per submission, the files as the student uploaded them
        ...

submission_metadata.yml maps each folder name to its record (Ruby symbols as keys, so each key
starts with a colon): `:submitters` (a list, more than one for a group submission, each with
`:name`, `:sid`, `:email`), `:created_at`, `:score`, `:status`, `:results` (the autograder's
output) and `:history` (the student's earlier submissions, by `:id`; their files are not in the
export). The export holds each student's active submission only.

A student is named by their email (their SID where no email is given): every submitter of a
group submission is graded on its files. A file `<stage>.cu` or `<stage>.cl` directly in a
submission folder is that stage's submission; where one student has two submissions with a file
for the same stage (two exports of one class put together), the later `:created_at` is graded.
Gradescope's export does not mark lateness.

PyYAML reads the metadata (with its safe loader: no tag builds an object). The `:results` block
holds each autograder's output, arbitrary text in YAML's every quoting style, which a hand-made
parser for a subset would have to get exactly right to find the next student's record.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.backends.registry import BackendKind
from lab.batch.exports.archive import (
    DIR,
    MAX_METADATA_BYTES,
    Entry,
    EntryError,
    Export,
    ExportError,
    litter,
)
from lab.batch.exports.materialize import Pick, place_all
from lab.batch.exports.naming import kernel_stage
from lab.batch.layout import (
    BOTH_BACKENDS,
    NESTED_FOLDER,
    TOP_LEVEL_FILE,
    Layout,
    NotGraded,
    StudentIdentity,
    student_sort_key,
)

KIND = "gradescope"
METADATA = "submission_metadata.yml"

NOT_IN_METADATA = "a folder submission_metadata.yml does not name"
EARLIER_SUBMISSION = "an earlier submission of a student (Gradescope's history; the active one is graded)"
NO_SUBMITTER = "a submission with no student named in submission_metadata.yml"
NO_FOLDER = "a submission named in submission_metadata.yml with no folder in the export"
SUPERSEDED = "an earlier submission for a stage the student submitted again (the latest one is graded)"


def _loader() -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        """The safe loader; a tag it does not know (Ruby's !ruby/object:BigDecimal for a score)
        gives the plain value under it instead of an error."""

    def plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_mapping(node)

    Loader.add_multi_constructor("!", plain)
    Loader.add_multi_constructor("tag:", plain)
    return Loader


def load_metadata(text: str, where: str) -> dict[str, dict[str, Any]]:
    """submission_metadata.yml as {folder: record}. Raises ExportError with the reason."""
    import yaml

    try:
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ExportError(f"{where}: not YAML that can be read{at}: "
                          f"{getattr(error, 'problem', None) or type(error).__name__}") from error
    except RecursionError as error:
        raise ExportError(f"{where}: nested too deeply to be read") from error
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in data.items()):
        raise ExportError(f"{where}: not Gradescope's submission metadata (a map of submission folders)")
    return data


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _when(value: Any) -> float:
    """:created_at as a number to compare (0 where it is missing or unreadable)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    try:
        return datetime.fromisoformat(str(value).replace(" Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _submitters(record: dict[str, Any]) -> list[StudentIdentity]:
    found = []
    for person in record.get(":submitters") or []:
        if isinstance(person, dict):
            found.append(StudentIdentity(name=_text(person.get(":name")), sid=_text(person.get(":sid")),
                                         email=_text(person.get(":email"))))
    return found


def student_key(person: StudentIdentity, folder: str, n: int) -> str:
    if person.email:
        return person.email.lower()
    if person.sid:
        return person.sid
    return f"{folder}-{n}"


def find_metadata(export: Export) -> str | None:
    """The folder ("" for the top) holding submission_metadata.yml, at the top or one folder down."""
    for entry in export.entries:
        if entry.name == METADATA and entry.path.count("/") <= 1:
            return entry.path.rsplit("/", 1)[0] if "/" in entry.path else ""
    return None


def read_gradescope(export: Export, root: str, stage_ids: Collection[str], work: Path) -> Layout:
    meta_path = f"{root}/{METADATA}" if root else METADATA
    entry = next((e for e in export.entries if e.path == meta_path), None)
    if entry is None:
        raise ExportError(f"{export.source}: no {METADATA}, so not a Gradescope export")
    if entry.size > MAX_METADATA_BYTES:
        raise ExportError(f"{export.source}: {meta_path} is over {MAX_METADATA_BYTES >> 20} MiB")
    try:
        raw = export.read(entry, MAX_METADATA_BYTES)
    except EntryError as error:
        raise ExportError(f"{export.source}: {error}") from error
    if len(raw) > MAX_METADATA_BYTES:
        raise ExportError(f"{export.source}: {meta_path} is over {MAX_METADATA_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ExportError(f"{export.source}: {meta_path} is not UTF-8") from error
    records = load_metadata(text, f"{export.source}: {meta_path}")
    earlier = {str(h.get(":id")) for r in records.values() for h in (r.get(":history") or [])
               if isinstance(h, dict) and h.get(":id") is not None}

    skipped: list[NotGraded] = list(export.refused)
    students: dict[str, StudentIdentity] = {}
    candidates: dict[tuple[str, str], list[tuple[tuple[float, str], Pick]]] = {}
    seen_folders: set[str] = set()
    for item in export.children(root):
        if item.path == meta_path:
            continue
        problem = litter(item)
        if problem is not None:
            skipped.append(problem)
            continue
        if item.kind != DIR:
            skipped.append(NotGraded(item.path, TOP_LEVEL_FILE, f"{item.path}: a file beside the submission folders"))
            continue
        folder = item.name
        if folder not in records:
            number = folder.removeprefix("submission_")
            reason = EARLIER_SUBMISSION if number in earlier else NOT_IN_METADATA
            skipped.append(NotGraded(item.shown, reason, f"{item.shown}: {reason}"))
            continue
        seen_folders.add(folder)
        record = records[folder]
        people = _submitters(record)
        if not people:
            skipped.append(NotGraded(item.shown, NO_SUBMITTER, f"{item.shown}: {NO_SUBMITTER}"))
            continue
        keys = []
        for n, person in enumerate(people, 1):
            key = student_key(person, folder, n)
            keys.append(key)
            students.setdefault(key, person)
        when = (_when(record.get(":created_at")), folder)
        by_stage: dict[str, list[tuple[BackendKind, str, Entry]]] = {}  # stage -> (backend, path, file)
        for file in export.children(item.path):
            problem = litter(file)
            if problem is not None:
                skipped.append(problem)
                continue
            if file.kind == DIR:
                count = sum(e.kind == "file" for e in export.under(file.path))
                skipped.append(NotGraded(file.shown, NESTED_FOLDER,
                                         f"{file.shown}: a folder ({count} file{'s' if count != 1 else ''} inside, "
                                         "none graded); kernel files go directly in the submission"))
                continue
            mapped = kernel_stage(file.name, stage_ids, file.path)
            if isinstance(mapped, NotGraded):
                skipped.append(mapped)
                continue
            stage, backend = mapped
            by_stage.setdefault(stage, []).append((backend, file.path, file))
        for stage, files in by_stage.items():
            if len(files) > 1:
                listed = " and ".join(f[1] for f in files)
                for _, path, _ in files:
                    skipped.append(NotGraded(path, BOTH_BACKENDS, f"{listed} are all for stage {stage}; "
                                             "keep only the one to be graded"))
                continue
            backend, _, file = files[0]
            for key in keys:
                candidates.setdefault((key, stage), []).append((when, Pick(key, stage, file, backend)))
    for folder in sorted(set(records) - seen_folders):
        skipped.append(NotGraded(f"{folder}/", NO_FOLDER, f"{folder}/: {NO_FOLDER}"))
        for n, person in enumerate(_submitters(records[folder]), 1):  # a student, with nothing to grade
            students.setdefault(student_key(person, folder, n), person)

    chosen: list[Pick] = []
    for (key, _), options in sorted(candidates.items()):
        options.sort(key=lambda item: item[0])
        last = options[-1][1]
        for _, older in options[:-1]:
            if older.entry.path != last.entry.path:
                skipped.append(NotGraded(older.entry.path, SUPERSEDED,
                                         f"{older.entry.path}: for {key}, {last.entry.path} is later and is graded"))
        chosen.append(last)
    found, problems = place_all(export, chosen, work)
    skipped.extend(problems)
    found.sort(key=lambda s: (student_sort_key(s.student), s.stage))
    unique = sorted(set(skipped), key=lambda n: (student_sort_key(n.path), n.reason, n.detail))
    names = tuple(sorted(students, key=student_sort_key))
    return Layout(work, names, tuple(found), tuple(unique), kind=KIND, identities=students)
