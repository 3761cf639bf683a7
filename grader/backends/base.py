"""The small interface every backend implements, and the records it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:  # numpy is imported where it is used: the command line's parent process never needs it
    import numpy as np

    from grader.backends.registry import BackendKind


class CompileError(Exception):
    """The kernel source did not compile; `log` is the compiler's output, paths mapped to the
    student's file name."""

    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


class LaunchError(Exception):
    """The device refused a launch or failed while running it."""


@dataclass(frozen=True)
class DeviceInfo:
    backend: str  # its BackendKind's name
    name: str
    kind: str  # "gpu" | "cpu" | "other"
    vendor: str = ""
    platform: str = ""
    memory_bytes: int = 0
    compute_units: int = 0
    l2_bytes: int = 0
    # What the occupancy calculator needs, where the backend knows it.
    limits: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "vendor": self.vendor,
                "platform": self.platform, "backend": self.backend}


@dataclass(frozen=True)
class KernelResources:
    """What one compiled kernel uses per thread and per block, where the backend reports it."""

    registers: int | None = None
    shared_bytes: int | None = None  # static shared / local memory per block
    spill_bytes: int | None = None  # spill stores + loads (nvcc) or private memory (OpenCL)
    local_bytes: int | None = None  # per-thread local (stack) memory
    max_threads_per_block: int | None = None
    source: str = ""  # where the numbers come from


class CompiledKernel(ABC):
    """An entry point ready to launch."""

    name: str
    resources: KernelResources
    build_log: str


KernelT = TypeVar("KernelT", bound=CompiledKernel)


@dataclass(frozen=True)
class KernelLaunch(Generic[KernelT]):
    """One launch of a timed run: the entry point, its shape and its arguments (buffers and
    the backend's scalars)."""

    kernel: KernelT
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: list[Any]
    shared: int = 0  # bytes of dynamic shared memory per block (CUDA; OpenCL has none)


@dataclass(frozen=True)
class ProgramImage:
    """A compiled program as the device's driver loads it: a CUDA cubin (`cubin`), or the PTX
    NVIDIA's OpenCL makes (`ptx`), with its build log. A grading hands the submission's to the
    profiling entry (grader.counters.entry), which then loads it rather than compile it again."""

    format: str  # "cubin" | "ptx"
    data: bytes
    log: str = ""


@dataclass(frozen=True)
class CompileUnit:
    """One source to compile: the submission, or a trusted kernel (cached between gradings)."""

    source: str
    entries: tuple[str, ...]
    defines: dict[str, int | float]
    filename: str
    trusted: bool = False
    # A trusted kernel shipped compiled (a students' copy of the course: grader.course.release_manifest):
    # loaded, not compiled; `source` is then empty.
    image: ProgramImage | None = None


class Buffer(ABC):
    """Device memory; `view` makes a buffer that starts `offset` bytes in (for guard bands)."""

    nbytes: int


BufferT = TypeVar("BufferT", bound=Buffer)


class Backend(ABC, Generic[BufferT, KernelT]):
    """A device's compiler, memory and launches. `BufferT` and `KernelT` are the backend's own
    buffer and kernel types: its methods take only the buffers and kernels it made. Code that
    works with any backend writes plain `Backend` (each parameter then any buffer or kernel)."""

    name: str
    info: DeviceInfo

    @property
    def row(self) -> BackendKind | None:
        """The row of the backend that opened this device (grader.backends.registry): the language
        it compiles and the words its messages use. None: a test's fake device, of no row."""
        return None

    @abstractmethod
    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, KernelT]:
        """Compile `source`; return its entry points by name. Raise CompileError with the log."""

    def program_image(self, kernels: dict[str, KernelT]) -> ProgramImage | None:
        """The program `kernels` (one compile's entry points) came from, in a form the profiling
        entry can load (ProgramImage); None where this backend has none."""
        return None

    def load_program(self, image: ProgramImage, entries: list[str]) -> dict[str, KernelT]:
        """The entry points of a program this backend's program_image gave (in another process
        on the same device): loaded, not compiled. Raises CompileError where it cannot."""
        raise CompileError(f"the {self.name} backend loads no compiled program")

    def compile_all(self, units: list[CompileUnit], before_untrusted: Callable[[], None] | None = None,
                    ) -> list[dict[str, KernelT] | CompileError]:
        """Compile every unit (a backend may do so concurrently, and may take a trusted unit's
        binary from its cache); each result, in the units' order, is the entry points or the
        CompileError. The trusted units come first: `before_untrusted` is called once they are
        all compiled and loaded, before this process handles any other unit's code (the end of
        a sandboxed worker's trusted-cache entries)."""
        return compile_in_order(units, self._compile_or_load, before_untrusted)

    def _compile_or_load(self, unit: CompileUnit) -> dict[str, KernelT]:
        if unit.image is not None:
            return self.load_program(unit.image, list(unit.entries))
        return self.compile(unit.source, list(unit.entries), unit.defines, unit.filename)

    @abstractmethod
    def alloc(self, nbytes: int) -> BufferT: ...

    @abstractmethod
    def view(self, buffer: BufferT, offset: int, nbytes: int) -> BufferT: ...

    @abstractmethod
    def upload(self, buffer: BufferT, array: np.ndarray) -> None: ...

    @abstractmethod
    def download(self, buffer: BufferT, array: np.ndarray) -> None: ...

    def fill32(self, buffer: BufferT, bits: int) -> None:
        """Set every 4-byte word of `buffer` to `bits` (a device-side fill where the backend
        has one: it keeps the GPU busy, where a host upload would leave it idle)."""
        import numpy as np

        self.upload(buffer, np.full(buffer.nbytes // 4, bits, dtype=np.uint32))

    def copy(self, destination: BufferT, source: BufferT) -> None:
        """Copy `source`'s bytes into `destination` (as large): on the device, queued in order
        with the launches, where the backend can; through the host otherwise."""
        import numpy as np

        data = np.empty(source.nbytes, dtype=np.uint8)
        self.download(source, data)
        self.upload(destination, data)

    @abstractmethod
    def launch(self, kernel: KernelT, grid: tuple[int, ...], block: tuple[int, ...],
               args: list[Any], shared: int = 0) -> None:
        """Launch and wait; `shared`: bytes of dynamic shared memory per block (a backend whose
        language has none ignores it)."""

    def enqueue(self, kernel: KernelT, grid: tuple[int, ...], block: tuple[int, ...],
                args: list[Any]) -> None:
        """Queue a launch of a trusted kernel without waiting: what is queued or read after it
        sees its results (one in-order queue). Its errors surface at the next wait. Waits
        where a backend has no such queue."""
        self.launch(kernel, grid, block, args)

    @abstractmethod
    def time_launches(self, launches: list[KernelLaunch[KernelT]]) -> list[float]:
        """Queue every launch in order, wait once for them all, and return each one's device
        time in seconds: the kernel's own run, with no time of the host's counted (not its
        queueing of the next launch, nor its work between calls)."""

    @abstractmethod
    def flush_l2(self) -> None:
        """Evict the device's caches by writing a buffer larger than them."""

    @abstractmethod
    def release(self, buffer: BufferT) -> None: ...

    def profiler(self, collecting: bool) -> None:
        """Start (True) or stop collecting, for a profiler told to wait for the start (Nsight
        Compute's `--profile-from-start off`: the profiling entry profiles some launches of a
        plan, not all). A backend no such profiler watches does nothing."""

    def free_bytes(self) -> int | None:
        """Free device memory where the driver says; None where it has no such query (only the
        device's size is checked then)."""
        return None

    def stable_id(self, index: int) -> str:
        """The device's name as every process on the machine gives it, whatever backend opened
        it (`index`: this backend's device index): the key of its shared queue
        (grader.device_queue). A GPU is named by its PCI address (pci_id) where the driver
        says it, so a `.cu` and a `.cl` grading on one GPU wait in one line; otherwise
        `<backend>:<platform>:<device name>:<index>`."""
        return f"{self.info.backend}:{self.info.platform}:{self.info.name}:{index}"

    def stack_bytes(self) -> int | None:
        """The per-thread stack this context reserves now (CUDA grows it for a kernel that needs
        more, and keeps it), or None where the backend cannot say."""
        return None

    def uses_device_heap(self, kernels: Iterable[KernelT]) -> bool:
        """Whether these compiled kernels allocate on the device heap (CUDA's malloc and new):
        what they take and never free stays in the context, for its later kernels to miss. False
        where the backend's kernels have no such heap."""
        return False

    def keep_programs(self) -> None:
        """Mark every program this backend holds now as kept by forget_programs (the grader's own
        kernels of a context kept between gradings)."""

    def forget_programs(self) -> None:
        """Drop every program this backend holds for the kernels it compiled or loaded since
        keep_programs (a resident worker between gradings: grader.resident_device); what it made
        for itself (a launch gate) stays. Kernels of the programs dropped are not to be launched after."""

    def close(self) -> None:
        """Free what the backend holds."""

    @staticmethod
    def scalar(base_type: str, value: int | float) -> Any:
        import numpy as np

        if base_type in ("int", "signed int"):
            return np.int32(value)
        if base_type in ("unsigned", "unsigned int"):
            return np.uint32(value)
        if base_type == "float":
            return np.float32(value)
        if base_type == "double":
            return np.float64(value)
        if base_type in ("long", "long long"):
            return np.int64(value)
        raise ValueError(f"unsupported scalar type {base_type!r}")


def pci_id(domain: int, bus: int, device: int) -> str:
    """A GPU's stable name by its PCI address: `pci:0000:41:00`."""
    return f"pci:{domain:04x}:{bus:02x}:{device:02x}"


def trusted_first(units: list[CompileUnit]) -> list[int]:
    """The indices of `units`: the trusted ones first, then the others, each in their order."""
    return sorted(range(len(units)), key=lambda i: not units[i].trusted)


def compile_in_order(units: list[CompileUnit], compile_one: Callable[[CompileUnit], dict[str, KernelT]],
                     before_untrusted: Callable[[], None] | None = None,
                     ) -> list[dict[str, KernelT] | CompileError]:
    """Compile `units` one at a time, the trusted ones first, calling `before_untrusted` once
    before the first that is not (or at the end, where all are): each unit's kernels, or the
    CompileError it raised, in the units' own order."""
    results: list[dict[str, KernelT] | CompileError | None] = [None] * len(units)
    hook = before_untrusted
    for i in trusted_first(units):
        if not units[i].trusted and hook is not None:
            hook()
            hook = None
        try:
            results[i] = dict(compile_one(units[i]))
        except CompileError as error:
            results[i] = error
    if hook is not None:
        hook()
    return [result for result in results if result is not None]  # trusted_first: every index is filled
