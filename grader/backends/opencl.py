"""OpenCL through PyOpenCL, on any platform (NVIDIA, PoCL, ...), timed with profiling events."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from grader import pocl_scratch, settings
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
    compile_in_order,
    pci_id,
)
from grader.backends.confine import confined
from grader.backends.nvcc import parse_ptxas_report
from grader.backends.registry import BackendKind, JitCache, KernelSyntax, ShipError, Shipping, Target
from grader.course.sinks import for_regex_replacement

if TYPE_CHECKING:  # numpy is imported where it is used: `lab grade` reads KIND before it starts the worker
    import numpy as np


def all_devices() -> list[tuple[Any, Any]]:
    """Every (platform, device) pair, in a stable order: the index `--device` refers to."""
    import pyopencl as cl

    pairs: list[tuple[Any, Any]] = []
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        pairs.extend((platform, device) for device in devices)
    return pairs


def device_kind(device: Any) -> str:
    import pyopencl as cl

    if device.type & cl.device_type.GPU:
        return "gpu"
    if device.type & cl.device_type.CPU:
        return "cpu"
    return "other"



def compiler_scratch() -> list[Path]:
    """Where an OpenCL compiler writes as it builds: PoCL's cache folder and the shared cache
    its links lead to (grader.pocl_scratch), made first so that a confined build need not."""
    folder = pocl_scratch.shared_cache()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return []
    return [folder, folder.parent] if folder.name.startswith(pocl_scratch.PREFIX) else [folder]

class OpenCLBuffer(Buffer):
    def __init__(self, mem: Any, nbytes: int):
        self.mem = mem
        self.nbytes = nbytes


class OpenCLKernel(CompiledKernel):
    def __init__(self, name: str, kernel: Any, resources: KernelResources, build_log: str):
        self.name = name
        self.kernel = kernel
        self.resources = resources
        self.build_log = build_log
        self.program: Any = None  # the pyopencl program it is in (program_image)


_LOG_PATHS = re.compile(r"(?:/\S*/)?(?:tempfile_\w+\.cl|<kernel>|<source>|<stdin>|input\.cl)")


def _nvidia_limits(device: Any) -> dict[str, int]:
    """What NVIDIA's OpenCL tells through cl_nv_device_attribute_query."""
    limits: dict[str, int] = {}
    if "cl_nv_device_attribute_query" not in device.extensions:
        return limits
    for key, attr in {
        "cc_major": "compute_capability_major_nv",
        "cc_minor": "compute_capability_minor_nv",
        "registers_per_block": "registers_per_block_nv",
        "warp_size": "warp_size_nv",
    }.items():
        try:
            limits[key] = int(getattr(device, attr))
        except Exception:  # noqa: BLE001 - an attribute this driver lacks is simply absent
            continue
    return limits


class OpenCLBackend(Backend[OpenCLBuffer, OpenCLKernel]):
    name = "opencl"

    @property
    def row(self) -> BackendKind:
        return KIND

    def __init__(self, device_index: int = 0):
        import pyopencl as cl

        self._cl = cl
        pairs = all_devices()
        if device_index >= len(pairs):
            raise LaunchError(f"there is no OpenCL device {device_index} ({len(pairs)} found)")
        platform, device = pairs[device_index]
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        self.is_nvidia = "NVIDIA" in platform.name
        limits = {
            "max_threads_per_block": int(device.max_work_group_size),
            "shared_per_block": int(device.local_mem_size),
            "sm_count": int(device.max_compute_units),
            "base_align_bytes": int(device.mem_base_addr_align) // 8,
        }
        limits.update(_nvidia_limits(device))
        self.info = DeviceInfo(
            backend="opencl",
            name=device.name.strip(),
            kind=device_kind(device),
            vendor=device.vendor.strip(),
            platform=platform.name.strip(),
            memory_bytes=int(device.global_mem_size),
            compute_units=int(device.max_compute_units),
            l2_bytes=int(device.global_mem_cache_size),
            limits=limits,
        )
        self._scratch: OpenCLBuffer | None = None

    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, OpenCLKernel]:
        return self._compile(CompileUnit(source, tuple(entries), defines, filename))

    def compile_all(self, units: list[CompileUnit], before_untrusted: Callable[[], None] | None = None,
                    ) -> list[dict[str, OpenCLKernel] | CompileError]:
        return compile_in_order(units, self._compile, before_untrusted)

    def _compile(self, unit: CompileUnit) -> dict[str, OpenCLKernel]:
        cl = self._cl
        options = [f"-D{name}={value}" for name, value in unit.defines.items()]
        if self.is_nvidia:
            options.append("-cl-nv-verbose")
        source = unit.source
        if self.is_nvidia and not unit.trusted:
            # NVIDIA's driver reuses a cached binary for source it has seen, and then its log has
            # no register report: an entry point of its own makes every submission's build fresh.
            source += f"\n__kernel void lab_fresh_build_{secrets.token_hex(8)}(void) {{}}\n"
        key = kernel_cache.cache_key("opencl", self.info.platform, self.device.version, self.device.driver_version,
                                     self.info.name, unit.source, options) if unit.trusted and unit.image is None else ""
        cached = kernel_cache.load(key) if key else None
        if unit.image is not None:  # a students' copy's trusted kernel, shipped as PTX
            if not self.is_nvidia or unit.image.format != "ptx":
                raise CompileError(f"{unit.filename} is PTX, which only NVIDIA's OpenCL loads "
                                   f"(this device is on {self.info.platform})")
            cached = (unit.image.data, {"log": unit.image.log})
        # The low-level program: no include path of PyOpenCL's own, no cache shared with others.
        if cached is not None:
            program = cl._cl._Program(self.context, [self.device], [cached[0]])
        else:
            program = cl._cl._Program(self.context, source)
        try:
            # in a thread that reads only the toolchain's folders, and writes only PoCL's cache
            # (grader.backends.confine)
            confined(lambda: program._build(options=" ".join(options).encode(), devices=[self.device]),
                     writable=compiler_scratch())
            failed = False
        except cl.Error:
            failed = True
        if cached is not None and not failed:
            log = str(cached[1].get("log", ""))
        else:
            try:
                log = program.get_build_info(self.device, cl.program_build_info.LOG) or ""
            except cl.Error:
                log = ""
            log = _LOG_PATHS.sub(for_regex_replacement(unit.filename), log).strip()
        if failed:
            raise CompileError(log or "the OpenCL compiler rejected the source without a message")
        if key and cached is None:
            try:
                kernel_cache.store(key, bytes(program.get_info(cl.program_info.BINARIES)[0]), {"log": log})
            except cl.Error:
                pass
        reported = parse_ptxas_report(log) if self.is_nvidia else {}
        kernels = {}
        for entry in unit.entries:
            try:
                kernel = cl.Kernel(program, entry)
            except cl.Error as error:
                raise CompileError(f"no __kernel `{entry}` in the compiled program") from error
            info = cl.kernel_work_group_info
            report = reported.get(entry, KernelResources())
            resources = KernelResources(
                registers=report.registers,
                shared_bytes=int(kernel.get_work_group_info(info.LOCAL_MEM_SIZE, self.device)),
                spill_bytes=report.spill_bytes,
                local_bytes=int(kernel.get_work_group_info(info.PRIVATE_MEM_SIZE, self.device)),
                max_threads_per_block=self._max_threads(kernel),
                source="OpenCL kernel work-group info" + (" and -cl-nv-verbose" if reported else ""),
            )
            kernels[entry] = OpenCLKernel(entry, kernel, resources, log)
            kernels[entry].program = program
        return kernels

    def program_image(self, kernels: dict[str, OpenCLKernel]) -> ProgramImage | None:
        """NVIDIA's OpenCL only: its program's binary is PTX, which the CUDA driver loads
        (grader.backends.opencl_ptx); another platform's binary is of no use outside OpenCL."""
        kernel = next((k for k in kernels.values() if isinstance(k, OpenCLKernel) and k.program is not None), None)
        if not self.is_nvidia or kernel is None:
            return None
        try:
            binary = bytes(kernel.program.get_info(self._cl.program_info.BINARIES)[0])
        except self._cl.Error:
            return None
        return ProgramImage("ptx", binary.rstrip(b"\0"), kernel.build_log)

    def _max_threads(self, kernel: Any) -> int:
        """The largest work-group this kernel can be launched with. NVIDIA's driver answers the
        kernel query with 256 even where 1024 launches and runs (seen on an H200), so there
        the device's own limit is the one that holds; a too-large launch still fails clearly."""
        device_max = int(self.device.max_work_group_size)
        if self.is_nvidia:
            return device_max
        query = self._cl.kernel_work_group_info.WORK_GROUP_SIZE
        return min(device_max, int(kernel.get_work_group_info(query, self.device)))

    def alloc(self, nbytes: int) -> OpenCLBuffer:
        cl = self._cl
        try:
            mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(nbytes, 4))
        except cl.Error as error:
            raise LaunchError(f"cannot allocate {nbytes} bytes on the device: {error}") from error
        return OpenCLBuffer(mem, nbytes)

    def view(self, buffer: OpenCLBuffer, offset: int, nbytes: int) -> OpenCLBuffer:
        align = self.info.limits.get("base_align_bytes", 128)
        if offset % align:
            raise ValueError(f"sub-buffer offset {offset} is not a multiple of {align} bytes")
        return OpenCLBuffer(buffer.mem.get_sub_region(offset, nbytes), nbytes)

    def upload(self, buffer: OpenCLBuffer, array: np.ndarray) -> None:
        import numpy as np

        self._guard(lambda: self._cl.enqueue_copy(self.queue, buffer.mem, np.ascontiguousarray(array)).wait())

    def download(self, buffer: OpenCLBuffer, array: np.ndarray) -> None:
        self._guard(lambda: self._cl.enqueue_copy(self.queue, array, buffer.mem).wait())

    def fill32(self, buffer: OpenCLBuffer, bits: int) -> None:
        import numpy as np

        # Not waited for: the queue runs in order, so what comes next sees the fill.
        pattern = np.array([bits], dtype=np.uint32)  # the 4-byte word, as the array PyOpenCL takes
        self._guard(lambda: self._cl.enqueue_fill_buffer(self.queue, buffer.mem, pattern, 0, buffer.nbytes // 4 * 4))

    def copy(self, destination: OpenCLBuffer, source: OpenCLBuffer) -> None:
        self._guard(lambda: self._cl.enqueue_copy(self.queue, destination.mem, source.mem, byte_count=source.nbytes))

    def release(self, buffer: OpenCLBuffer) -> None:
        buffer.mem.release()

    def _enqueue(self, kernel: OpenCLKernel, grid: tuple[int, ...], block: tuple[int, ...], args: list[Any]) -> Any:
        """Queue one launch (its arguments are taken as they are now); its event."""
        kernel.kernel.set_args(*[a.mem if isinstance(a, OpenCLBuffer) else a for a in args])
        global_size = tuple(g * b for g, b in zip(grid, block))
        return self._cl.enqueue_nd_range_kernel(self.queue, kernel.kernel, global_size, tuple(block))

    def launch(self, kernel: OpenCLKernel, grid: tuple[int, ...], block: tuple[int, ...],
               args: list[Any], shared: int = 0) -> None:
        """`shared` is ignored: OpenCL C has no dynamic local memory outside kernel parameters."""
        self._guard(lambda: self._enqueue(kernel, grid, block, args).wait())

    def enqueue(self, kernel: OpenCLKernel, grid: tuple[int, ...], block: tuple[int, ...],
                args: list[Any]) -> None:
        self._guard(lambda: self._enqueue(kernel, grid, block, args))

    def time_launches(self, launches: list[KernelLaunch[OpenCLKernel]]) -> list[float]:
        """From each launch's own profiling start and end: the host's time is never in them."""

        def run() -> list[float]:
            events = [self._enqueue(launch.kernel, launch.grid, launch.block, launch.args) for launch in launches]
            self._cl.wait_for_events(events)
            return [(event.profile.end - event.profile.start) * 1e-9 for event in events]

        return self._guard(run)

    def stable_id(self, index: int) -> str:
        try:
            # NVIDIA's OpenCL (cl_nv_device_attribute_query): the PCI address CUDA reports too.
            device = self.device
            return pci_id(int(device.pci_domain_id_nv), int(device.pci_bus_id_nv), int(device.pci_slot_id_nv))
        except Exception:  # noqa: BLE001 - not NVIDIA's, or an older driver
            return super().stable_id(index)

    def _guard(self, action: Any) -> Any:
        try:
            return action()
        except self._cl.Error as error:
            raise LaunchError(_describe(error)) from error

    def flush_l2(self) -> None:
        import numpy as np

        nbytes = max(2 * self.info.l2_bytes, 64 << 20)
        if self.info.kind == "cpu":
            nbytes = 2 * self.info.l2_bytes or (64 << 20)
        if self._scratch is None:
            self._scratch = self.alloc(nbytes)
        zero = np.zeros(1, dtype=np.uint32)
        self._cl.enqueue_fill_buffer(self.queue, self._scratch.mem, zero, 0, nbytes).wait()


def _describe(error: Exception) -> str:
    text = str(error)
    if "OUT_OF_RESOURCES" in text:
        return ("CL_OUT_OF_RESOURCES: the kernel failed on the device (often a read or write "
                f"out of bounds) or asked for more than it has: {text}")
    if "-9999" in text:  # NVIDIA's OpenCL, for a kernel that faulted (seen on an H200)
        return f"the kernel faulted (NVIDIA's error -9999: usually a read or write out of bounds): {text}"
    if "INVALID_WORK_GROUP_SIZE" in text:
        return f"the work-group size is not one this device accepts for this kernel: {text}"
    return text


def probe() -> tuple[list[Target], str | None]:
    """OpenCL devices of every platform, or why there are none."""
    from grader.backends import install_hint

    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return [], install_hint.opencl_missing()
    try:
        pairs = all_devices()
    except Exception as error:  # noqa: BLE001 - no ICD loader or no platform
        return [], f"no OpenCL platform ({error}); {install_hint.no_opencl_device()}"
    if not pairs:
        return [], f"no OpenCL device found; {install_hint.no_opencl_device()}"
    return [Target(KIND, i, d.name.strip(), device_kind(d), p.name.strip())
            for i, (p, d) in enumerate(pairs)], None


def preload() -> None:
    """The ICD loader and its platforms loaded."""
    try:
        import pyopencl as cl

        cl.get_platforms()
    except Exception:  # noqa: BLE001 - opening the device later reports what is wrong
        pass


def sandbox_paths() -> list[str]:
    """/etc/OpenCL, the OpenCL ICD loader's vendor lists (OCL_ICD_VENDORS, OPENCL_VENDOR_PATH,
    /etc/OpenCL/vendors) and the drivers their .icd files name by absolute path; and the NVIDIA
    driver's files outside /usr (NVIDIA's OpenCL)."""
    named = (settings.value(settings.OCL_ICD_VENDORS), settings.value(settings.OPENCL_VENDOR_PATH))
    lists = [*(str(entry) for entry in named if entry is not None), "/etc/OpenCL/vendors"]
    found = ["/etc/OpenCL", *nvidia_driver.FILES]
    for entry in lists:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        found.append(entry)
        icds = [Path(entry)] if os.path.isfile(entry) else sorted(Path(entry).glob("*.icd"))
        for icd in icds:
            try:
                library = icd.read_text(errors="replace").strip()
            except OSError:
                continue
            if os.path.isabs(library) and os.path.exists(library):
                found.append(library)
    return found


# A context on each of NVIDIA's OpenCL devices: its driver's own kernels, compiled and kept in
# the CUDA JIT cache (grader.sandbox copies that cache into each sandboxed worker).
NVIDIA_JIT_WARMUP = ("import pyopencl as cl\n"
                     "for p in cl.get_platforms():\n"
                     "    if 'NVIDIA' in p.name:\n"
                     "        for d in p.get_devices():\n"
                     "            cl.CommandQueue(cl.Context([d])).finish()\n")
NVIDIA_JIT_CACHE = JitCache(NVIDIA_JIT_WARMUP, nvidia_driver.JIT_CACHE_ENV, nvidia_driver.JIT_CACHE_HOME,
                            nvidia_driver.JIT_TEMPLATES, nvidia_driver.driver_version)

# PoCL makes the machine code of a kernel at its first launch (0.18 s for the grader's checksum
# on a 2-core CPU) and keeps it in its kernel cache: the template holds the grader's own kernels,
# launched once on each CPU device (grader.sandbox copies it into each sandboxed worker; PoCL's
# cache is keyed by its build and the device, so a template from another PoCL is only missed).
POCL_WARMUP = ("from grader.backends.discovery import discover\n"
               "from grader.backends.opencl import KIND\n"
               "from grader.device_ops import DeviceOps\n"
               "for target in discover((KIND,)).of(KIND):\n"
               "    if target.kind == 'cpu':\n"
               "        DeviceOps(KIND.open(target.index)).warm_up()\n")


def pocl_version() -> str | None:
    """What names PoCL's kernel-cache template: PoCL's version here (the pocl-binary-distribution
    package's, else the system's library) with a digest of the grader's kernels; None where no
    PoCL is installed."""
    import hashlib
    import importlib.metadata
    import platform

    try:
        version = importlib.metadata.version("pocl-binary-distribution")
    except importlib.metadata.PackageNotFoundError:
        import ctypes.util

        version = ctypes.util.find_library("pocl") or ""
    if not version:
        return None
    source = Path(__file__).resolve().parent.parent / "kernels" / "device_ops.cl"
    try:
        digest = hashlib.sha256(source.read_bytes() + platform.machine().encode()).hexdigest()[:12]
    except OSError:
        return None
    return f"{version}-{digest}"


POCL_KERNEL_CACHE = JitCache(POCL_WARMUP, "POCL_CACHE_DIR", ".cache/pocl/kcache", "pocl-kernel-cache", pocl_version)

_PTX_TARGET = re.compile(rb"^\s*\.target\s+(sm_\d+)", re.M)


class NvidiaOpenCLPtx:
    """NVIDIA's OpenCL on this machine, which compiles OpenCL C to PTX for its first GPU: trusted
    kernels for a students' copy of the course (grader.backends.registry.ReleaseCompiler;
    lab.release), one sm_XY each. `why_not` says why there is none here (then no OpenCL PTX is
    made); the release file's architectures are CUDA's (nvcc's) and not read."""

    def __init__(self, archs: tuple[str, ...] = ()):
        self.context: Any = None
        self.device: Any = None
        self.why_not = ""
        try:
            import pyopencl as cl
        except ImportError:
            self.why_not = "pyopencl is not installed where the release was made"
            return
        try:
            for platform in cl.get_platforms():
                if "NVIDIA" in platform.name:
                    gpus = platform.get_devices()
                    if gpus:
                        self.device = gpus[0]
                        self.context = cl.Context([self.device])
                        return
        except cl.Error as error:
            self.why_not = f"OpenCL did not start where the release was made: {error}"
            return
        self.why_not = ("the release was made where NVIDIA's OpenCL is absent (it alone compiles OpenCL C "
                        "to PTX): make the release on a machine with an NVIDIA GPU to ship it")

    def compile(self, source: str, defines: dict[str, int | float], filename: str,
                progress: Callable[[str], None]) -> list[tuple[str, bytes]]:
        """[(sm_XY, the PTX of `source`)]. Raises ShipError where there is no NVIDIA OpenCL
        (`why_not`), or the source does not build."""
        import pyopencl as cl

        if self.context is None or self.device is None:
            raise ShipError(f"{filename}: {self.why_not or 'NVIDIA OpenCL is not open'}")
        progress(f"NVIDIA OpenCL {filename}")
        program = cl._cl._Program(self.context, source)
        options = " ".join(f"-D{name}={value}" for name, value in defines.items())
        try:
            program._build(options=options.encode(), devices=[self.device])
        except cl.Error as error:
            raise ShipError(f"{filename} does not build with NVIDIA's OpenCL: {error}") from None
        # get_info's type follows the parameter asked for: BINARIES is one bytes per device
        binaries = cast(list[bytes], program.get_info(cl.program_info.BINARIES))
        ptx = bytes(binaries[0])  # as NVIDIA's OpenCL loads it back
        target = _PTX_TARGET.search(ptx)
        if target is None:
            raise ShipError(f"NVIDIA's OpenCL gave {filename} a binary that is not PTX")
        return [(target.group(1).decode(), ptx)]


_NESTED = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"  # parentheses, nested up to three deep
_ATTRIBUTE = rf"__attribute__\s*{_NESTED}"  # e.g. __attribute__((reqd_work_group_size(16, 16, 1)))
KERNEL_DECLARATION = re.compile(
    rf"(?:__kernel|\bkernel)\s+(?:{_ATTRIBUTE}\s*)*void\s+(?:{_ATTRIBUTE}\s*)*"
    r"(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)"
)

KIND = BackendKind(
    name="opencl", suffix=".cl", language="OpenCL C",
    syntax=KernelSyntax(entry="__kernel", declaration=KERNEL_DECLARATION, pointer_space="__global",
                        host_calls=r"clCreate\w+|clEnqueue\w+",
                        barrier="barrier(CLK_LOCAL_MEM_FENCE)", shared_memory="local memory",
                        threads="work-items", block="work-group", label="OpenCL", terms=(
                            *((f"threadIdx.{axis}", f"get_local_id({n})") for n, axis in enumerate("xyz")),
                            *((f"blockIdx.{axis}", f"get_group_id({n})") for n, axis in enumerate("xyz")),
                            *((f"blockDim.{axis}", f"get_local_size({n})") for n, axis in enumerate("xyz")),
                            *((f"gridDim.{axis}", f"get_num_groups({n})") for n, axis in enumerate("xyz")),
                            ("__syncthreads()", "barrier(CLK_LOCAL_MEM_FENCE)"), ("__shared__", "__local"),
                            ("shared memory", "local memory"), ("shared tile", "local tile"))),
    probe=probe, open=OpenCLBackend, preload=preload, sandbox_paths=sandbox_paths,
    # NVIDIA's OpenCL (its driver's), Intel's and AMD's GPUs (/dev/dri, /dev/kfd); PoCL needs none.
    device_nodes=(*nvidia_driver.DEVICE_NODES, "/dev/dri", "/dev/kfd"),
    sandbox_env=("OCL_", "POCL_", "PYOPENCL_", *nvidia_driver.ENV_PREFIXES),
    cache_env=("POCL_CACHE_DIR", nvidia_driver.JIT_CACHE_ENV),
    counters_route="opencl-ptx-through-cuda", counters_through_cuda=True, scratch_env="POCL_CACHE_DIR",
    jit_caches=(NVIDIA_JIT_CACHE, POCL_KERNEL_CACHE), shipping=Shipping("PTX", NvidiaOpenCLPtx), auto_rank=10,
    without_a_gpu=True,
)
