"""CUDA through PyCUDA: nvcc compiles to a cubin (with its resource report), PyCUDA loads and
launches it and times it with CUDA events."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import settings
from grader.backends import kernel_cache, nvidia_driver
from grader.backends.base import (
    Backend,
    Buffer,
    CompiledKernel,
    CompileError,
    CompileUnit,
    DeviceInfo,
    KernelLaunch,
    KernelResources,
    LaunchError,
    ProgramImage,
    pci_id,
    trusted_first,
)
from grader.backends.cuda_launch_gate import LaunchGate
from grader.backends.nvcc import Cubin, NvccPtx, nvcc_path, nvcc_version, parse_ptxas_report
from grader.backends.nvrtc import compile_cubin, compiler_name
from grader.backends.registry import BackendKind, KernelSyntax, Shipping, Target

if TYPE_CHECKING:  # numpy is imported where it is used: `lab grade` reads KIND before it starts the worker
    import numpy as np


class CudaBuffer(Buffer):
    def __init__(self, pointer: int, nbytes: int, allocation: Any = None):
        self.pointer = pointer
        self.nbytes = nbytes
        self.allocation = allocation  # keeps the memory alive; None for views


class CudaKernel(CompiledKernel):
    def __init__(self, name: str, function: Any, resources: KernelResources, build_log: str):
        self.name = name
        self.function = function
        self.resources = resources
        self.build_log = build_log
        self.prepared: str | None = None
        self.program: Cubin | None = None  # what it was loaded from (program_image)


def _attributes(device: Any) -> dict[str, int]:
    import pycuda.driver as drv

    wanted = {
        "warp_size": "WARP_SIZE",
        "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
        "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
        "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
        "registers_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
        "registers_per_block": "MAX_REGISTERS_PER_BLOCK",
        "shared_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
        "shared_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
        "shared_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
        "reserved_shared_per_block": "RESERVED_SHARED_MEMORY_PER_BLOCK",
        "sm_count": "MULTIPROCESSOR_COUNT",
        "l2_bytes": "L2_CACHE_SIZE",
        "cc_major": "COMPUTE_CAPABILITY_MAJOR",
        "cc_minor": "COMPUTE_CAPABILITY_MINOR",
    }
    limits = {}
    for key, attr in wanted.items():
        enum = getattr(drv.device_attribute, attr, None)
        if enum is None:
            continue
        try:
            limits[key] = int(device.get_attribute(enum))
        except drv.Error:
            continue
    limits.setdefault("register_granularity", 256)
    limits.setdefault("shared_granularity", 128)
    return limits


class CudaBackend(Backend[CudaBuffer, CudaKernel]):
    name = "cuda"

    @property
    def row(self) -> BackendKind:
        return KIND

    def __init__(self, device_index: int = 0, *, own_context: bool = False):
        """`own_context`: a context of this backend's own (made current on the thread that first
        uses it), not the device's primary context that the grading's own backend shares."""
        import pycuda.driver as drv

        self._drv = drv
        drv.init()
        if device_index >= drv.Device.count():
            raise LaunchError(f"there is no CUDA device {device_index} ({drv.Device.count()} found)")
        self.device = drv.Device(device_index)
        self.context: Any = None  # made on first use: compile_all overlaps it with nvcc
        self._own_context = own_context
        limits = _attributes(self.device)
        self.arch = f"sm_{limits.get('cc_major', 9)}{limits.get('cc_minor', 0)}"
        self.info = DeviceInfo(
            backend="cuda",
            name=self.device.name(),
            kind="gpu",
            vendor="NVIDIA",
            platform=f"CUDA {'.'.join(map(str, drv.get_version()))}",
            memory_bytes=int(self.device.total_memory()),
            compute_units=limits.get("sm_count", 0),
            l2_bytes=limits.get("l2_bytes", 0),
            limits=limits,
        )
        self._scratch: CudaBuffer | None = None
        self._modules: list[Any] = []
        self._kept_modules = 0  # the first modules, the grader's own, that forget_programs keeps

    def _ready(self) -> None:
        """Make the device context current (once): the driver's slowest step after its init."""
        if self.context is None:
            if self._own_context:
                self.context = self.device.make_context()  # made current here
            else:
                self.context = self.device.retain_primary_context()
                self.context.push()
            self._events: list[tuple[Any, Any]] = []  # (start, end) pairs for time_launches, made as needed
            # The launch gate, made at the first timed run: the sanitizer's and the counters'
            # runs never time a launch, and load no module of the grader's.
            self._gate: LaunchGate | None = None

    def _cubin(self, unit: CompileUnit) -> Cubin:
        """The cubin for `unit` (grader.backends.nvrtc: NVRTC's, else nvcc's); a trusted unit's comes
        from the kernel cache when it can; a shipped PTX (unit.image) is handed to the driver,
        which compiles it for this GPU as it loads it."""
        if unit.image is not None:
            return _shipped(unit.image)
        if not unit.trusted:
            return compile_cubin(unit.source, unit.defines, unit.filename, arch=self.arch, entries=unit.entries)
        key = kernel_cache.cache_key("cuda", self.arch, nvcc_version(), compiler_name(), unit.source,
                                     unit.defines, unit.filename)
        cached = kernel_cache.load(key)
        if cached is not None:
            image, meta = cached
            return Cubin(image, parse_ptxas_report(meta["log"]), meta["log"])
        cubin = compile_cubin(unit.source, unit.defines, unit.filename, arch=self.arch, entries=unit.entries)
        kernel_cache.store(key, cubin.image, {"log": cubin.log})
        return cubin

    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, CudaKernel]:
        return self._load(self._cubin(CompileUnit(source, tuple(entries), defines, filename)), entries)

    def compile_all(self, units: list[CompileUnit], before_untrusted: Callable[[], None] | None = None,
                    ) -> list[dict[str, CudaKernel] | CompileError]:
        """Run nvcc for every unit at once (each in a process of its own), and make the context
        while they run; load the trusted cubins into this process first."""
        results: list[dict[str, CudaKernel] | CompileError | None] = [None] * len(units)
        order = trusted_first(units)
        hook = before_untrusted
        with ThreadPoolExecutor(max_workers=max(1, len(units))) as pool:
            futures = {i: pool.submit(self._cubin, units[i]) for i in order}
            self._ready()
            for i in order:
                if not units[i].trusted and hook is not None:
                    hook()
                    hook = None
                try:
                    results[i] = self._load(futures[i].result(), list(units[i].entries))
                except CompileError as error:
                    results[i] = error
        if hook is not None:
            hook()
        return [result for result in results if result is not None]  # trusted_first: every index is filled

    def program_image(self, kernels: dict[str, CudaKernel]) -> ProgramImage | None:
        cubin = next((k.program for k in kernels.values() if isinstance(k, CudaKernel)), None)
        return ProgramImage("cubin", cubin.image, cubin.log) if cubin is not None else None

    def load_program(self, image: ProgramImage, entries: list[str]) -> dict[str, CudaKernel]:
        if image.format == "ptx":
            return self._load(_shipped(image), entries)
        if image.format != "cubin":
            raise CompileError(f"the CUDA backend loads a cubin or PTX, not {image.format}")
        return self._load(Cubin(image.data, parse_ptxas_report(image.log), image.log), entries)

    def _load(self, cubin: Cubin, entries: list[str]) -> dict[str, CudaKernel]:
        self._ready()
        try:
            module = self._drv.module_from_buffer(cubin.image)
        except self._drv.Error as error:
            raise CompileError(f"the CUDA driver could not load the compiled kernel: {error}") from error
        kernels = {}
        for entry in entries:
            try:
                function = module.get_function(entry)
            except self._drv.Error as error:
                raise CompileError(
                    f'no kernel `{entry}` in the compiled code (is it declared extern "C" __global__?)'
                ) from error
            report = cubin.resources.get(entry, KernelResources())
            resources = KernelResources(
                registers=int(function.num_regs),
                shared_bytes=int(function.shared_size_bytes),
                spill_bytes=report.spill_bytes,
                local_bytes=int(function.local_size_bytes),
                max_threads_per_block=int(function.max_threads_per_block),
                source="ptxas -v (through NVRTC or nvcc) and the CUDA driver",
            )
            kernels[entry] = CudaKernel(entry, function, resources, cubin.log)
            kernels[entry].program = cubin
        self._modules.append(module)  # its functions need it alive
        return kernels

    def alloc(self, nbytes: int) -> CudaBuffer:
        self._ready()
        try:
            allocation = self._drv.mem_alloc(max(nbytes, 4))
        except self._drv.MemoryError as error:
            raise LaunchError(f"cannot allocate {nbytes} bytes on the GPU: {error}") from error
        return CudaBuffer(int(allocation), nbytes, allocation)

    def view(self, buffer: CudaBuffer, offset: int, nbytes: int) -> CudaBuffer:
        return CudaBuffer(buffer.pointer + offset, nbytes, buffer.allocation)

    def upload(self, buffer: CudaBuffer, array: np.ndarray) -> None:
        import numpy as np

        self._drv.memcpy_htod(buffer.pointer, np.ascontiguousarray(array))

    def download(self, buffer: CudaBuffer, array: np.ndarray) -> None:
        self._drv.memcpy_dtoh(array, buffer.pointer)

    def fill32(self, buffer: CudaBuffer, bits: int) -> None:
        self._drv.memset_d32(buffer.pointer, int(bits), buffer.nbytes // 4)

    def copy(self, destination: CudaBuffer, source: CudaBuffer) -> None:
        self._drv.memcpy_dtod_async(destination.pointer, source.pointer, source.nbytes)

    def release(self, buffer: CudaBuffer) -> None:
        if buffer.allocation is not None:
            buffer.allocation.free()
            buffer.allocation = None

    def _call(self, kernel: CudaKernel, grid: tuple[int, ...], block: tuple[int, ...],
              args: list[Any]) -> tuple[Any, tuple[int, ...], tuple[int, ...], list[Any]]:
        """The prepared function, its 3-D shape and its argument values, ready to queue."""
        types = "".join("P" if isinstance(a, CudaBuffer) else _prepare_code(a) for a in args)
        if kernel.prepared != types:
            kernel.function.prepare(types)
            kernel.prepared = types
        values = [a.pointer if isinstance(a, CudaBuffer) else a for a in args]
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        block3 = tuple(block) + (1,) * (3 - len(block))
        return kernel.function, grid3[:3], block3, values

    def launch(self, kernel: CudaKernel, grid: tuple[int, ...], block: tuple[int, ...],
               args: list[Any], shared: int = 0) -> None:
        self._ready()
        try:
            function, grid3, block3, values = self._call(kernel, grid, block, args)
            function.prepared_async_call(grid3, block3, None, *values, shared_size=shared)
            self.context.synchronize()
        except self._drv.Error as error:
            raise LaunchError(_describe(error)) from error

    def enqueue(self, kernel: CudaKernel, grid: tuple[int, ...], block: tuple[int, ...],
                args: list[Any]) -> None:
        self._ready()
        try:
            function, grid3, block3, values = self._call(kernel, grid, block, args)
            function.prepared_async_call(grid3, block3, None, *values)  # the default stream: in order
        except self._drv.Error as error:
            raise LaunchError(_describe(error)) from error

    def launch_gate(self) -> LaunchGate:
        """This context's launch gate (cuda_launch_gate), made on first use."""
        self._ready()
        if self._gate is None:
            self._gate = LaunchGate(self._drv)
        return self._gate

    def time_launches(self, launches: list[KernelLaunch[CudaKernel]]) -> list[float]:
        """Each launch between a start and an end event, all queued behind the launch gate
        (cuda_launch_gate): the first start event is stamped once everything is queued, and
        each later one when the launch before it ends."""
        self._ready()
        try:
            calls = [self._call(launch.kernel, launch.grid, launch.block, launch.args) for launch in launches]
            shared = [launch.shared for launch in launches]
            while len(self._events) < len(calls):
                self._events.append((self._drv.Event(), self._drv.Event()))
            events = self._events[:len(calls)]
            gate = self.launch_gate()
            gate.hold()
            try:
                for (start, end), (function, grid3, block3, values), size in zip(events, calls, shared):
                    start.record()
                    function.prepared_async_call(grid3, block3, None, *values, shared_size=size)
                    end.record()
            finally:
                gate.release()
            events[-1][1].synchronize()
            return [start.time_till(end) / 1e3 for start, end in events]
        except self._drv.Error as error:
            raise LaunchError(_describe(error)) from error

    def flush_l2(self) -> None:
        nbytes = max(2 * self.info.l2_bytes, 64 << 20)
        if self._scratch is None:
            self._scratch = self.alloc(nbytes)
        self._drv.memset_d32_async(self._scratch.pointer, 0, nbytes // 4)

    def profiler(self, collecting: bool) -> None:
        """cuProfilerStart or cuProfilerStop, in this context (PyCUDA's start_profiler)."""
        self._ready()
        try:
            (self._drv.start_profiler if collecting else self._drv.stop_profiler)()
        except self._drv.Error as error:
            raise LaunchError(_describe(error)) from error

    def free_bytes(self) -> int | None:
        try:
            import pycuda.driver as drv

            return int(drv.mem_get_info()[0])
        except Exception:  # noqa: BLE001 - no context yet, or an old driver
            return None

    def stable_id(self, index: int) -> str:
        """The GPU's PCI address, which NVIDIA's OpenCL reports too."""
        try:
            import pycuda.driver as drv

            attr = drv.device_attribute
            return pci_id(self.device.get_attribute(attr.PCI_DOMAIN_ID), self.device.get_attribute(attr.PCI_BUS_ID),
                          self.device.get_attribute(attr.PCI_DEVICE_ID))
        except Exception:  # noqa: BLE001 - a driver without the attributes: named by index
            return f"cuda:{self.info.name}:{index}"

    def stack_bytes(self) -> int | None:
        try:
            return int(self._drv.Context.get_limit(self._drv.limit.STACK_SIZE))
        except Exception:  # noqa: BLE001 - no context, or a driver that does not say
            return None

    def uses_device_heap(self, kernels: Iterable[CudaKernel]) -> bool:
        return any(kernel.program is not None and kernel.program.calls_device_heap for kernel in kernels)

    def keep_programs(self) -> None:
        self._kept_modules = len(self._modules)

    def forget_programs(self) -> None:
        del self._modules[self._kept_modules:]  # each unloaded once its functions are let go

    def close(self) -> None:
        if self.context is None:
            return
        self._modules.clear()  # they hold the context: a context of its own is destroyed at detach
        try:
            self.context.pop()
            self.context.detach()
        except self._drv.Error:
            pass


def _shipped(image: ProgramImage) -> Cubin:
    """A PTX image as the driver takes it (a NUL-terminated text), or a cubin as it is."""
    data = image.data
    if image.format == "ptx" and not data.endswith(b"\0"):
        data += b"\0"
    return Cubin(data, {}, image.log)


def _prepare_code(value: Any) -> str:
    import numpy as np

    dtype = np.asarray(value).dtype
    return {np.dtype(np.int32): "i", np.dtype(np.uint32): "I", np.dtype(np.float32): "f",
            np.dtype(np.float64): "d", np.dtype(np.int64): "q"}[dtype]


def _describe(error: Exception) -> str:
    text = str(error)
    lowered = text.lower()
    if "illegal address" in lowered or "illegal memory" in lowered:
        return f"illegal memory access (a read or write out of bounds): {text}"
    if "address space" in lowered:  # seen on an H200 for an address gigabytes past a buffer
        return f"illegal memory access (an address outside any buffer): {text}"
    if "launch timeout" in lowered:
        return f"the kernel ran too long and the driver stopped it: {text}"
    if "out of resources" in lowered or "too many resources" in lowered:
        return f"the launch asks for more resources than the GPU has: {text}"
    return text


def probe() -> tuple[list[Target], str | None]:
    """CUDA devices, or why there are none: PyCUDA, the driver, a GPU and nvcc are all needed."""
    try:
        import pycuda.driver as drv
    except ImportError:
        from grader.backends.install_hint import cuda_missing

        return [], cuda_missing()
    except OSError as error:  # libcuda.so missing: no NVIDIA driver
        return [], f"no NVIDIA driver ({error})"
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as error:  # noqa: BLE001 - any driver failure is a reason to show
        return [], f"the CUDA driver did not start: {error}"
    if count == 0:
        return [], "the NVIDIA driver sees no GPU"
    if nvcc_path() is None:
        return [], "nvcc (the CUDA compiler) is not on PATH"
    return [Target(KIND, i, drv.Device(i).name(), "gpu", "CUDA") for i in range(count)], None


def preload() -> None:
    """The driver started and nvcc's version read (part of every kernel's cache key)."""
    try:
        import pycuda.driver as drv

        drv.init()
        nvcc_version()
    except Exception:  # noqa: BLE001 - opening the device later reports what is wrong
        pass


def sandbox_paths() -> list[str]:
    """The CUDA toolkit (nvcc, compute-sanitizer), where the worker calls it; Nsight Compute's
    folder (ncu, or LAB_NCU), which runs in the sandbox in front of the profiling entry
    (grader.counters.runner); and the NVIDIA driver's files outside /usr."""
    found = list(nvidia_driver.FILES)
    for name in ("nvcc", "compute-sanitizer", settings.value(settings.NCU).path or "ncu"):
        tool = shutil.which(name)
        for folder in ("/usr/local/cuda/bin", "/opt/cuda/bin"):
            if tool is None and os.path.exists(os.path.join(folder, name)):
                tool = os.path.join(folder, name)
        if tool is not None:
            real = Path(tool).resolve()
            root = real.parent.parent if real.parent.name == "bin" else real.parent
            found.append(str(root))
            found.append(os.path.dirname(tool))
            if name not in ("nvcc", "compute-sanitizer"):
                found += nsight_compute_installs(root)
    return found


def nsight_compute_installs(cuda_root: Path, opt: Path = Path("/opt/nvidia")) -> list[str]:
    """Where the toolkit's `ncu` launcher looks for Nsight Compute itself: a nsight-compute*
    folder beside its bin/, or under /opt/nvidia, often a link from the one to the other (seen on
    an H100: inside the sandbox the launcher said "nsight-compute directory is not found under
    /usr/local/cuda-13.0/bin/../ or /opt/nvidia"). Each is given as the folder it really is."""
    found = []
    for parent in (cuda_root, opt):
        try:
            found += [str(entry.resolve()) for entry in sorted(parent.glob("nsight-compute*"))]
        except OSError:
            continue
    return found


_NESTED = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"  # parentheses, nested up to three deep
_BOUNDS = rf"__launch_bounds__\s*{_NESTED}"
KERNEL_DECLARATION = re.compile(
    rf"(?P<export>extern\s+\"C\"\s*)?(?:(?:static|inline|{_BOUNDS})\s*)*"
    rf"__global__\s+(?:{_BOUNDS}\s*)?void\s+"
    rf"(?:{_BOUNDS}\s*)?(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)"
)

KIND = BackendKind(
    name="cuda", suffix=".cu", language="CUDA",
    syntax=KernelSyntax(entry="__global__", declaration=KERNEL_DECLARATION, exported='extern "C"',
                        host_calls=r"cudaMalloc\w*|cudaMemcpy\w*|cudaFree|cudaDeviceSynchronize",
                        barrier="__syncthreads()", shared_memory="shared memory", threads="threads",
                        block="block", label="CUDA"),
    probe=probe, open=CudaBackend, preload=preload, sandbox_paths=sandbox_paths,
    device_nodes=nvidia_driver.DEVICE_NODES, sandbox_env=(*nvidia_driver.ENV_PREFIXES, "PYCUDA_"),
    cache_env=(nvidia_driver.JIT_CACHE_ENV,),
    counters_route="cuda", sanitizer=True, shipping=Shipping("PTX", NvccPtx), auto_rank=0,
    toolkit_headers=frozenset({
        "cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/scan.h",
        "cooperative_groups/memcpy_async.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h",
        "device_launch_parameters.h", "math_constants.h", "mma.h", "cuda_pipeline.h",
        "cuda/barrier", "cuda/pipeline", "cuda/std/cstdint",
    }),
    dynamic_shared="extern __shared__",
)
