"""A Slurm run's tasks grade the copies `lab batch slurm` took when it planned the run
(lab.batch.intake): a file swapped for a link to another student's private file afterwards is
never read, and the final job's class outputs name the files as SUBMISSIONS does."""

from __future__ import annotations

import os
from pathlib import Path

from lab.batch.intake import from_copies, take_in
from lab.batch.layout import scan

STAGES = ("transpose_coalesced", "reduce_interleaved")


def test_the_tasks_grade_the_copies_not_what_submissions_holds_later(tmp_path: Path) -> None:
    root = tmp_path / "submissions"
    (root / "ann").mkdir(parents=True)
    (root / "bob").mkdir()
    (root / "ann" / "transpose_coalesced.cl").write_text("// ann's own kernel\n", encoding="utf-8")
    private = root / "bob" / "reduce_interleaved.cl"
    private.write_text("// bob's private kernel\n", encoding="utf-8")
    private.chmod(0o600)
    intake = tmp_path / "results" / ".cluster" / "intake" / "run1"
    taken = take_in(scan(root, STAGES), intake, as_submissions=True)
    assert {s.relative for s in taken.submissions} == {"ann/transpose_coalesced.cl", "bob/reduce_interleaved.cl"}
    # After planning, ann's file becomes a link to bob's private file.
    (root / "ann" / "transpose_coalesced.cl").unlink()
    os.symlink(private, root / "ann" / "transpose_coalesced.cl")
    final = from_copies(scan(root, STAGES), scan(intake, STAGES))
    graded = {s.relative: s.path.read_text(encoding="utf-8") for s in final.submissions}
    assert graded["ann/transpose_coalesced.cl"] == "// ann's own kernel\n"
    assert all(intake in s.path.parents for s in final.submissions)
    assert not [item for item in final.not_graded if item.path == "ann/transpose_coalesced.cl"]
