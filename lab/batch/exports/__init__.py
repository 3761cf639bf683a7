"""SUBMISSIONS in any of the forms `lab batch` reads: a folder of student folders (today's
layout, lab.batch.layout), a Canvas "Download Submissions" zip (canvas.py), a Gradescope
"Export Submissions" zip (gradescope_export.py), or any of them as a zip or unpacked folder.

The kind is found from the entries' names: a submission_metadata.yml at the top (or one folder
down) is Gradescope's; a flat folder (files, no folders) with a file named as Canvas names
submitted files is Canvas's; anything else is a folder layout. `--from` overrides the guess. A zip of a folder
layout is unpacked (its kernel files only; the other files as empty stand-ins, so they are
listed as today) into the batch's work folder and read there.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from enum import StrEnum
from pathlib import Path

from lab.batch.exports.archive import (
    DIR,
    FILE,
    LINK,
    OTHER,
    Export,
    ExportError,
    litter,
    open_export,
)
from lab.batch.exports.canvas import looks_like_canvas, read_canvas
from lab.batch.exports.gradescope_export import METADATA, find_metadata, read_gradescope
from lab.batch.exports.materialize import copy_kernel, placeholder
from lab.batch.exports.naming import could_be_kernel
from lab.batch.intake import take_in
from lab.batch.layout import MACOS_FOLDER, Layout, NotGraded, scan, student_sort_key


class InputKind(StrEnum):
    FOLDERS = "folders"
    CANVAS = "canvas"
    GRADESCOPE = "gradescope"


KINDS = tuple(k.value for k in InputKind)


def _visible(names: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    return [(n, d) for n, d in names if not n.startswith(".") and n != MACOS_FOLDER]


def _kind_of(top: list[tuple[str, bool]], below: list[tuple[str, bool]]) -> tuple[InputKind, str]:
    """The kind, and the folder its entries lie in, from the names (name, is_folder) at the top
    and, where the top is one folder and nothing else, inside it."""
    top = _visible(top)
    if any(n == METADATA and not d for n, d in top):
        return InputKind.GRADESCOPE, ""
    wrapper = top[0][0] if len(top) == 1 and top[0][1] else ""
    inner = _visible(below) if wrapper else []
    if wrapper and any(n == METADATA and not d for n, d in inner):
        return InputKind.GRADESCOPE, wrapper
    for names, root in ((top, ""), (inner, wrapper)):
        files = [n for n, d in names if not d]
        if files and not any(d for _, d in names) and looks_like_canvas(files):
            return InputKind.CANVAS, root
    return InputKind.FOLDERS, ""


def _listing(folder: Path) -> list[tuple[str, bool]]:
    try:
        with os.scandir(folder) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return []


def detect_folder(root: Path) -> tuple[InputKind, str]:
    """A folder's kind, from its top (and a lone subfolder's) names only: a large folder layout
    is not walked to find out."""
    top = _listing(root)
    visible = _visible(top)
    below = _listing(root / visible[0][0]) if len(visible) == 1 and visible[0][1] else []
    return _kind_of(top, below)


def detect_export(export: Export) -> tuple[InputKind, str]:
    top = [(e.name, e.kind == DIR) for e in export.children("")]
    visible = _visible(top)
    below = ([(e.name, e.kind == DIR) for e in export.children(visible[0][0])]
             if len(visible) == 1 and visible[0][1] else [])
    kind, root = _kind_of(top, below)
    if kind is InputKind.GRADESCOPE and not root:
        root = find_metadata(export) or ""
    return kind, root


def _unpack_folders(export: Export, work: Path) -> list[NotGraded]:
    """A folder layout from a zip, into WORK: kernel files copied (bounded), other files as
    empty stand-ins, links and other odd entries listed here and left out."""
    listed: list[NotGraded] = []
    for entry in export.entries:
        target = work.joinpath(*entry.parts)
        if entry.kind == DIR:
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind in (LINK, OTHER):
            problem = litter(entry)
            if problem is not None:
                listed.append(problem)
        elif entry.kind == FILE:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not could_be_kernel(entry.name):
                placeholder(target)
            else:
                problem = copy_kernel(export, entry, target)
                if problem is not None:
                    listed.append(problem)
    return listed


def read_class(source: Path, stage_ids: Collection[str], work: Path, kind: str | None = None) -> Layout:
    """The class in SUBMISSIONS (a folder or a zip) of the given kind, or of the kind its names
    say. Files an export maps to (student, stage) are copied into WORK, an empty folder that
    must outlive the grading; so is each file of a folder layout, opened once without following
    links (lab.batch.intake). Raises LayoutError (ExportError among them) with a one-line reason."""
    wanted = InputKind(kind) if kind else None
    if source.is_dir():
        found, root = detect_folder(source)
        chosen = wanted or found
        if chosen is InputKind.FOLDERS:
            return take_in(scan(source, stage_ids), work)
        if wanted is not None and wanted is not found:
            root = ""
        export: Export = open_export(source)
    else:
        if not source.exists():
            return scan(source, stage_ids)  # the folder layout's own "no such folder"
        export = open_export(source)
        found, root = detect_export(export)
        chosen = wanted or found
        if wanted is not None and wanted is not found:
            root = (find_metadata(export) or "") if wanted is InputKind.GRADESCOPE else ""
    try:
        if chosen is InputKind.GRADESCOPE:
            return read_gradescope(export, root, stage_ids, work)
        if chosen is InputKind.CANVAS:
            return read_canvas(export, root, stage_ids, work)
        listed = _unpack_folders(export, work)
        layout = scan(work, stage_ids)
        skipped = sorted([*export.refused, *listed, *layout.not_graded], key=lambda n: student_sort_key(n.path))
        return Layout(work, layout.students, layout.submissions, tuple(skipped), kind=InputKind.FOLDERS.value)
    finally:
        export.close()


__all__ = ["KINDS", "ExportError", "InputKind", "detect_export", "detect_folder", "read_class"]
