"""Benchmark-size inputs made on the host, ahead of need, in threads of their own.

Where a problem's inputs are not made on the device (a run without timing, or a problem
without `uniform_inputs`), the benchmark and both rounds of the size check need fresh host inputs,
and the size check needs the problem's oracle on each round's inputs; at the benchmark size
these take seconds (mlp: its training run, a float32 screen with error bounds). None of it
depends on the submission, so `MakeHostInputs` starts it right after the device is open, and
it runs while nvcc compiles and the correctness cases run: in one thread on a small machine,
in up to three where there are cores to spare, so the two rounds' oracle runs overlap
(grader.host_cores: these threads, and the BLAS threads each product may use); the rounds'
inputs are made first, then their oracle runs and the benchmark's inputs. On a GPU the
oracle runs go on beside the benchmark's timed rounds; a CPU device's timed rounds wait for
all of it (`HostInputs.finish`). Each set of
inputs draws from a generator of its own, spawned from one draw of the grading's, so a seed
still gives the same inputs however many threads run.
The problem's `expect(setup, inputs)` (optional) is the costly part of its `check`, which takes
the result as `expected`.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from grader.correctness import make_setup
from grader.host_cores import SIZE_CHECK_ROUNDS, host_threads
from grader.steps.benchmark import benchmark_case
from grader.steps.context import Context, Step


@dataclass
class SizeCheckRound:
    inputs: Future
    expected: Future | None  # the problem's `expect` for these inputs; None: it has none


@dataclass
class HostInputs:
    """What the threads make: each size-check round's inputs, then each round's expected
    result and (beside them) the benchmark's inputs."""

    benchmark: Future | None  # None where the benchmark does not run
    rounds: list[SizeCheckRound]
    pool: ThreadPoolExecutor = field(repr=False)

    def finish(self) -> None:
        """Wait until everything it makes is made (errors are left in their futures). A CPU
        device's timed rounds wait for it: its kernels run on the host's cores, beside which the
        oracle's threads would slow them unevenly. A GPU's run beside the threads: the oracle's
        hold on Python's lock delays their launches, not their times (the CUDA launch gate keeps
        the host's delays out; OpenCL's profiling does not count them). What that saves:
        docs/performance.md."""
        wait([f for f in (self.benchmark, *(r.inputs for r in self.rounds),
                          *(r.expected for r in self.rounds)) if f is not None])

    def close(self) -> None:
        """Drop what has not started (a grading that ended early)."""
        self.pool.shutdown(wait=False, cancel_futures=True)


class MakeHostInputs(Step):
    def wanted(self, ctx: Context) -> bool:
        request = ctx.request
        return request.timing and not request.compile_only and not (ctx.timed and ctx.inputs_on_device)

    def run(self, ctx: Context) -> bool:
        import numpy as np

        assert ctx.backend is not None
        problem = ctx.problem
        setup = make_setup(ctx.spec, benchmark_case(ctx.spec, ctx.backend.info.kind))
        # Each set of inputs draws from a generator of its own, spawned from one draw of the
        # grading's, so the sets can be made at once and a seed still gives the same inputs.
        bench_rng, *round_rngs = (np.random.default_rng(child) for child in
                                  np.random.SeedSequence(int(ctx.rng.integers(1 << 62))).spawn(1 + SIZE_CHECK_ROUNDS))
        pool = ThreadPoolExecutor(max_workers=host_threads(), thread_name_prefix="host-inputs")
        # The oracle runs are the longest part and the timed rounds wait for them, so the rounds'
        # inputs come first and their oracle runs start as soon as they are made. The benchmark
        # needs its own inputs only after the correctness cases: they are made once the rounds'
        # are, beside the oracle runs, not beside the rounds' inputs (numpy's generators hold the
        # GIL: three sets at once took each three times as long on the H100).
        made = [pool.submit(problem.inputs, setup, rng) for rng in round_rngs]
        expect = getattr(problem, "expect", None)
        rounds = [SizeCheckRound(inputs, pool.submit(_expect, expect, setup, inputs) if expect else None)
                  for inputs in made]
        benchmark = pool.submit(_after, made, problem.inputs, setup, bench_rng) if ctx.timed else None
        ctx.host_inputs = HostInputs(benchmark, rounds, pool)
        return True



def _after(first: list[Future], make: Any, *args: Any) -> Any:
    """make(*args) once every one of `first` is done (whatever its outcome: their own futures
    report that)."""
    wait(first)
    return make(*args)


def _expect(expect: Any, setup: Any, inputs: Future) -> Any:
    return expect(setup, inputs.result())
