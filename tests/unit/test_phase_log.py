"""A report's phase_log: each phase the worker named, with its seconds, in order (grader.pipeline)."""

from __future__ import annotations

from grader import pipeline
from grader.pipeline import PHASE_LOG_MAX, PHASE_NAME_MAX, _log_phase


def test_phases_are_kept_in_order_and_a_phase_named_again_adds_up():
    log: list[tuple[str, float]] = []
    for name, seconds in (("startup", 0.1), ("startup", 0.02), ("compiling your kernel", 0.5),
                          ("correctness case 1", -0.001)):
        _log_phase(log, name, seconds)
    assert log == [("startup", 0.12000000000000001), ("compiling your kernel", 0.5), ("correctness case 1", 0.0)]


def test_what_the_worker_names_is_bounded():
    log: list[tuple[str, float]] = []
    for n in range(PHASE_LOG_MAX + 10):
        _log_phase(log, f"phase {n} " + "x" * 500, 1.0)
    assert len(log) == PHASE_LOG_MAX and all(len(name) == PHASE_NAME_MAX for name, _ in log)
    assert pipeline.PHASE_LOG_MAX == 64
