"""How many threads make the benchmark-size host inputs (grader.steps.host_inputs), and how many
each BLAS product may use (grader.host_cores)."""

from __future__ import annotations

import pytest

from grader import host_cores
from grader.backends.registry import by_name
from grader.steps import host_inputs


@pytest.mark.parametrize(("cores", "threads"), [(None, 1), (1, 1), (2, 1), (4, 1), (8, 2), (16, 3), (128, 3)])
def test_one_thread_on_a_small_machine_and_one_per_set_of_inputs_on_a_large_one(monkeypatch, cores, threads):
    monkeypatch.setattr(host_cores.os, "cpu_count", lambda: cores)
    assert host_cores.host_threads() == threads == min(threads, 1 + host_inputs.SIZE_CHECK_ROUNDS)


@pytest.mark.parametrize(("cores", "blas"), [(None, 1), (1, 1), (2, 2), (4, 4), (8, 4), (16, 8), (128, 64)])
def test_the_oracle_runs_at_once_share_the_cores_among_their_blas_threads(monkeypatch, cores, blas):
    """Two oracle runs at once where there are threads for both: each gets half the cores."""
    monkeypatch.setattr(host_cores.os, "cpu_count", lambda: cores)
    assert host_cores.blas_threads() == blas


def test_a_worker_gets_a_blas_thread_count_unless_its_environment_has_one():
    assert host_cores.blas_env({}, 16) == {"OPENBLAS_NUM_THREADS": "8"}
    for name in host_cores.BLAS_THREAD_VARIABLES:
        assert host_cores.blas_env({name: "3"}, 16) == {}
    assert host_cores.blas_env({"OMP_NUM_THREADS": ""}, 16) == {"OPENBLAS_NUM_THREADS": "8"}


def test_the_worker_process_is_started_with_the_limit(monkeypatch):
    """The parent sets it: OpenBLAS reads it once, when the worker's numpy loads it."""
    from grader import worker_process

    for name in host_cores.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    seen = {}

    def fake_popen(argv, **kwargs):
        seen.update(kwargs["env"])
        raise OSError("not started")

    monkeypatch.setattr(worker_process.subprocess, "Popen", fake_popen)
    with pytest.raises(OSError):
        worker_process.WorkerProcess(by_name("opencl"))
    assert seen["OPENBLAS_NUM_THREADS"] == str(host_cores.blas_threads())


def test_the_benchmarks_inputs_are_made_after_the_rounds(monkeypatch):
    """The rounds' inputs come first (their oracle runs are the longest part); the benchmark's
    wait for them (not made beside them)."""
    import threading
    import time
    from types import SimpleNamespace

    import numpy as np

    from grader.course.catalog import default_catalog

    monkeypatch.setattr(host_cores.os, "cpu_count", lambda: 16)  # three threads
    made: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    class Problem:
        def inputs(self, setup, rng):
            started = time.monotonic()
            time.sleep(0.05)
            with lock:
                made.append((threading.current_thread().name, started, time.monotonic()))
            return {"x": rng.random(2)}

    ctx = SimpleNamespace(problem=Problem(), spec=default_catalog().get("reduce_unrolled"), timed=True,
                          backend=SimpleNamespace(info=SimpleNamespace(kind="gpu")), rng=np.random.default_rng(1))
    host_inputs.MakeHostInputs().run(ctx)
    made_inputs = ctx.host_inputs
    benchmark = made_inputs.benchmark.result()
    rounds = [r.inputs.result() for r in made_inputs.rounds]
    made_inputs.close()
    assert len(made) == 3 and benchmark["x"].shape == (2,) and len(rounds) == host_inputs.SIZE_CHECK_ROUNDS
    (_, r1_start, r1_end), (_, r2_start, r2_end), (_, bench_start, _) = sorted(made, key=lambda m: m[1])
    assert r2_start < r1_end  # the rounds' sets at once
    assert bench_start >= max(r1_end, r2_end)  # the benchmark's after both


def test_finish_waits_for_every_set_of_inputs_and_every_oracle_run(monkeypatch):
    """A CPU device's benchmark calls it before its timed rounds: no host thread runs beside them."""
    import time
    from types import SimpleNamespace

    import numpy as np

    from grader.course.catalog import default_catalog

    monkeypatch.setattr(host_cores.os, "cpu_count", lambda: 16)

    class Problem:
        def inputs(self, setup, rng):
            return {"x": rng.random(2)}

        def expect(self, setup, inputs):
            time.sleep(0.1)
            return float(inputs["x"].sum())

    ctx = SimpleNamespace(problem=Problem(), spec=default_catalog().get("reduce_unrolled"), timed=True,
                          backend=SimpleNamespace(info=SimpleNamespace(kind="gpu")), rng=np.random.default_rng(1))
    host_inputs.MakeHostInputs().run(ctx)
    ctx.host_inputs.finish()
    assert all(r.inputs.done() and r.expected.done() for r in ctx.host_inputs.rounds)
    assert ctx.host_inputs.benchmark.done()
    ctx.host_inputs.close()
