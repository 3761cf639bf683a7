"""`lab batch` against what a careless or hostile class folder holds: pipes, devices, sparse
giants, macOS archive litter, names in the wrong case, a results disk that refuses a write."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from grader.batch.devices import build_pool
from grader.batch.gradebook import gradebook_rows
from grader.batch.keys import GradingOptions
from grader.batch.layout import (
    BOTH_BACKENDS,
    HIDDEN,
    MACOS_METADATA,
    NOT_A_FILE,
    SYMLINK,
    UNKNOWN_STAGE,
    Submission,
    scan,
)
from grader.batch.plan import make_plan, submission_digest
from grader.batch.runner import Runner
from grader.batch.store import ResultStore
from lab.backends.discovery import Discovery
from lab.source_checks import MAX_BYTES, read_submission_bytes
from tests.batch.test_batch_units import CPU, STAGE, _submission, report
from tests.conftest import catalog


def _no_wait(action, seconds: float = 5.0):
    """Run `action` in a thread; fail (after unblocking it) if it has not returned in time."""
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(action()), daemon=True)
    thread.start()
    thread.join(seconds)
    return thread, done


def test_a_pipe_named_like_a_kernel_is_hashed_without_waiting(tmp_path):
    sub = _submission(tmp_path)
    sub.path.unlink()
    os.mkfifo(sub.path)  # put there after the folder was read: the layout no longer decides
    thread, done = _no_wait(lambda: submission_digest(sub))
    if thread.is_alive():  # old behaviour: open() waits for a writer for ever; give it one
        os.close(os.open(sub.path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail("hashing a FIFO waited for a writer")
    assert done == [None]  # not a regular file: no digest, never taken as up to date


def test_pipes_devices_and_links_in_a_class_are_listed_not_read(tmp_path):
    root = tmp_path / "subs"
    (root / "ann").mkdir(parents=True)
    os.mkfifo(root / "ann" / f"{STAGE}.cl")
    (root / "bob").mkdir()
    (root / "bob" / f"{STAGE}.cl").symlink_to("/dev/zero")
    layout = scan(root, catalog().ids())
    assert layout.submissions == ()
    reasons = {n.path: n.reason for n in layout.not_graded}
    assert reasons == {f"ann/{STAGE}.cl": NOT_A_FILE, f"bob/{STAGE}.cl": SYMLINK}


def test_a_sparse_giant_is_refused_by_its_size_and_never_read(tmp_path):
    sub = _submission(tmp_path)
    os.truncate(sub.path, 8 << 30)  # 8 GiB of nothing, in no disk space
    store = ResultStore(tmp_path / "out")
    options = GradingOptions(timing=False)
    pool = build_pool(Discovery([CPU]), {"opencl"}, jobs=1)

    def grade(spec, path, target, shown_as):
        read_submission_bytes(path)  # raises as grading does: over the limit
        raise AssertionError("unreachable")

    def read_bytes() -> int:
        with open("/proc/self/io") as handle:
            return int(next(line for line in handle if line.startswith("rchar:")).split()[1])

    if not Path("/proc/self/io").exists():
        pytest.skip("no /proc/self/io here to count the bytes read")
    before = read_bytes()
    plan = make_plan([sub], catalog(), pool, store, options)
    result = Runner(store, options, grade).run(plan, pool)
    read = read_bytes() - before
    assert read < 16 * MAX_BYTES, f"{read} bytes read for an 8 GiB submission"
    (outcome,) = result.outcomes
    assert "over the 256 KiB limit" in outcome.failure.message
    assert submission_digest(sub) is not None  # its verdict is its size: a rerun finds it up to date


def test_macos_archive_litter_is_no_student(tmp_path):
    root = tmp_path / "subs"
    for name in (f"ann/{STAGE}.cl", f"__MACOSX/ann/._{STAGE}.cl", "__MACOSX/._ann", ".DS_Store",
                 f"ann/._{STAGE}.cl", "ann/.DS_Store", f"ann/__MACOSX/._{STAGE}.cl"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    layout = scan(root, catalog().ids())
    assert layout.students == ("ann",)
    assert [s.relative for s in layout.submissions] == [f"ann/{STAGE}.cl"]
    reasons = {n.path: n.reason for n in layout.not_graded}
    assert reasons == {"__MACOSX/": MACOS_METADATA, ".DS_Store": HIDDEN, f"ann/._{STAGE}.cl": HIDDEN,
                       "ann/.DS_Store": HIDDEN, "ann/__MACOSX/": MACOS_METADATA}


def test_two_files_for_one_stage_are_named_as_they_are(tmp_path):
    root = tmp_path / "subs"
    (root / "ann").mkdir(parents=True)
    for name in (f"{STAGE}.cl", f"{STAGE}.CL"):
        (root / "ann" / name).write_text("x")
    layout = scan(root, catalog().ids())
    assert layout.submissions == ()
    for item in layout.not_graded:
        assert item.reason == BOTH_BACKENDS and ".cu" not in item.reason
        assert f"{STAGE}.cl and {STAGE}.CL" in item.detail or f"{STAGE}.CL and {STAGE}.cl" in item.detail


def test_a_stage_name_in_the_wrong_case_gets_a_suggestion(tmp_path):
    root = tmp_path / "subs"
    (root / "ann").mkdir(parents=True)
    (root / "ann" / "TRANSPOSE_COALESCED.cl").write_text("x")
    (item,) = scan(root, catalog().ids()).not_graded
    assert item.reason == UNKNOWN_STAGE
    assert "did you mean transpose_coalesced.cl?" in item.detail


def test_a_result_that_could_not_be_written_gets_no_grade_in_the_gradebook(tmp_path, monkeypatch):
    subs = [_submission(tmp_path, name) for name in ("ann", "bob")]
    store = ResultStore(tmp_path / "out")
    options = GradingOptions(timing=False)
    pool = build_pool(Discovery([CPU]), {"opencl"}, jobs=1)
    save = store.save

    def save_or_fail(submission: Submission, *args, **kwargs):
        if submission.student == "bob":
            raise OSError(28, "No space left on device")
        return save(submission, *args, **kwargs)

    monkeypatch.setattr(store, "save", save_or_fail)
    result = Runner(store, options, lambda spec, path, target, shown_as: report(file=str(path))).run(
        make_plan(subs, catalog(), pool, store, options), pool)
    assert any("bob" in p and "No space left" in p for p in result.problems)
    rows = {row[0]: row for row in gradebook_rows(["ann", "bob"], [STAGE], result.outcomes)}
    assert rows["ann"][1:] == ["70", "70"]
    assert rows["bob"][1:] == ["", ""]  # nothing stored: no grade (the next run grades it again)
    assert store.load(subs[1]) is None
