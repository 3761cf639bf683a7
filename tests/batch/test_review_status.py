"""A speed held for review (grader.scoring: over twice the reference's speedup) is a status of its
own in the class's records: neither a score nor a failure, in the gradebook and the summary."""

from lab.batch.gradebook import REVIEW, gradebook_rows, score_cell
from lab.batch.outcome import Outcome


def outcome(student: str, status: str, score: int | None) -> Outcome:
    return Outcome(student=student, stage="st", file=f"{student}/st.cu", status=status, score=score,
                   max_score=100, failure=None, speedup=9.0, reference_speedup=3.0, required_speedup=2.4,
                   speed_graded=True, device="GPU", device_kind="gpu", duration_s=1.0, graded_now=True,
                   phases={})


def test_a_held_speed_is_review_in_the_gradebook_not_a_score() -> None:
    held = outcome("ann", "review", 70)
    assert held.held_for_review and not held.pending
    assert score_cell(held) == REVIEW
    rows = gradebook_rows(["ann", "bob"], ["st"], [held, outcome("bob", "passed", 100)])
    by_student = {row[0]: row for row in rows[1:]}
    assert by_student["ann"][1] == REVIEW and by_student["bob"][1] == "100"
