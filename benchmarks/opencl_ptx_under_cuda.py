"""Can an OpenCL kernel be profiled through CUDA? (issue 11: ncu profiles no kernel of a PyOpenCL
program.) NVIDIA's OpenCL gives a program's "binary" as PTX; this script builds a stage's OpenCL
reference on NVIDIA's platform, takes that PTX, says what in it CUDA might not provide (its
.version and .target, the entry's parameters, %envreg registers: OpenCL's global offset and
other work-item values the OpenCL runtime fills), loads it with the CUDA driver, launches it
as the stage launches its CUDA kernel, and compares the output with the OpenCL run's and with
numpy's. Where a step fails, it prints what the driver said and stops there.

    python3 benchmarks/opencl_ptx_under_cuda.py                  # on the GPU machine
    ncu --metrics smsp__sectors_per_request... python3 benchmarks/opencl_ptx_under_cuda.py --launch-only

transpose_naive only (a kernel of plain global pointers and ints). An experiment, not part of
grading: its findings go into docs/counters.md.
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np

TILE_DIM, BLOCK_ROWS = 32, 8
WIDTH = HEIGHT = 1024
ENTRY = "transpose"


def opencl_ptx(source: str) -> tuple[str, np.ndarray, np.ndarray]:
    """The PTX NVIDIA's OpenCL made of `source`, and the kernel's output on a random input."""
    import pyopencl as cl

    platform = next((p for p in cl.get_platforms() if "NVIDIA" in p.name), None)
    if platform is None:
        raise SystemExit("no NVIDIA OpenCL platform here")
    context = cl.Context(platform.get_devices()[:1])
    queue = cl.CommandQueue(context)
    program = cl.Program(context, source).build(options=[f"-DTILE_DIM={TILE_DIM}", f"-DBLOCK_ROWS={BLOCK_ROWS}"])
    ptx = bytes(program.get_info(cl.program_info.BINARIES)[0]).decode("utf-8", errors="replace")
    data = np.random.default_rng(1).random((HEIGHT, WIDTH), dtype=np.float32)
    flags = cl.mem_flags
    src = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data)
    dst = cl.Buffer(context, flags.WRITE_ONLY, data.nbytes)
    kernel = cl.Kernel(program, ENTRY)
    kernel.set_args(dst, src, np.int32(WIDTH), np.int32(HEIGHT))
    cl.enqueue_nd_range_kernel(queue, kernel, (WIDTH, HEIGHT // (TILE_DIM // BLOCK_ROWS)), (TILE_DIM, BLOCK_ROWS))
    out = np.empty((WIDTH, HEIGHT), dtype=np.float32)
    cl.enqueue_copy(queue, out, dst)
    queue.finish()
    return ptx, data, out


def describe(ptx: str) -> None:
    version = re.search(r"^\s*\.version\s+(\S+)", ptx, re.M)
    target = re.search(r"^\s*\.target\s+(.+)$", ptx, re.M)
    entry = re.search(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.S)
    print(f"PTX: {len(ptx)} characters; .version {version.group(1) if version else '?'}; "
          f".target {target.group(1).strip() if target else '?'}")
    if entry:
        params = [" ".join(p.split()) for p in entry.group(2).split(",") if p.strip()]
        print(f"entry {entry.group(1)}: {len(params)} parameters")
        for p in params:
            print(f"  {p}")
    envregs = sorted(set(re.findall(r"%envreg\d+", ptx)))
    print(f"%envreg registers read: {', '.join(envregs) or 'none'} (OpenCL's runtime fills them; "
          f"under CUDA they read as the driver leaves them)")
    for line in ptx.splitlines():
        if "%envreg" in line:
            print(f"  {line.strip()}")


def zero_envregs(ptx: str) -> str:
    """Every %envreg read as the constant 0: the lab launches every OpenCL kernel with a global
    offset of 0, which is what the registers hold where they are the offset."""
    return re.sub(r"%envreg\d+", "0", ptx)


def cuda_run(ptx: str, data: np.ndarray) -> np.ndarray:
    import pycuda.autoinit  # noqa: F401 - makes the context
    import pycuda.driver as drv

    try:
        module = drv.module_from_buffer(ptx.encode("utf-8"))
    except drv.Error as error:
        raise SystemExit(f"the CUDA driver did not load the PTX: {error}") from None
    try:
        function = module.get_function(ENTRY)
    except drv.Error as error:
        raise SystemExit(f"no entry `{ENTRY}` in the loaded module: {error}") from None
    out = np.full((WIDTH, HEIGHT), np.nan, dtype=np.float32)
    try:
        function(drv.Out(out), drv.In(data), np.int32(WIDTH), np.int32(HEIGHT),
                 block=(TILE_DIM, BLOCK_ROWS, 1), grid=(WIDTH // TILE_DIM, HEIGHT // TILE_DIM))
        drv.Context.synchronize()
    except drv.Error as error:
        raise SystemExit(f"the launch through CUDA failed: {error}") from None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch-only", action="store_true", help="skip the description (under ncu)")
    parser.add_argument("--zero-envregs", action="store_true", help="read every %%envreg as 0 before loading")
    args = parser.parse_args()
    from pathlib import Path

    source = (Path(__file__).resolve().parents[1] / "reference" / "transpose_naive" / "solution.cl").read_text()
    ptx, data, opencl_out = opencl_ptx(source)
    if not args.launch_only:
        describe(ptx)
    if args.zero_envregs:
        ptx = zero_envregs(ptx)
        print("every %envreg replaced by 0")
    cuda_out = cuda_run(ptx, data)
    expected = data.T
    print(f"OpenCL run matches numpy: {bool(np.array_equal(opencl_out, expected))}")
    print(f"the PTX through CUDA matches numpy: {bool(np.array_equal(cuda_out, expected))} "
          f"({int(np.isnan(cuda_out).sum())} elements never written)")


if __name__ == "__main__":
    sys.exit(main())
