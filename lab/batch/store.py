"""Results on disk, one folder per submission: RESULTS/<student>/<stage>/.

Each file is written atomically (a temporary file, then os.replace). result.json is removed
first and written last, after the files of lab.batch.outputs.RESULT_FILES (feedback.md,
feedback.html, Gradescope's results.json): a folder whose result.json is missing, unreadable
(lab.batch.stored) or carries another key is graded again, so a batch killed at any moment
(even with SIGKILL) loses at most the submissions it was grading.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grader.course.sinks import for_json, for_path_component
from grader.feedback import write_atomic
from grader.report import Report, Status
from lab.batch.layout import Submission
from lab.batch.outputs import CLASS_FILES, RESULT_FILES
from lab.batch.stored import BatchInfo, StoredResult

RESULT = "result.json"
SIBLINGS = tuple(entry.name for entry in RESULT_FILES)  # written before RESULT, in this order
LOCK = ".lab-batch.lock"

# grader.feedback.write_atomic's temporary files: ".<name>.<random>" beside <name>.
_TEMP = re.compile(r"^\.(?:{})\.[A-Za-z0-9_]+$".format("|".join(
    re.escape(n) for n in (RESULT, *SIBLINGS, *(entry.name for entry in CLASS_FILES)))))


class StoreBusy(RuntimeError):
    """Another batch holds RESULTS."""


def is_temp_file(name: str) -> bool:
    return bool(_TEMP.match(name))


def dumps(data: Any) -> str:
    return for_json(data) + "\n"


class ResultStore:
    def __init__(self, root: Path):
        self.root = root

    def folder(self, submission: Submission) -> Path:
        return self.root / for_path_component(submission.student) / for_path_component(submission.stage)

    def load(self, submission: Submission) -> StoredResult | None:
        """A submission's result.json, or None when it is missing or cannot be read as a result
        (half written, or from a grader version whose results this one does not read): such a
        submission is graded again."""
        try:
            return StoredResult.from_json((self.folder(submission) / RESULT).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    def fresh(self, submission: Submission, keys: Collection[str]) -> StoredResult | None:
        """The stored result if it was graded from the same inputs (its key is one of `keys`)
        and its other files are all there; otherwise None."""
        stored = self.load(submission)
        if stored is None or not stored.cache_key or stored.cache_key not in keys:
            return None
        if stored.report.status == Status.ERROR and stored.graded:
            return None  # the grader failed on it (not a grade): graded again
        folder = self.folder(submission)
        if not all((folder / name).is_file() for name in SIBLINGS):
            return None
        return stored

    def save(self, submission: Submission, report: Report, key: str | None, batch: BatchInfo) -> StoredResult:
        """Write the four files of one result, result.json last; return what result.json holds.

        `key` None: the result is shown but graded again by the next run."""
        folder = self.folder(submission)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RESULT).unlink(missing_ok=True)
        for entry in RESULT_FILES:
            write_atomic(folder / entry.name, entry.format.render(report))
        stored = StoredResult(report, batch, key)
        write_atomic(folder / RESULT, stored.dumps())
        return stored

    def write_class_file(self, name: str, text: str) -> Path:
        path = self.root / name
        write_atomic(path, text)
        return path

    def sweep_temp_files(self) -> int:
        """Remove temporary files a killed batch left behind (call while holding the lock)."""
        removed = 0
        for folder in self._result_folders():
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if is_temp_file(name):
                    try:
                        (folder / name).unlink()
                        removed += 1
                    except OSError:
                        pass
        return removed

    def _result_folders(self) -> Iterator[Path]:
        yield self.root
        for student in _subfolders(self.root):
            yield from _subfolders(student)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold RESULTS for this batch; StoreBusy when another batch holds it. The lock goes
        with the process, however it ends."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            yield
            return
        handle = open(self.root / LOCK, "a+")
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as error:
                raise StoreBusy(f"another `lab batch` is writing to {self.root} right now") from error
            yield
        finally:
            handle.close()


def _subfolders(folder: Path) -> Iterator[Path]:
    try:
        with os.scandir(folder) as it:
            entries = [e for e in it if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return
    for entry in entries:
        yield Path(entry.path)
