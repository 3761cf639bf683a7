"""How many threads make the benchmark-size host inputs (grader.steps.host_inputs)."""

from __future__ import annotations

import pytest

from grader.steps import host_inputs


@pytest.mark.parametrize(("cores", "threads"), [(None, 1), (1, 1), (2, 1), (4, 1), (8, 2), (16, 3), (128, 3)])
def test_one_thread_on_a_small_machine_and_one_per_set_of_inputs_on_a_large_one(monkeypatch, cores, threads):
    monkeypatch.setattr(host_inputs.os, "cpu_count", lambda: cores)
    assert host_inputs.host_threads() == threads == min(threads, 1 + host_inputs.SIZE_CHECK_ROUNDS)
