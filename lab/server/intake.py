"""What an upload must be before it is stored: checked as `lab grade` checks a file.

A known stage; a name ending in a kernel suffix (.cu or .cl), which picks the backend; at most
the size limit; UTF-8 kernel text (not empty, not binary). Each refusal is one line a student
can act on, with the HTTP status that fits it. The source's own checks (its kernel's name and
parameters) are the grading's first step, as in `lab grade`: they give a failed report."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from grader.backends import registry
from grader.course.catalog import Catalog, UnknownStageError
from grader.course.checks.source_checks import MAX_BYTES, SubmissionError, decode_source

NAME_LIMIT = 120  # characters of a file's name kept (its report shows it)
_UNSHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class UploadRefused(ValueError):
    """The upload is not stored; the message says why in one line."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Upload:
    stage: str
    filename: str  # the file's own name (no folders), as its report shows it
    backend: str
    source: bytes


def file_name(given: str | None) -> str:
    """The base name of an uploaded file's name (a browser may send a whole Windows path)."""
    name = PureWindowsPath(PurePosixPath(given or "").name).name
    return _UNSHOWN.sub("?", name)[-NAME_LIMIT:]


def check_upload(catalog: Catalog, stage: str, given_name: str | None, data: bytes,
                 limit: int = MAX_BYTES) -> Upload:
    """The upload as it will be stored. Raises UploadRefused."""
    try:
        spec = catalog.get(stage)
    except UnknownStageError as error:
        raise UploadRefused(str(error), 404) from None
    name = file_name(given_name)
    kind = registry.by_suffix(PurePosixPath(name).suffix)
    if kind is None:
        raise UploadRefused(f"{name or 'the file'}: a submission is a {registry.suffix_list()} file", 422)
    if len(data) > limit:
        raise UploadRefused(f"{name}: {len(data)} bytes is over the {limit // 1024} KiB limit for a kernel file",
                            413)
    try:
        decode_source(data, name)
    except SubmissionError as error:
        raise UploadRefused(str(error), 422) from None
    return Upload(spec.id, name, kind.name, data)
