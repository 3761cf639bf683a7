"""`lab batch` against what a careless or hostile class folder holds: pipes, devices, sparse
giants, macOS archive litter, names in the wrong case, a results disk that refuses a write."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from grader.backends.discovery import Discovery
from grader.course.checks.source_checks import MAX_BYTES, read_submission_bytes
from lab.batch.devices import build_pool
from lab.batch.exports import read_class
from lab.batch.gradebook import gradebook_rows
from lab.batch.intake import take_in
from lab.batch.keys import batch_options
from lab.batch.layout import (
    BOTH_BACKENDS,
    HIDDEN,
    MACOS_METADATA,
    NOT_A_FILE,
    SYMLINK,
    UNKNOWN_STAGE,
    Submission,
    scan,
)
from lab.batch.plan import make_plan, submission_digest
from lab.batch.runner import Runner
from lab.batch.similarity import Skip, compare_class, read_source
from lab.batch.store import ResultStore
from tests.batch.test_batch_units import CPU, OPENCL, STAGE, _submission, report
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
    options = batch_options(timing=False)
    pool = build_pool(Discovery([CPU]), (OPENCL,), jobs=1)

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
    options = batch_options(timing=False)
    pool = build_pool(Discovery([CPU]), (OPENCL,), jobs=1)
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


# -- issue 25: each submission opened once, by descriptor, no link followed ---------------------

def _class_with_a_secret(tmp_path: Path) -> tuple[Path, Path]:
    """SUBMISSIONS with mallory's kernel, and a private file of another student's beside it."""
    root = tmp_path / "subs"
    (root / "mallory").mkdir(parents=True)
    (root / "mallory" / f"{STAGE}.cl").write_text("__kernel void reduce() { /* mallory */ }")
    (root / "victim").mkdir()
    secret = root / "victim" / "private.cl"
    secret.write_text("__kernel void reduce() { /* the victim's own work */ }")
    secret.chmod(0o600)
    return root, secret


def test_a_link_swapped_in_after_the_scan_is_not_followed(tmp_path):
    root, secret = _class_with_a_secret(tmp_path)
    layout = scan(root, catalog().ids())
    assert [s.relative for s in layout.submissions] == [f"mallory/{STAGE}.cl"]
    (root / "mallory" / f"{STAGE}.cl").unlink()
    (root / "mallory" / f"{STAGE}.cl").symlink_to(secret)  # after the scan, before the grading
    taken = take_in(layout, tmp_path / "work")
    assert taken.submissions == ()
    (item,) = [n for n in taken.not_graded if n.path == f"mallory/{STAGE}.cl"]
    assert item.reason == SYMLINK and "after the folder was read" in item.detail
    assert not any("victim's own work" in p.read_text() for p in (tmp_path / "work").rglob("*") if p.is_file())


def test_a_student_folder_swapped_for_a_link_after_the_scan_is_not_followed(tmp_path):
    root, secret = _class_with_a_secret(tmp_path)
    (root / "victim" / f"{STAGE}.cl").write_text(secret.read_text())
    (root / "victim" / f"{STAGE}.cl").chmod(0o600)
    layout = scan(root, catalog().ids())
    (root / "mallory" / f"{STAGE}.cl").unlink()
    (root / "mallory").rmdir()
    (root / "mallory").symlink_to(root / "victim")
    taken = take_in(layout, tmp_path / "work")
    assert [s.student for s in taken.submissions] == ["victim"]
    assert {n.path: n.reason for n in taken.not_graded}[f"mallory/{STAGE}.cl"] == SYMLINK


def test_the_batch_grades_the_bytes_it_opened_once_not_the_file_as_it_is_later(tmp_path):
    root, secret = _class_with_a_secret(tmp_path)
    layout = read_class(root, catalog().ids(), tmp_path / "work")
    (sub,) = layout.submissions
    assert tmp_path / "work" in sub.path.parents  # a copy only the batch can reach
    original = root / "mallory" / f"{STAGE}.cl"
    original.unlink()
    original.symlink_to(secret)  # too late: the batch read it already
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False)
    pool = build_pool(Discovery([CPU]), (OPENCL,), jobs=1)
    graded: list[str] = []

    def grade(spec, path, target, shown_as):
        graded.append(read_submission_bytes(path).decode())
        return report(file=shown_as)

    Runner(store, options, grade).run(make_plan(layout.submissions, catalog(), pool, store, options), pool)
    assert graded == ["__kernel void reduce() { /* mallory */ }"]
    assert "mallory" in read_source(sub).text  # the similarity check reads the same copy


def test_a_fifo_swapped_in_after_the_scan_is_listed_without_waiting(tmp_path):
    root, _ = _class_with_a_secret(tmp_path)
    layout = scan(root, catalog().ids())
    (root / "mallory" / f"{STAGE}.cl").unlink()
    os.mkfifo(root / "mallory" / f"{STAGE}.cl")
    thread, done = _no_wait(lambda: take_in(layout, tmp_path / "work"))
    if thread.is_alive():
        os.close(os.open(root / "mallory" / f"{STAGE}.cl", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("taking in a FIFO waited for a writer")
    (taken,) = done
    assert {n.path: n.reason for n in taken.not_graded}[f"mallory/{STAGE}.cl"] == NOT_A_FILE


# -- issue 25: sizes checked before anything is read, the similarity check included ------------

def _rchar() -> int:
    with open("/proc/self/io") as handle:
        return int(next(line for line in handle if line.startswith("rchar:")).split()[1])


def test_a_12_gib_sparse_file_is_compared_by_its_size_and_never_read(tmp_path):
    if not Path("/proc/self/io").exists():
        pytest.skip("no /proc/self/io here to count the bytes read")
    sub = _submission(tmp_path)
    os.truncate(sub.path, 12 << 30)  # 12 GiB of nothing, in no disk space
    before = _rchar()
    similarity = compare_class(catalog(), [sub])
    assert _rchar() - before < 16 * MAX_BYTES
    assert similarity.stages[0].skipped == ((sub.relative, Skip.TOO_LARGE),)
    before = _rchar()
    layout = read_class(tmp_path / "subs", catalog().ids(), tmp_path / "work")
    assert _rchar() - before < 16 * MAX_BYTES
    (taken,) = layout.submissions
    assert taken.path.stat().st_size == MAX_BYTES + 1  # over the limit, as grading will say


def test_lab_batch_on_a_12_gib_sparse_file_writes_its_summary(tmp_path):
    from typer.testing import CliRunner

    from lab.cli import app

    sub = _submission(tmp_path)
    os.truncate(sub.path, 12 << 30)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["batch", "run", str(tmp_path / "subs"), "--out", str(out), "--no-timing",
                                      "--time-limit", "5", "--jobs", "1", "--backend", "opencl"])
    assert "Traceback" not in result.output and "MemoryError" not in result.output, result.output
    assert (out / "summary.html").is_file(), result.output
    feedback = (out / "ann" / STAGE / "feedback.md").read_text(encoding="utf-8")
    assert "over the 256 KiB limit" in feedback


def test_the_similarity_check_reads_no_link(tmp_path):
    root, secret = _class_with_a_secret(tmp_path)
    (sub,) = scan(root, catalog().ids()).submissions
    sub.path.unlink()
    sub.path.symlink_to(secret)  # what the Slurm path's final step scans is read where it lies
    assert read_source(sub) is Skip.UNREADABLE
