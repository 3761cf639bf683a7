"""What the class summary says about timings on a CPU device is what the grader does there:
nothing is timed unless the batch asked for --cpu-timing, and speed is never graded. Synthetic
results: no device needed."""

from __future__ import annotations

from html import unescape

import pytest

from lab.batch.html import render_summary_html
from lab.batch.keys import batch_options
from lab.batch.outcome import outcome_from_result
from lab.batch.summary import BatchStats, summarize
from tests.batch.test_summary_counters import COALESCED, Sub, result
from tests.conftest import catalog


def cpu_summary(cpu_timing: bool):
    graded = result(COALESCED, None, speedup=None)
    graded["device"] = {"name": "Test CPU", "kind": "cpu"}
    outcomes = [outcome_from_result(Sub("s0", COALESCED), graded, True)]
    stats = BatchStats(1, 1, 0, 0, 60.0, 30.0, (), batch_options(cpu_timing=cpu_timing))
    return summarize([catalog().get(COALESCED)], ["s0"], outcomes, [], stats)


@pytest.mark.parametrize("cpu_timing", [False, True])
def test_the_summary_says_what_was_timed_on_a_cpu_device(cpu_timing):
    summary = cpu_summary(cpu_timing)
    assert summary.cpu_only
    text = " ".join(unescape(render_summary_html(summary)).split())
    assert "speed is not graded" in text
    assert ("nothing was timed" in text) is not cpu_timing
    assert ("were timed because the batch asked for it (--cpu-timing)" in text) is cpu_timing
    assert "timings are shown but not graded" not in text
