"""What the benchmark-size write fence (grader.write_fence) costs on a device: the buffers the
size check holds (every role's first placement at the stage's benchmark size, the cache-flush
buffer), the submission's set in an arena with its moats, and the fence's passes around one
launch, each waited for.

    python3 benchmarks/write_fence_cost.py [--backend cuda|opencl] [--device N] [--repeats 5]
        [STAGE ...]   (default: reduce_first_add transpose_coalesced gemm_tiled)

Prints one line per stage: the bytes checksummed (regions, moats), the arena's making (allocation
and fill), and the fence's before and after passes (median of the repeats), in ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from grader import memory
from grader.backends import open_backend
from grader.correctness import CaseBuffers, make_setup
from grader.course.catalog import default_catalog
from grader.course.problems import load_problem
from grader.device_ops import DeviceOps
from grader.steps.benchmark import benchmark_case
from grader.steps.size_check import _regions, arena_sizes
from grader.write_fence import Region, WriteFence


def _sync(backend, buffer) -> None:
    backend.download(buffer, np.zeros(1, dtype=np.uint32))


def measure(backend, ops: DeviceOps, stage: str, repeats: int) -> str:
    spec = default_catalog().get(stage)
    problem = load_problem(spec.problem)
    case = benchmark_case(spec, backend.info.kind)
    setup = make_setup(spec, case)
    uniform = problem.uniform_inputs(setup)
    others = [(role, CaseBuffers(backend, problem, setup, None, uniform)) for role in ("baseline", "reference", "ceiling")]
    backend.flush_l2()
    started = time.perf_counter()
    arena = memory.Arena(backend, arena_sizes(problem, setup, None, uniform))
    own = CaseBuffers(backend, problem, setup, None, uniform, arena)
    _sync(backend, arena.buffer)
    made_ms = (time.perf_counter() - started) * 1e3
    regions = [Region(f"its own input `{n}`", g.inner) for n, (_, g) in own.guarded_inputs.items()]
    for role, buffers in others:
        regions += _regions(role, buffers)
    scratch = getattr(backend, "_scratch", None)
    if scratch is not None:
        regions.append(Region("the flush buffer", scratch))
    fence = WriteFence(backend, ops, regions, arena)
    befores, afters = [], []
    try:
        for _ in range(repeats + 1):  # the first: the kernels' first launch
            _sync(backend, arena.buffer)
            started = time.perf_counter()
            fence.before()
            _sync(backend, arena.buffer)
            befores.append((time.perf_counter() - started) * 1e3)
            started = time.perf_counter()
            found = fence.after()
            afters.append((time.perf_counter() - started) * 1e3)
            assert found is None, found
    finally:
        fence.release()
        own.release()
        for _, buffers in others:
            buffers.release()
    summed = sum(r.buffer.nbytes for r in regions) / (1 << 30)
    moats = sum(m.nbytes for m in fence.moats) / (1 << 30)
    before, after = statistics.median(befores[1:]), statistics.median(afters[1:])
    return (f"{stage} ({', '.join(f'{k}={v}' for k, v in case.items())}): {summed:.2f} GiB checksummed, "
            f"{moats:.2f} GiB of moats checksummed; arena made in {made_ms:.1f} ms; before {before:.2f} ms, "
            f"after {after:.2f} ms (with its download); per fenced launch {before + after:.2f} ms")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("stages", nargs="*", default=["reduce_first_add", "transpose_coalesced", "gemm_tiled"])
    args = parser.parse_args(argv)
    backend = open_backend(args.backend, args.device)
    ops = DeviceOps(backend)
    print(f"{backend.info.name} ({args.backend})")
    try:
        for stage in args.stages:
            print(measure(backend, ops, stage, args.repeats))
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
