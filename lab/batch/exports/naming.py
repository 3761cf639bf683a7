"""What an export's file is for: `<stage>.cu` or `<stage>.cl`, as in a folder layout."""

from __future__ import annotations

import os
import re
from collections.abc import Collection

from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.catalog import close_names
from lab.batch.layout import NOT_A_KERNEL_FILE, UNKNOWN_STAGE, NotGraded, kernel_file

# Canvas renames a file uploaded again under a name its owner already used: name-1.cl, name-2.cl
# ... and, past 7 tries, name-<uuid>.cl (Attachment.make_unique_filename).
_RENAMED = re.compile(r"-(?:\d+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


def kernel_stage(name: str, stage_ids: Collection[str], where: str,
                 renamed: bool = False) -> tuple[str, BackendKind] | NotGraded:
    """(stage, backend's row) of a kernel file named `name`, or why it is not one. `renamed`: also
    read `stage-1.cl` as `stage.cl` (Canvas's renaming of a file submitted again)."""
    stem, suffix = os.path.splitext(name)
    kind = kernel_file(name)
    if kind is None:
        return NotGraded(where, NOT_A_KERNEL_FILE, f"{where}: only {registry.stage_file_list()} files are graded")
    if stem not in stage_ids and renamed:
        base = _RENAMED.sub("", stem)
        if base in stage_ids:
            stem = base
    if stem not in stage_ids:
        close = close_names(stem, stage_ids)
        hint = f" (did you mean {close[0]}{suffix}?)" if close else ""
        return NotGraded(where, UNKNOWN_STAGE, f"{where}: {stem!r} is not a stage{hint}")
    return stem, kind


def could_be_kernel(name: str) -> bool:
    """Whether `name` ends in a backend's suffix (any letter case)."""
    return os.path.splitext(name)[1].lower() in registry.suffixes()
