"""How the worker shares the host's cores: the threads that make the benchmark-size inputs and
run the oracle (grader.steps.host_inputs), and how many threads each of its BLAS products may
use. No imports beyond the standard library: the parent reads `blas_env` before it starts a
worker, since OpenBLAS fixes its thread count when numpy loads it."""

from __future__ import annotations

import os

SIZE_CHECK_ROUNDS = 2  # rounds of the benchmark-size check, each with fresh inputs and an oracle run
# Variables through which a user or a cluster's job sets the BLAS library's threads: where any
# is set, the worker keeps it.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def host_threads(cpus: int | None = None) -> int:
    """Threads for the host work: one per set of inputs where the machine has the cores to
    spare (numpy's products and element-wise passes over large arrays release the GIL: mlp's
    two float oracle runs overlap), one on a small machine, whose cores the worker's other steps
    and the compilers need."""
    cpus = os.cpu_count() if cpus is None else cpus
    return max(1, min(1 + SIZE_CHECK_ROUNDS, (cpus or 1) // 4))


def blas_threads(cpus: int | None = None) -> int:
    """Threads for one BLAS product: the cores shared among the oracle runs that run at once.
    OpenBLAS otherwise starts one thread per core in each of them, and two oracle runs at once
    with a thread per core each are slower than with the cores split between them
    (docs/performance.md)."""
    cpus = (os.cpu_count() if cpus is None else cpus) or 1
    at_once = max(1, min(SIZE_CHECK_ROUNDS, host_threads(cpus)))
    return max(1, cpus // at_once)


def blas_env(env: dict[str, str], cpus: int | None = None) -> dict[str, str]:
    """The variables to add to a worker's environment: OPENBLAS_NUM_THREADS (blas_threads),
    unless the environment already says how many threads BLAS may use."""
    if any(env.get(name) for name in BLAS_THREAD_VARIABLES):
        return {}
    return {"OPENBLAS_NUM_THREADS": str(blas_threads(cpus))}
