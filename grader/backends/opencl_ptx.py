"""OpenCL kernels run through the CUDA driver, for Nsight Compute only (grader.counters): ncu
profiles no kernel of an OpenCL program, but NVIDIA's OpenCL hands out its program's binary as
PTX, and the CUDA driver loads PTX. This backend builds each unit with NVIDIA's OpenCL (the
defines grader.backends.opencl passes), checks the PTX, reads the values OpenCL's runtime fills
(%envreg0-%envreg8: offsets as 0, the group counts as %nctaid), loads it with the CUDA driver
and leaves everything else (buffers, launches, events, the kernels' resources) to CudaBackend.

What is refused (PtxRefused, with one line), because a CUDA launch would not run it as OpenCL
does: a .target other than this GPU's sm_XX; any special register CUDA does not fill as
OpenCL's runtime does (%envreg9 and up, %pm0, %dynamic_smem_size, cluster registers, ...; the
clocks and %globaltimer are kept: the hardware fills them whichever API launched the kernel, and
they change none of its work), and %envreg0-%envreg8 anywhere but a plain `mov` (the one form
rewritten); an entry parameter that is a __local,
__constant or image/sampler argument (no CUDA counterpart without the OpenCL runtime). The
profiling entry still compares every launch's outputs with the problem's oracle: a kernel that
passes these checks and runs differently shows no counters (grader.counters.entry).

The %envreg registers a kernel reads are given the values ENVREG_READS_AS lists (a PTX launched
with them unread writes out of bounds). benchmarks/opencl_ptx_under_cuda.py and
benchmarks/counters_both_backends.py check, on a GPU, that each reference's .cl file reads the
counters its .cu twin reads; their results are in docs/performance.md.

Not in the backend table (grader.backends.registry): only the profiling entry opens it. pycuda and
pyopencl are imported when it is opened, never when this module is imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from grader.backends import kernel_cache
from grader.backends.base import (
    CompileError,
    CompileUnit,
    LaunchError,
    ProgramImage,
    compile_in_order,
)
from grader.backends.cuda import CudaBackend, CudaKernel
from grader.backends.nvcc import Cubin

RESOURCES_SOURCE = "the CUDA driver, for the PTX of NVIDIA's OpenCL"

# Special registers a CUDA launch fills exactly as an OpenCL launch of the same grid and block
# does (PTX ISA, "Special Registers"): the thread's and block's indices and counts, the lane and
# warp, the SM, the clocks. Every other one is refused, except %envreg0-%envreg8 (below).
CUDA_FILLED = frozenset({
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt",
    "clock", "clock_hi", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi",
})
# The %envreg registers NVIDIA's OpenCL runtime fills and the CUDA driver leaves undefined, and
# what a CUDA launch of the lab's (one grid, no global offset) reads in their place. Which builtin
# reads which, from the PTX NVIDIA's OpenCL made of one-call kernels on the H100 (driver 580.159):
#   %envreg0-2  the group offset of dimension 0-2: get_group_id(d) = %envreg<d> + %ctaid.d  -> 0
#   %envreg3-5  the global offset: get_global_id(d) = %ntid.d * %ctaid.d + %tid.d + %envreg<3+d> -> 0
#   %envreg6-8  get_num_groups(d) (and get_global_size(d) = %envreg<6+d> * %ntid.d)  -> %nctaid.d
#   %envreg9    get_work_dim(): refused (a CUDA launch has no such number)
# A launch of 256 x 8 work-items in groups of 32 x 4 read get_num_groups = 8, 2 and
# get_global_offset(0) = 0 there. A mov of 0 in place of an offset was first tried on
# transpose_naive: its output through CUDA equalled OpenCL's. Only a plain `mov` is rewritten; the
# entry's oracle check covers the rest.
ENVREG_READS_AS = {0: "0", 1: "0", 2: "0", 3: "0", 4: "0", 5: "0",
                   6: "%nctaid.x", 7: "%nctaid.y", 8: "%nctaid.z"}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|\"[^\"\n]*\"", re.S)
_DECLARED = re.compile(r"\.reg\s+(?:\.\w+\s+)+([^;]*);")
_USED = re.compile(r"%(\w+)")
_TARGET = re.compile(r"^\s*\.target\s+([^\s,]+)", re.M)
_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\((.*?)\)", re.S)
_MOV_ENVREG = re.compile(r"^(\s*(?:@!?%\w+\s+)?mov\.)([bsu]32)(\s+%\w+\s*,\s*)%envreg(\d+)(\s*;)", re.M)
# Parameter state spaces that an OpenCL runtime fills and a CUDA launch cannot: a __local pointer
# (.shared: local memory sized by the argument), a __constant one (.const: OpenCL copies the
# buffer into the constant bank), images and samplers.
_PARAM_SPACES = {
    ".shared": "a __local pointer (local memory sized at launch: a CUDA launch has no such argument)",
    ".const": "a __constant pointer (OpenCL copies its buffer into constant memory; a CUDA launch does not)",
    ".local": "a private pointer (no CUDA launch passes one)",
    ".texref": "an image (no CUDA launch binds one from an argument)",
    ".surfref": "an image (no CUDA launch binds one from an argument)",
    ".samplerref": "a sampler (no CUDA launch passes one)",
}


class PtxRefused(CompileError):
    """The OpenCL program compiled, but its PTX would not run through CUDA as OpenCL runs it;
    `reason` says why in one line."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class NotNvidiaOpenCL(LaunchError):
    """The OpenCL device is not an NVIDIA GPU on NVIDIA's own OpenCL platform: no PTX to run."""


def _declared(text: str) -> tuple[set[str], set[str]]:
    """The registers the PTX declares: exact names, and the prefixes of `%r<12>` ranges."""
    exact: set[str] = set()
    ranges: set[str] = set()
    for declaration in _DECLARED.finditer(text):
        for name in declaration.group(1).split(","):
            found = re.fullmatch(r"\s*%(\w+?)(?:<\d+>)?\s*", name)
            if found is None:
                continue
            (ranges if "<" in name else exact).add(found.group(1))
    return exact, ranges


def special_registers(ptx: str) -> list[str]:
    """The special registers the PTX reads (names without %), in order of first use: every
    %name it does not declare with .reg."""
    text = _COMMENTS.sub(" ", ptx)
    exact, ranges = _declared(text)
    seen: list[str] = []
    for used in _USED.finditer(_DECLARED.sub(" ", text)):
        name = used.group(1)
        if name in exact or any(re.fullmatch(rf"{re.escape(p)}\d+", name) for p in ranges):
            continue
        if name not in seen:
            seen.append(name)
    return seen


def _parameters(ptx: str, entry: str) -> list[str] | None:
    for found in _ENTRY.finditer(_COMMENTS.sub(" ", ptx)):
        if found.group(1) == entry:
            return [" ".join(p.split()) for p in found.group(2).split(",") if p.strip()]
    return None


def prepare_ptx(ptx: str, arch: str, entries: Sequence[str]) -> str:
    """The PTX NVIDIA's OpenCL made, ready for the CUDA driver: checked (PtxRefused where it
    would not run as OpenCL runs it: see the module's words) and each `mov` of an %envreg turned
    into a `mov` of what a CUDA launch reads there (ENVREG_READS_AS). `arch`: the GPU's "sm_90"."""
    target = _TARGET.search(ptx)
    if target is None:
        raise PtxRefused("its PTX names no .target")
    if target.group(1) != arch:
        raise PtxRefused(f"its PTX targets {target.group(1)}, not this GPU's {arch}")
    for name in special_registers(ptx):
        if name in CUDA_FILLED:
            continue
        offset = re.fullmatch(r"envreg(\d+)", name)
        if offset is None:
            raise PtxRefused(f"its PTX reads the special register %{name}, which a CUDA launch does not fill "
                             f"as OpenCL's runtime does")
        if int(offset.group(1)) not in ENVREG_READS_AS:
            raise PtxRefused(f"its PTX reads %{name}, a value OpenCL's runtime sets and a CUDA launch does not")
    for entry in entries:
        params = _parameters(ptx, entry)
        if params is None:
            raise PtxRefused(f"no entry `{entry}` in its PTX")
        for number, param in enumerate(params):
            words = param.split()
            for space, what in _PARAM_SPACES.items():
                if space in words:
                    raise PtxRefused(f"`{entry}` takes {what} as its argument {number}")
    rewritten = _MOV_ENVREG.sub(_read_as_cuda, ptx)
    left = re.search(r"[^\n]*%envreg\d+[^\n]*", _COMMENTS.sub(" ", rewritten))
    if left is not None:
        raise PtxRefused(f"its PTX reads a value of OpenCL's runtime other than by a plain mov: "
                         f"`{' '.join(left.group(0).split())}`")
    return rewritten


def _read_as_cuda(mov: re.Match) -> str:
    """A `mov` of %envregN as a CUDA launch reads it: the constant (the mov's own type kept), or
    the special register (a .u32 one: the mov becomes .u32)."""
    number = int(mov.group(4))
    if number not in ENVREG_READS_AS:
        return mov.group(0)  # left for the check after the rewrite to name
    value = ENVREG_READS_AS[number]
    kind = "u32" if value.startswith("%") else mov.group(2)
    return f"{mov.group(1)}{kind}{mov.group(3)}{value}{mov.group(5)}"


def is_nvidia_platform(platform_name: str) -> bool:
    """NVIDIA's own OpenCL ("NVIDIA CUDA"), whose binaries are PTX; PoCL's CUDA driver is not."""
    return "NVIDIA" in platform_name


def _cuda_index(cl_device: Any) -> int:
    """The CUDA device that is this OpenCL device: the same PCI address (NVIDIA's
    cl_nv_device_attribute_query), else the only CUDA device of its name."""
    try:
        domain = int(getattr(cl_device, "pci_domain_id_nv", 0))
        wanted = (domain, int(cl_device.pci_bus_id_nv), int(cl_device.pci_slot_id_nv))
    except Exception:  # noqa: BLE001 - a driver without the query: by name
        wanted = None
    found = cuda_index_at(wanted) if wanted is not None else None
    if found is not None:
        return found
    import pycuda.driver as drv

    named = [i for i in range(drv.Device.count()) if drv.Device(i).name().strip() == cl_device.name.strip()]
    if len(named) == 1:
        return named[0]
    raise LaunchError(f"no CUDA device could be told to be the OpenCL device {cl_device.name.strip()!r}")


def cuda_index_at(wanted: tuple[int, int, int]) -> int | None:
    """The CUDA device at PCI address (domain, bus, device), or None."""
    import pycuda.driver as drv

    drv.init()
    attr = drv.device_attribute
    for index in range(drv.Device.count()):
        device = drv.Device(index)
        try:
            here = (int(device.get_attribute(attr.PCI_DOMAIN_ID)), int(device.get_attribute(attr.PCI_BUS_ID)),
                    int(device.get_attribute(attr.PCI_DEVICE_ID)))
        except drv.Error:
            continue
        if here == wanted:
            return index
    return None


def parse_pci(device_id: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a Backend.stable_id name `pci:dddd:bb:dd`; None otherwise."""
    parts = device_id.split(":")
    if len(parts) != 4 or parts[0] != "pci":
        return None
    try:
        return int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None


class OpenCLThroughCuda(CudaBackend):
    """OpenCL device `opencl_index` (grader.backends.opencl's numbering), its kernels built by
    NVIDIA's OpenCL and run by the CUDA driver on the same GPU."""

    name = "opencl-through-cuda"
    through_cuda = True  # the profiling entry checks every launch's outputs against the oracle

    def __init__(self, opencl_index: int = 0, *, pci: str = "", own_context: bool = False):
        """`pci` (a Backend.stable_id name of a GPU found on NVIDIA's OpenCL platform before):
        open that GPU through CUDA alone, with no OpenCL context. Then only compiled programs
        load (load_program: a grading's PTX); a unit to compile is a CompileError.
        `own_context`: as CudaBackend's."""
        if pci:
            wanted = parse_pci(pci)
            index = cuda_index_at(wanted) if wanted is not None else None
            if index is None:
                raise LaunchError(f"no CUDA device at {pci}")
            super().__init__(index, own_context=own_context)
            self._cl = self.cl_device = self.cl_context = None
            self.cl_platform = ""
            return
        import pyopencl as cl

        from grader.backends.opencl import all_devices, device_kind

        pairs = all_devices()
        if opencl_index >= len(pairs):
            raise LaunchError(f"there is no OpenCL device {opencl_index} ({len(pairs)} found)")
        platform, device = pairs[opencl_index]
        if device_kind(device) != "gpu" or not is_nvidia_platform(platform.name):
            raise NotNvidiaOpenCL(f"{device.name.strip()} on {platform.name.strip()}")
        super().__init__(_cuda_index(device), own_context=own_context)
        self._cl = cl
        self.cl_device = device
        self.cl_platform = platform.name.strip()
        self.cl_context = cl.Context([device])

    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, CudaKernel]:
        return self._through_cuda(CompileUnit(source, tuple(entries), defines, filename))

    def compile_all(self, units: list[CompileUnit], before_untrusted: Callable[[], None] | None = None,
                    ) -> list[dict[str, CudaKernel] | CompileError]:
        return compile_in_order(units, self._through_cuda, before_untrusted)

    def _ptx(self, unit: CompileUnit) -> tuple[str, str]:
        """The PTX NVIDIA's OpenCL builds of `unit` (a trusted unit's from the kernel cache where
        it can), and the build log."""
        from grader.backends.opencl import _LOG_PATHS
        from grader.course.sinks import for_regex_replacement

        cl, device = self._cl, self.cl_device
        if cl is None or device is None:
            raise CompileError(f"{unit.filename}: opened through CUDA alone, this backend compiles no OpenCL source")
        options = [f"-D{name}={value}" for name, value in unit.defines.items()]
        key = kernel_cache.cache_key("opencl-ptx", self.cl_platform, device.version, device.driver_version,
                                     device.name.strip(), unit.source, options) if unit.trusted else ""
        cached = kernel_cache.load(key) if key else None
        if cached is not None:
            return cached[0].decode("utf-8", errors="replace"), str(cached[1].get("log", ""))
        program = cl._cl._Program(self.cl_context, unit.source)  # no include path or cache of PyOpenCL's
        try:
            program._build(options=" ".join(options).encode(), devices=[device])
            failed = False
        except cl.Error:
            failed = True
        try:
            log = program.get_build_info(device, cl.program_build_info.LOG) or ""
        except cl.Error:
            log = ""
        log = _LOG_PATHS.sub(for_regex_replacement(unit.filename), log).strip()
        if failed:
            raise CompileError(log or "the OpenCL compiler rejected the source without a message")
        try:
            binary = bytes(program.get_info(cl.program_info.BINARIES)[0])
        except cl.Error as error:
            raise CompileError(f"NVIDIA's OpenCL gave no binary of the program: {error}") from error
        ptx = binary.rstrip(b"\0").decode("utf-8", errors="replace")
        if key:
            kernel_cache.store(key, ptx.encode("utf-8"), {"log": log})
        return ptx, log

    def program_image(self, kernels: dict[str, CudaKernel]) -> ProgramImage | None:
        return None  # its programs are OpenCL's PTX, rewritten: the grading's own PTX is the image

    def load_program(self, image: ProgramImage, entries: list[str]) -> dict[str, CudaKernel]:
        """A grading's PTX (grader.backends.opencl's program_image), checked and rewritten as a
        compiled unit's is."""
        if image.format != "ptx":
            raise CompileError(f"OpenCL through CUDA loads NVIDIA's OpenCL PTX, not {image.format}")
        return self._ptx_through_cuda(image.data.decode("utf-8", errors="replace"), image.log, entries)

    def _through_cuda(self, unit: CompileUnit) -> dict[str, CudaKernel]:
        ptx, log = self._ptx(unit)
        return self._ptx_through_cuda(ptx, log, list(unit.entries))

    def _ptx_through_cuda(self, ptx: str, log: str, entries: Sequence[str]) -> dict[str, CudaKernel]:
        ready = prepare_ptx(ptx, self.arch, entries)
        kernels = self._load(Cubin((ready + "\0").encode("utf-8"), {}, log), list(entries))
        for kernel in kernels.values():
            kernel.resources = replace(kernel.resources, source=RESOURCES_SOURCE)
        return kernels
