"""What moves a strided kernel's time on a shared GPU: where its buffers land in device memory,
and what other processes do on the GPU meanwhile (issue 12; grader.timing's buffer placements).

The naive transpose (8192x8192, reads along rows, writes down columns: the transpose track's
baseline) is timed with CUDA events, 30 samples of 10 launches per phase, in one process:

- alone, then with its buffers allocated again after a block of 0, 37, 74, ... MB (nothing else
  on the GPU): how far placement alone moves it;
- while 3 other processes loop on one thing each: creating contexts, allocating and freeing,
  loading modules, copying host to device (the work a grading does outside its timed phase);
- with 7 other processes holding 1.5 GB each, its buffers allocated again after them.

    python3 benchmarks/placement_sensitivity.py        # on a CUDA GPU machine, about 30 s

On an H100 (2026-11-25): placement alone moved the median from -0.7% to +2.6% (each placement
stable to 0.1%); a process looping on module loads slowed it 29%. The table comes last.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

N = 8192
SOURCE = r"""
extern "C" __global__ void naive(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        out[(y + j) + height * x] = in[x + width * (y + j)];
}
"""


def helper(mode: str) -> None:
    """Another process on the GPU, looping on one kind of work until it is killed."""
    import numpy as np
    import pycuda.autoinit  # noqa: F401 - its context
    import pycuda.driver as drv
    from pycuda.compiler import compile as to_cubin

    cubin = to_cubin(SOURCE, no_extern_c=True)
    if mode == "hold":
        kept = drv.mem_alloc(1536 << 20)  # noqa: F841 - held until killed
        print("ready", flush=True)
        time.sleep(3600)
    print("ready", flush=True)
    if mode == "contexts":
        device = drv.Device(0)
        while True:
            context = device.make_context()
            context.pop()
            context.detach()
    elif mode == "alloc-free":
        while True:
            drv.mem_alloc(512 << 20).free()
            time.sleep(0.01)
    elif mode == "module-loads":
        while True:
            drv.module_from_buffer(cubin)
    elif mode == "host-to-device":
        host = drv.pagelocked_empty(64 << 20, np.float32)
        device_buffer = drv.mem_alloc(256 << 20)
        while True:
            drv.memcpy_htod(device_buffer, host)


def start_helpers(mode: str, count: int) -> list[subprocess.Popen]:
    started = [subprocess.Popen([sys.executable, __file__, "--helper", mode], stdout=subprocess.PIPE, text=True)
               for _ in range(count)]
    for process in started:
        process.stdout.readline()  # "ready"
    return started


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--helper", help=argparse.SUPPRESS)
    parser.add_argument("--placements", type=int, default=10, metavar="N")
    args = parser.parse_args()
    if args.helper:
        helper(args.helper)
        return

    import numpy as np

    try:
        import pycuda.autoinit  # noqa: F401 - its context
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule
    except Exception as error:  # noqa: BLE001 - no PyCUDA, no driver or no GPU
        raise SystemExit(f"this needs PyCUDA and a CUDA GPU: {error}") from None

    naive = SourceModule(SOURCE, no_extern_c=True).get_function("naive")
    host = np.random.default_rng(1).random((N, N), dtype=np.float32)
    start, end = drv.Event(), drv.Event()

    def allocate() -> tuple:
        source, out = drv.mem_alloc(host.nbytes), drv.mem_alloc(host.nbytes)
        drv.memcpy_htod(source, host)
        return source, out

    def launch(buffers: tuple) -> None:
        naive(buffers[1], buffers[0], np.int32(N), np.int32(N), block=(32, 8, 1), grid=(N // 32, N // 32))

    def sample(buffers: tuple, count: int = 30, launches: int = 10) -> list[float]:
        times = []
        for _ in range(count):
            launch(buffers)  # warm
            start.record()
            for _ in range(launches):
                launch(buffers)
            end.record()
            end.synchronize()
            times.append(end.time_since(start) / launches)
        return times

    rows: list[tuple[str, float, float, float]] = []

    def phase(name: str, buffers: tuple) -> None:
        times = sample(buffers)
        rows.append((name, statistics.median(times), min(times), max(times)))
        print(f"{name}: {statistics.median(times):.4f} ms", file=sys.stderr)

    buffers = allocate()
    phase("alone", buffers)
    blocks = []
    for k in range(args.placements):
        blocks.append(drv.mem_alloc((k * 37 + 1) << 20))
        phase(f"alone, buffers after a {k * 37} MB block", allocate())
    del blocks
    for mode in ("contexts", "alloc-free", "module-loads", "host-to-device"):
        helpers = start_helpers(mode, 3)
        try:
            phase(f"3 processes looping on {mode}", buffers)
        finally:
            stop(helpers)
    holders = start_helpers("hold", 7)
    try:
        kept = []
        for k in range(4):
            kept.append(drv.mem_alloc((k * 53 + 1) << 20))
            phase(f"7 processes holding 1.5 GB, buffers after {k * 53} MB", allocate())
    finally:
        stop(holders)
    phase("alone (at the end)", buffers)

    base = rows[0][1]
    print(f"naive transpose {N}x{N} on {drv.Context.get_device().name()}: median of 30 samples (10 launches each)")
    print("| phase | median ms | min ms | max ms | against alone |")
    print("|---|---:|---:|---:|---:|")
    for name, median, low, high in rows:
        print(f"| {name} | {median:.4f} | {low:.4f} | {high:.4f} | {100 * (median / base - 1):+.2f}% |")


if __name__ == "__main__":
    main()
