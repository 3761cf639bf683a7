"""The grader's own kernels, run on the device: random inputs and output comparison at benchmark
size without a host round trip (generating and comparing 67M floats on the host takes seconds),
and the checksums of grader.write_fence.

The kernel sources are `kernels/device_ops<suffix>`, one for each backend (its row's suffix) that
has them (`.cu`, `.cl`); all compute the same values bit for bit. A backend without them
generates and compares on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.backends.base import Backend, Buffer, CompiledKernel, CompileError, CompileUnit, KernelLaunch
from grader.backends.registry import BackendKind

KERNELS = Path(__file__).parent / "kernels"
ENTRIES = ["lab_fill_uniform", "lab_compare", "lab_copy", "lab_checksum", "lab_sample"]
BLOCK = 256  # the kernels' fixed block (work-group) size
MAX_BLOCKS = 4096  # grid-stride loops cover the rest
MAX_INDICES = 8  # mismatch indices the compare kernel records
COPY_PER_THREAD = 4  # elements each thread of the copy kernel moves (LAB_COPY_PER_THREAD)
RESULT_WORDS = 4 + MAX_INDICES  # mismatches, unwritten, computed NaNs, slot counter, indices
CHECKSUM_CHUNK = 1 << 16  # words (256 KiB) each pair of checksum words covers (lab_checksum)
MAX_WORDS = 1 << 30  # words one checksum launch covers at most (its indices stay 32-bit)
WARM_UP_WORDS = (1 << 10, 1 << 24)  # the sizes warm_up launches each kernel at: one block, and all of them


@dataclass(frozen=True)
class Comparison:
    """What `DeviceOps.compare` found."""

    count: int  # elements compared
    mismatches: int
    unwritten: int  # still the grader's poison
    computed_nans: int
    indices: tuple[int, ...]  # up to 8 flat indices of mismatches, sorted ascending (any 8 of them)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0


def _grid(count: int) -> tuple[int]:
    # At least one block: a launch of zero blocks is an error on both backends.
    return (max(1, min(-(-count // BLOCK), MAX_BLOCKS)),)


def _copy_grid(count: int) -> tuple[int]:
    """lab_copy's blocks for `count` words (COPY_PER_THREAD a thread)."""
    return (max(1, -(-count // (BLOCK * COPY_PER_THREAD))),)


def chunks(words: int, chunk: int = CHECKSUM_CHUNK) -> int:
    """How many checksum pairs `words` words take (lab_checksum)."""
    return -(-words // chunk)


def _hash(x: np.ndarray) -> np.ndarray:
    """lowbias32 on uint32 arrays: the kernels' lab_hash."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def host_checksum(words: np.ndarray, chunk: int = CHECKSUM_CHUNK) -> np.ndarray:
    """lab_checksum's pairs for `words` (uint32), computed on the host: (chunks, 2) uint32. For
    a backend without the grader's kernels, and to test them."""
    words = np.ascontiguousarray(words, dtype=np.uint32).ravel()
    index = np.arange(words.size, dtype=np.uint32)
    with np.errstate(over="ignore"):
        a = _hash(words ^ (index * np.uint32(0x9E3779B9)))
        b = words * (np.uint32(2) * index + np.uint32(1))
    starts = np.arange(0, words.size, chunk)
    if not starts.size:
        return np.zeros((0, 2), dtype=np.uint32)
    # Sums mod 2**32, as the kernels' unsigned adds wrap.
    sums = np.stack([np.add.reduceat(a.astype(np.uint64), starts), np.add.reduceat(b.astype(np.uint64), starts)],
                    axis=1)
    return (sums & 0xFFFF_FFFF).astype(np.uint32)


def _keys(seed: int) -> tuple[int, int]:
    """The two keys lab_fill_uniform and lab_sample derive from a 64-bit seed."""
    k0 = int(_hash(np.array([(seed & 0xFFFF_FFFF) ^ 0x9E3779B9], dtype=np.uint32))[0])
    k1 = int(_hash(np.array([(seed >> 32 & 0xFFFF_FFFF) ^ k0 ^ 0x85EBCA6B], dtype=np.uint32))[0])
    return k0, k1


def sample_indices(count: int, seed: int, picks: int) -> np.ndarray:
    """The indices lab_sample copies from a buffer of `count` words with `seed`: every index in
    order where picks == count, else a hash of the pick's number and the seed, modulo count."""
    if picks == count:
        return np.arange(count, dtype=np.int64)
    k0, k1 = _keys(seed)
    with np.errstate(over="ignore"):
        first = _hash(np.arange(picks, dtype=np.uint32) ^ np.uint32(k0))
        return (_hash(first + np.uint32(k1)) % np.uint32(count)).astype(np.int64)


def _check_count(count: int, *buffers: Buffer) -> None:
    if not 0 <= count <= 0xFFFFFFFF:
        raise ValueError(f"count {count} is outside the kernels' 32-bit range")
    for buffer in buffers:
        if count * 4 > buffer.nbytes:
            raise ValueError(f"count {count} floats do not fit in a buffer of {buffer.nbytes} bytes")


def source_file(kind: BackendKind | None) -> Path | None:
    """The grader's own kernels in this backend's language, or None where there are none (or
    no backend: a unit test's fake device)."""
    path = KERNELS / f"device_ops{kind.suffix}" if kind is not None else None
    return path if path is not None and path.is_file() else None


def supports(kind: BackendKind | None) -> bool:
    """Whether the grader's own kernels exist in this backend's language."""
    return source_file(kind) is not None


@dataclass
class Tally:
    """Comparisons' counts kept on the device, a slot each (DeviceOps.compare_into): many
    comparisons queued, one read."""

    backend: Backend
    buffer: Buffer
    slots: int
    stride: int  # bytes from one slot to the next (a sub-buffer's offset must be aligned)

    def slot(self, number: int) -> Buffer:
        return self.backend.view(self.buffer, number * self.stride, RESULT_WORDS * 4)

    def read(self, counts: list[int]) -> list[Comparison]:
        """The first len(counts) slots, each a comparison of that many elements (waits for them)."""
        words = np.zeros(self.slots * self.stride // 4, dtype=np.uint32)
        self.backend.download(self.buffer, words)
        per = self.stride // 4
        return [_comparison(count, words[s * per:s * per + RESULT_WORDS]) for s, count in enumerate(counts)]

    def clear(self) -> None:
        self.backend.fill32(self.buffer, 0)

    def release(self) -> None:
        self.backend.release(self.buffer)


def _comparison(count: int, words: np.ndarray) -> Comparison:
    taken = min(int(words[3]), MAX_INDICES)
    return Comparison(count=count, mismatches=int(words[0]), unwritten=int(words[1]),
                      computed_nans=int(words[2]),
                      indices=tuple(sorted(int(i) for i in words[4 : 4 + taken])))


class DeviceOps:
    """The grader's own kernels on one backend: fill a buffer with uniform random floats, compare
    two float buffers, sample one, checksum one, time a copy."""

    def __init__(self, backend: Backend):
        source = source_file(backend.row)
        if source is None:
            raise NotImplementedError(f"the grader's device kernels do not exist for backend {backend.name!r}")
        self.backend = backend
        self.source = source
        self._kernels: dict[str, CompiledKernel] | None = None
        # The checksum's layout: each work-item a run of words on a CPU device (several times
        # faster there), side by side on a GPU (coalesced).
        self._contiguous = int(backend.info.kind == "cpu")

    def unit(self) -> CompileUnit:
        """The kernels as a trusted compile unit (cached between gradings)."""
        return CompileUnit(self.source.read_text(encoding="utf-8"), tuple(ENTRIES), {},
                           f"grader/kernels/{self.source.name}", trusted=True)

    def adopt(self, kernels: dict[str, CompiledKernel]) -> None:
        """Use kernels compiled elsewhere (with the grading's other trusted kernels)."""
        self._kernels = kernels

    def _kernel(self, name: str) -> CompiledKernel:
        if self._kernels is None:
            result = self.backend.compile_all([self.unit()])[0]
            if isinstance(result, CompileError):
                raise result
            self._kernels = result
        return self._kernels[name]

    def fill_uniform(self, buffer: Buffer, count: int, seed: int, low: float, high: float) -> None:
        """Set the first `count` floats of `buffer` to uniform values in [low, high), a function of
        the element index and the low 64 bits of `seed` alone."""
        _check_count(count, buffer)
        b = self.backend
        seed &= 0xFFFF_FFFF_FFFF_FFFF
        args = [buffer, b.scalar("unsigned", count), b.scalar("unsigned", seed & 0xFFFF_FFFF),
                b.scalar("unsigned", seed >> 32), b.scalar("float", low), b.scalar("float", high)]
        b.enqueue(self._kernel("lab_fill_uniform"), _grid(count), (BLOCK,), args)

    def sample_into(self, destination: Buffer, source: Buffer, count: int, seed: int, picks: int) -> None:
        """Queue the copy of `picks` words of `source` (`count` words) to `destination`, from
        the indices sample_indices(count, seed, picks) gives (all of them, in order, where
        picks == count). Not waited for."""
        if not 0 < picks <= count or (picks < count and count > 0xFFFFFFFF):
            raise ValueError(f"{picks} picks cannot be taken from {count} words")
        _check_count(count, source)
        _check_count(picks, destination)
        b = self.backend
        seed &= 0xFFFF_FFFF_FFFF_FFFF
        args = [source, b.scalar("unsigned", count), b.scalar("unsigned", seed & 0xFFFF_FFFF),
                b.scalar("unsigned", seed >> 32), b.scalar("unsigned", picks), destination]
        b.enqueue(self._kernel("lab_sample"), _grid(picks), (BLOCK,), args)

    def tally(self, slots: int) -> Tally:
        """A zeroed device record of `slots` comparisons (compare_into), read back at once."""
        align = int(self.backend.info.limits.get("base_align_bytes", 0) or 4)
        stride = -(-(RESULT_WORDS * 4) // align) * align
        buffer = self.backend.alloc(slots * stride)
        self.backend.fill32(buffer, 0)
        return Tally(self.backend, buffer, slots, stride)

    def compare_into(self, tally: Tally, slot: int, got: Buffer, want: Buffer, count: int, rtol: float,
                     atol: float) -> None:
        """Queue `compare`'s comparison with its counts kept in `tally`'s `slot`, not waited for."""
        _check_count(count, got, want)
        b = self.backend
        result = tally.slot(slot)
        args = [got, want, b.scalar("unsigned", count), b.scalar("float", rtol), b.scalar("float", atol), result]
        b.enqueue(self._kernel("lab_compare"), _grid(count), (BLOCK,), args)

    def checksum_into(self, buffer: Buffer, words: int, sums: Buffer, first: int, start: int = 0) -> None:
        """Queue the checksum of `words` 32-bit words of `buffer` from word `start` on (at most
        MAX_WORDS; `start` needs no alignment): one pair per CHECKSUM_CHUNK words (host_checksum's),
        written to `sums` (uint32) from pair `first` on. Not waited for."""
        if not 0 <= words <= MAX_WORDS or start < 0 or (start + words) * 4 > buffer.nbytes:
            raise ValueError(f"words {start}..{start + words} cannot be summed in a buffer of {buffer.nbytes} bytes")
        if (first + chunks(words)) * 8 > sums.nbytes:
            raise ValueError("the checksums do not fit in their buffer")
        b = self.backend
        args = [buffer, np.int64(start), b.scalar("unsigned", words), b.scalar("unsigned", CHECKSUM_CHUNK), sums,
                b.scalar("unsigned", first), b.scalar("unsigned", self._contiguous)]
        b.enqueue(self._kernel("lab_checksum"), (max(1, min(chunks(words), MAX_BLOCKS)),), (BLOCK,), args)

    def warm_up(self) -> None:
        """Launch each of the grader's kernels, on a few words and on many (a driver may make
        machine code per grid shape): a driver that makes it at a kernel's first launch (PoCL)
        keeps it in its cache, which a sandboxed worker then starts from (the warmup of PoCL's
        grader.backends.registry.JitCache). Runs nothing but the grader's own kernels."""
        b = self.backend
        for words in WARM_UP_WORDS:
            held = [b.alloc(words * 4), b.alloc(words * 4), b.alloc(8 * chunks(words))]
            tally = self.tally(1)
            try:
                data, other, sums = held
                self.fill_uniform(data, words, 1, 0.0, 1.0)
                self.sample_into(other, data, words, 1, words)
                self.compare_into(tally, 0, other, data, words, 0.0, 0.0)
                self.checksum_into(data, words, sums, 0)
                b.launch(self._kernel("lab_copy"), _copy_grid(words), (BLOCK,),
                         [other, data, b.scalar("unsigned", words)])  # (waits for all of them)
            finally:
                tally.release()
                for buffer in held:
                    b.release(buffer)

    def compare(self, got: Buffer, want: Buffer, count: int, rtol: float, atol: float) -> Comparison:
        """Compare the first `count` floats: element i matches where
        |got - want| <= atol + rtol * |want|, in float32 (so NaN in `got` never matches)."""
        _check_count(count, got, want)
        b = self.backend
        result = b.alloc(RESULT_WORDS * 4)
        try:
            b.fill32(result, 0)
            args = [got, want, b.scalar("unsigned", count), b.scalar("float", rtol),
                    b.scalar("float", atol), result]
            b.launch(self._kernel("lab_compare"), _grid(count), (BLOCK,), args)
            words = np.zeros(RESULT_WORDS, dtype=np.uint32)
            b.download(result, words)
        finally:
            b.release(result)
        return _comparison(count, words)

    def copy_seconds(self, destination: Buffer, source: Buffer, count: int, repeats: int = 5) -> float:
        """The fastest of `repeats` timed copies of `count` floats from `source` to `destination`
        (device time, the caches flushed before each; one untimed copy first)."""
        _check_count(count, destination, source)
        b = self.backend
        args = [destination, source, b.scalar("unsigned", count)]
        launch = KernelLaunch(self._kernel("lab_copy"), _copy_grid(count), (BLOCK,), args)
        b.launch(launch.kernel, launch.grid, launch.block, launch.args)
        best = float("inf")
        for _ in range(repeats):
            b.flush_l2()
            best = min(best, sum(b.time_launches([launch])))
        return best

