"""nvcc against NVRTC (grader.backends.nvrtc) on every stage's CUDA reference: each compiler's time
(the median of --repeat compiles), whether NVRTC's ptxas report names every entry point, and on a
CUDA GPU each kernel's registers as the driver loads each cubin.

    python3 benchmarks/compile_speed.py          # on a machine with the CUDA toolkit

On the H100 machine (CUDA 13.0, 2026-11-25): nvcc 332-492 ms a file; NVRTC 15-18 ms, but that
probe let NVRTC keep its cache, so most of those were cache hits (grader.backends.nvrtc turns the
cache off now; this script measures with it off); registers equal for 13 of 19 kernels, NVRTC's
fewer for 4 (gemm_coarsened 40 against 48) and more for 2.
Progress goes to stderr; the table comes last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grader.backends import nvrtc  # noqa: E402
from grader.backends.nvcc import compile_cubin, nvcc_path  # noqa: E402
from grader.course.catalog import default_catalog  # noqa: E402


def driver_registers(image: bytes, entries: list[str]) -> dict[str, int] | None:
    """Each entry's registers as the CUDA driver loads `image`; None without a CUDA GPU."""
    try:
        import pycuda.driver as drv

        drv.init()
        if drv.Device.count() == 0:
            return None
    except Exception:  # noqa: BLE001 - no PyCUDA or no driver
        return None
    context = drv.Device(0).retain_primary_context()
    context.push()
    try:
        module = drv.module_from_buffer(image)
        return {entry: int(module.get_function(entry).num_regs) for entry in entries}
    finally:
        context.pop()


def timed(compiler, arguments: tuple, repeat: int):
    """The median of `repeat` calls of compiler(*arguments), in ms, and the last call's result."""
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = compiler(*arguments)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4, metavar="N")
    args = parser.parse_args()
    if nvcc_path() is None:
        raise SystemExit("nvcc is not installed here")
    if nvrtc.library() is None:
        raise SystemExit("NVRTC (with nvrtcSetFlowCallback: CUDA 12.8 or later) is not installed beside nvcc")
    catalog = default_catalog()
    rows = []
    for spec in catalog.stages:
        path = catalog.reference_file(spec.id, ".cu")
        source = path.read_text(encoding="utf-8")
        entries = [kernel.name for kernel in spec.kernels]
        nvcc_ms, by_nvcc = timed(compile_cubin, (source, spec.defines, path.name), args.repeat)
        nvrtc_ms, by_nvrtc = timed(nvrtc.nvrtc_cubin, (source, spec.defines, path.name), args.repeat)
        reported = by_nvrtc is not None and all(entry in by_nvrtc.resources for entry in entries)
        registers_nvcc = driver_registers(by_nvcc.image, entries)
        registers_nvrtc = driver_registers(by_nvrtc.image, entries) if by_nvrtc is not None else None
        for entry in entries:
            rows.append((spec.id, entry, nvcc_ms, nvrtc_ms, by_nvrtc is not None, reported,
                         registers_nvcc[entry] if registers_nvcc else None,
                         registers_nvrtc[entry] if registers_nvrtc else None))
        print(f"{spec.id}: nvcc {nvcc_ms:.0f} ms, NVRTC {nvrtc_ms:.0f} ms", file=sys.stderr)
    print(f"NVRTC {nvrtc.version()}; medians of {args.repeat} compiles")
    print("| stage | kernel | nvcc ms | NVRTC ms | NVRTC cubin | its report names it | registers nvcc | registers NVRTC |")
    print("|---|---|---:|---:|---|---|---:|---:|")
    for stage, entry, nvcc_ms, nvrtc_ms, made, reported, regs_nvcc, regs_nvrtc in rows:
        print(f"| {stage} | {entry} | {nvcc_ms:.0f} | {nvrtc_ms:.0f} | {'yes' if made else 'NO'} | "
              f"{'yes' if reported else 'no'} | {regs_nvcc if regs_nvcc is not None else '-'} | "
              f"{regs_nvrtc if regs_nvrtc is not None else '-'} |")


if __name__ == "__main__":
    main()
