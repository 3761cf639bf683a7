"""Where CUPTI's Range Profiler spends a grading's counters time: every CUPTI call of the set-up
and of each profiled launch timed, for a tiny kernel and a transpose, in one CUDA context,
ranges in the order given. The first range on a context was seen taking 0.19-0.24 s where the
next took 0.02-0.05 s (H200): this says which call that is, and whether a second profiler on
the same context (closed and made again) pays it again.

Seen on the H200 (8b329a5): the set-up's calls 30 ms; the first cuptiRangeProfilerStart after
each enable 135-205 ms (650 ms the first in a fresh machine's first process); every profiled
launch about 30 ms whatever the kernel (2 passes, kernel replay), also three launches in one
range set (100 ms); one metric of one pass: 25 ms a launch, the same again in CUPTI's user
replay mode (the launch 1.3 ms, each range's start 18 ms). So a grading's counters cost about
0.2 s plus 25-30 ms a profiled launch, whichever way CUPTI is driven.

    python3 benchmarks/cupti_first_range.py --order tiny,tiny,big,big,reopen,big

Prints one line per CUPTI call (Markdown table), then each range's total."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCE = r"""
extern "C" __global__ void tiny(float *out) { out[threadIdx.x] = threadIdx.x; }
extern "C" __global__ void big(const float *in, float *out, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < n && y + j < n) out[x * n + y + j] = in[(y + j) * n + x];
}
"""
STORE = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", default="tiny,tiny,big,big,reopen,big,reopen,tiny")
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args()
    from grader.backends import open_backend
    from grader.counters import cupti

    calls: list[tuple[str, str, float]] = []
    label = ["setup"]
    inner = cupti._call

    def timed(library, function, params):
        began = time.perf_counter()
        try:
            inner(library, function, params)
        finally:
            calls.append((label[0], function, time.perf_counter() - began))

    cupti._call = timed
    backend = open_backend("cuda", 0)
    kernels = backend.compile(SOURCE, ["tiny", "big"], {}, "probe.cu")
    n = args.n
    a, b, small = backend.alloc(n * n * 4), backend.alloc(n * n * 4), backend.alloc(4096)
    backend.upload(a, np.ones(n * n, dtype=np.float32))
    launches = {"tiny": lambda: backend.launch(kernels["tiny"], (1, 1, 1), (32, 1, 1), [small]),
                "big": lambda: backend.launch(kernels["big"], (n // 32, n // 32, 1), (32, 8, 1),
                                              [a, b, np.int32(n)])}
    for run in launches.values():
        run()
    began = time.perf_counter()
    profiler = cupti.RangeProfiler(int(backend.context.handle), STORE)
    totals = [("setup", time.perf_counter() - began, {**profiler.seconds, "passes": profiler.passes})]
    for index, step in enumerate(s for s in args.order.split(",") if s):
        label[0] = f"{index}:{step}"
        began = time.perf_counter()
        if step == "reopen":
            profiler.close()
            profiler = cupti.RangeProfiler(int(backend.context.handle), STORE)
            totals.append((label[0], time.perf_counter() - began, dict(profiler.seconds)))
            continue
        profiler.start()
        started = time.perf_counter()
        launches[step]()
        launched = time.perf_counter()
        values = profiler.stop()
        totals.append((label[0], time.perf_counter() - began,
                       {"launch": launched - started, **{k[:22]: v for k, v in values.items()}}))
    profiler.close()
    backend.close()
    print("| range | CUPTI call | ms |\n|---|---|---:|")
    for where, function, seconds in calls:
        if seconds > 0.0005:
            print(f"| {where} | {function} | {seconds * 1e3:.1f} |")
    print("\n| range | total ms | detail |\n|---|---:|---|")
    for where, seconds, detail in totals:
        shown = ", ".join(f"{k}={v * 1e3:.1f}ms" if isinstance(v, float) and v < 10 and k in ("launch",) or
                          k in ("library", "initialize", "chip", "enable", "host object and configuration")
                          else f"{k}={v}" for k, v in detail.items())
        print(f"| {where} | {seconds * 1e3:.1f} | {shown} |")


if __name__ == "__main__":
    main()
