"""The kind of every failure a grading can find (FailureKind): set by the step that saw it, read
by every output (hints, the batch's failure groups, result.json's `checks[].failure`), never
taken back out of message text.

Its own module, below grader.results (which re-exports it) and the plugins' interface
(grader.plugins.base: a plugin's Finding fails a check with a kind), so that neither imports the
other for it."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """Why a check failed, one value per kind of failure (its value is what JSON holds)."""

    REFUSED_SOURCE = "refused_source"  # not a kernel file the stage accepts (read or checked)
    COMPILE_ERROR = "compile_error"
    WRONG = "wrong"
    RACE = "race"  # outputs differ between two runs with the same inputs
    OUT_OF_BOUNDS = "out_of_bounds"  # wrote into a guard band
    READ_OUT_OF_BOUNDS = "read_out_of_bounds"  # an input's guard value reached the outputs
    INPUT_MODIFIED = "input_modified"
    DIVERGENT_BARRIER = "divergent_barrier"  # found in the source
    SANITIZER = "sanitizer"  # compute-sanitizer found something
    CRASH = "crash"  # the grading process died (a signal)
    TIMEOUT = "timeout"  # a phase ran past its limit
    REFUSED_LAUNCH = "refused"  # the launch asks for more than the device gives
    LAUNCH_FAILED = "launch_failed"  # the device stopped the kernel
    MEMORY = "memory"  # ran out of the worker's memory
    BENCHMARK_WRONG = "benchmark_wrong"  # right at the test sizes, wrong at the benchmark size
    UNCHANGED_HANDOUT = "unchanged_handout"  # the skeleton or another stage's reference, as handed out
    REFERENCE_COPY = "reference_copy"  # this stage's own reference, at most trivially edited
    TOO_SLOW = "too_slow"
    IMPOSSIBLE_TIME = "impossible_time"  # timed under the device's floor for the stage's bytes
    CONCEPT = "concept"  # the GPU's counters do not show the stage's idea (a graded [counters.check])
    NO_DEVICE = "no_device"  # nothing here can run it
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"  # a sandbox is required (LAB_SANDBOX=require) and none starts here
    GRADER_ERROR = "grader_error"  # the grader itself failed
