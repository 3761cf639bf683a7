"""Output buffers with guard bands: a canary on both sides, NaN poison inside.

A write past either end of an output lands in a guard band and is reported with the buffer
and the offset; an element the kernel never writes stays NaN and is reported as such.
Inputs get guard bands too (a marked NaN): a read past an input shows in the results.

An `Arena` holds a set of buffers in one allocation with a moat before, between and after
them: MOAT_BYTES filled with MOAT_BITS, which no kernel may write. A write that far from the
buffers lands there on every device, whatever the allocator does with separate allocations
(grader.write_fence reads the moats after a launch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.backends.base import Backend, Buffer

CANARY_BITS = np.uint32(0x7FA5A5A5)  # a NaN with a payload no kernel computes by chance
POISON = np.float32(np.nan)
POISON_BITS = POISON.view(np.uint32)
GUARD_BYTES_MIN = 16 * 1024
# Inputs get guard bands too, filled with a signalling NaN whose payload names the input (its
# number in the low byte): a read past either end of an input carries that NaN into the
# results, where it is recognised even after arithmetic (which may set the quiet bit or flip
# the sign, and on x86 keeps the payload; a GPU may replace it with its own NaN).
INPUT_GUARD_BASE = 0x7FB1D100
_PAYLOAD_MASK = np.uint32(0x7FBFFFFF)  # all but the sign and the quiet bit


def guard_elements(count: int, itemsize: int) -> int:
    """Guard band length: at least 16 KiB, at most 4 MiB, about the buffer's own size."""
    nbytes = min(max(count * itemsize, GUARD_BYTES_MIN), 4 << 20)
    nbytes = -(-nbytes // GUARD_BYTES_MIN) * GUARD_BYTES_MIN  # keep sub-buffers aligned
    return nbytes // itemsize


@dataclass
class GuardedBuffer:
    """A device buffer of `shape` with guard bands; `inner` is what the kernel gets."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    guard: int
    whole: Buffer
    inner: Buffer
    guard_bits: np.uint32 = CANARY_BITS  # what the guard bands hold
    # The allocation `whole` lies in and its offset there: `whole` itself and 0, except in an
    # Arena (views of the guard bands are made from the allocation: OpenCL makes no view of a view).
    parent: Buffer | None = None
    at: int = 0

    @property
    def count(self) -> int:
        return int(np.prod(self.shape))

    def host_image(self, interior: np.ndarray | None = None) -> np.ndarray:
        """Guards set to the guard value; interior poisoned (or the given values)."""
        image = np.empty(self.count + 2 * self.guard, dtype=self.dtype)
        image.view(np.uint32)[: self.guard] = self.guard_bits
        image.view(np.uint32)[self.guard + self.count :] = self.guard_bits
        if interior is None:
            image[self.guard : self.guard + self.count] = POISON
        else:
            image[self.guard : self.guard + self.count] = interior.ravel()
        return image


def input_guard_bits(number: int) -> np.uint32:
    """The guard value of the `number`-th input (0-based)."""
    return np.uint32(INPUT_GUARD_BASE | (number & 0xFF))


def carried_input_guard(values: np.ndarray, number: int) -> np.ndarray:
    """Flat indices of `values` (4-byte floats) that hold the guard NaN of input `number`."""
    bits = np.ascontiguousarray(values).view(np.uint32).ravel()
    want = input_guard_bits(number) & _PAYLOAD_MASK
    return np.flatnonzero(np.isnan(values.ravel()) & ((bits & _PAYLOAD_MASK) == want))


def computed_nans(values: np.ndarray) -> int:
    """How many elements are a NaN other than the grader's poison: written by the kernel."""
    if values.dtype.itemsize != 4 or values.dtype.kind != "f":
        return 0
    bits = np.ascontiguousarray(values).view(np.uint32)
    return int((np.isnan(values) & (bits != POISON_BITS)).sum())


def guarded_bytes(count: int, itemsize: int = 4) -> int:
    """The bytes a guarded buffer of `count` elements takes, its guard bands with it."""
    return (count + 2 * guard_elements(count, itemsize)) * itemsize


def allocate(backend: Backend, name: str, shape: tuple[int, ...], dtype: np.dtype,
             guard_bits: np.uint32 = CANARY_BITS, arena: Arena | None = None) -> GuardedBuffer:
    """A guarded buffer: its own allocation, or the next slot of `arena`."""
    dtype = np.dtype(dtype)
    if dtype.itemsize != 4:
        raise ValueError("guarded buffers hold 4-byte elements")
    count = int(np.prod(shape))
    guard = guard_elements(count, dtype.itemsize)
    nbytes, guard_bytes = (count + 2 * guard) * dtype.itemsize, guard * dtype.itemsize
    if arena is not None:
        at = arena.carve(name, nbytes, guard_bytes, count * dtype.itemsize)
        whole, parent = arena.view(at, nbytes), arena.buffer
        inner = arena.view(at + guard_bytes, count * dtype.itemsize)
    else:
        at, whole = 0, backend.alloc(nbytes)
        parent, inner = whole, backend.view(whole, guard_bytes, count * dtype.itemsize)
    return GuardedBuffer(name, shape, dtype, guard, whole, inner, np.uint32(guard_bits), parent, at)


def fill(backend: Backend, buf: GuardedBuffer, interior: np.ndarray | Buffer | None = None) -> None:
    """Reset the canaries and poison the interior, or load `interior` into it: host values, or
    a device buffer of the same size (copied on the device). Poisoning and copying stay on the
    device: timing poisons before every launch, and a host upload there would leave the GPU
    idle (and its clocks lower) just before the timed kernel."""
    if isinstance(interior, np.ndarray):
        backend.upload(buf.whole, buf.host_image(interior))
        return
    backend.fill32(buf.whole, int(buf.guard_bits))
    if interior is None:
        backend.fill32(buf.inner, int(POISON_BITS))
    elif interior.nbytes != buf.inner.nbytes:
        raise ValueError(f"`{buf.name}` ({buf.inner.nbytes} bytes) cannot start from a buffer of {interior.nbytes}")
    else:
        backend.copy(buf.inner, interior)


@dataclass(frozen=True)
class Readback:
    values: np.ndarray  # the interior, shaped
    out_of_bounds: str | None  # a one-line account of writes into the guard bands


def read(backend: Backend, buf: GuardedBuffer) -> Readback:
    image = np.empty(buf.count + 2 * buf.guard, dtype=buf.dtype)
    backend.download(buf.whole, image)
    bits = image.view(np.uint32)
    before = np.flatnonzero(bits[: buf.guard] != buf.guard_bits)
    after = np.flatnonzero(bits[buf.guard + buf.count :] != buf.guard_bits)
    message = None
    if before.size or after.size:
        parts = []
        if before.size:
            parts.append(
                f"{before.size} element(s) before its start (the farthest at index "
                f"{int(before[0]) - buf.guard})"
            )
        if after.size:
            parts.append(
                f"{after.size} element(s) past its end (the first at index {buf.count + int(after[0])}, "
                f"the buffer has {buf.count})"
            )
        message = f"wrote out of bounds of `{buf.name}`: " + " and ".join(parts)
    values = image[buf.guard : buf.guard + buf.count].reshape(buf.shape)  # a view: no second copy
    return Readback(values, message)


def guards_hit(backend: Backend, buf: GuardedBuffer) -> str | None:
    """The out-of-bounds account of `buf` from its guard bands alone (the interior stays on
    the device: at the benchmark size it is hundreds of megabytes)."""
    nbytes = buf.guard * buf.dtype.itemsize
    parent = buf.parent if buf.parent is not None else buf.whole
    try:
        bands = [backend.view(parent, buf.at, nbytes),
                 backend.view(parent, buf.at + (buf.guard + buf.count) * buf.dtype.itemsize, nbytes)]
    except ValueError:  # a sub-buffer this device cannot align: read it all
        return read(backend, buf).out_of_bounds
    before, after = (np.empty(buf.guard, dtype=np.uint32) for _ in range(2))
    backend.download(bands[0], before)
    backend.download(bands[1], after)
    if (before == buf.guard_bits).all() and (after == buf.guard_bits).all():
        return None
    return read(backend, buf).out_of_bounds


# -- an arena: buffers with moats between them --------------------------------------------

MOAT_BYTES = 128 << 20  # before, between and after an Arena's buffers (a GPU's)
# A CPU device's (cpu_moats): its benchmark buffers are a few MiB, and every byte of a moat there
# is filled and read by its cores (128 MiB moats cost a PoCL grading about 0.3 s). CPU_MOAT_BYTES,
# still past the 64 MiB (16M floats) of issue 35's far write, before the first buffer, after the
# last and between two where the moats between take at most CPU_MOATS_BETWEEN_BYTES together;
# more buffers (mlp_train has 20) share that, down to CPU_MOAT_MIN_BYTES each.
CPU_MOAT_BYTES = 80 << 20
CPU_MOATS_BETWEEN_BYTES = 160 << 20
CPU_MOAT_MIN_BYTES = 16 << 20
MOAT_BITS = np.uint32(0x7FA5C3C3)  # a NaN no kernel computes by chance, unlike the guard bands'
ARENA_ALIGN = 64 << 10  # where each slot starts (any device's sub-buffer alignment divides it)


def moats(device_kind: str, buffers: int) -> tuple[int, int]:
    """An arena's moats for `buffers` buffers on a device of `device_kind` ("gpu", "cpu"):
    (between two, before the first and after the last). A GPU's are MOAT_BYTES; a CPU device's
    are cpu_moats."""
    return (MOAT_BYTES, MOAT_BYTES) if device_kind == "gpu" else cpu_moats(buffers)


def cpu_moats(buffers: int) -> tuple[int, int]:
    """A CPU device's arena's moats for `buffers` buffers: (between two, before the first and
    after the last). A write that crosses a moat narrower than CPU_MOAT_BYTES lands in the next
    buffer: an input is checksummed (named as written); in an output it is that output's value,
    checked as such (one that writes there what belongs there goes unseen)."""
    between = CPU_MOATS_BETWEEN_BYTES // max(1, buffers - 1)
    return max(CPU_MOAT_MIN_BYTES, min(CPU_MOAT_BYTES, between)), CPU_MOAT_BYTES


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ARENA_ALIGN) * ARENA_ALIGN


@dataclass(frozen=True)
class Slot:
    """One buffer in an Arena: `offset` and `nbytes` its whole (guard bands with it), `inner_*`
    the part the kernel is given; all in bytes from the arena's start."""

    name: str
    offset: int
    nbytes: int
    inner_offset: int
    inner_nbytes: int


@dataclass(frozen=True)
class Moat:
    """A stretch of an Arena that holds MOAT_BITS: after the slot `after` and before the slot
    `before` (None at either end of the arena)."""

    offset: int
    nbytes: int
    after: Slot | None
    before: Slot | None


def arena_bytes(sizes: list[int], moat: int, end_moat: int | None = None) -> int:
    """What an Arena for buffers of `sizes` bytes allocates: moats of `moat` bytes between two,
    of `end_moat` (None: `moat`) before the first and after the last."""
    end = moat if end_moat is None else end_moat
    return 2 * end + sum(_aligned(size) for size in sizes) + moat * (len(sizes) - 1) if sizes else end


class Arena:
    """One device allocation for buffers of the given sizes (in the order they are carved), with
    a moat of `moat` bytes (None: MOAT_BYTES) between each two and of `end_moat` (None: `moat`)
    before the first and after the last, filled with MOAT_BITS. Raises LaunchError where the
    device cannot allocate it."""

    def __init__(self, backend: Backend, sizes: list[int], moat: int | None = None, end_moat: int | None = None):
        self.backend = backend
        self.moat = _aligned(MOAT_BYTES if moat is None else moat)
        self.end_moat = self.moat if end_moat is None else _aligned(end_moat)
        self.nbytes = arena_bytes(sizes, self.moat, self.end_moat)
        self.buffer: Buffer | None = backend.alloc(self.nbytes)
        try:
            backend.fill32(self.buffer, int(MOAT_BITS))
        except BaseException:  # a device that allocates at first use fails here
            self.release()
            raise
        self.slots: list[Slot] = []
        self._next = self.end_moat

    def carve(self, name: str, nbytes: int, guard_bytes: int = 0, inner_nbytes: int | None = None) -> int:
        """The offset of the next slot, `nbytes` long, with the kernel's part `guard_bytes` in;
        raises ValueError where the arena was not made for it."""
        if self._next + _aligned(nbytes) + self.end_moat > self.nbytes:
            raise ValueError(f"the arena has no room left for `{name}` ({nbytes} bytes)")
        offset = self._next
        inner = nbytes - 2 * guard_bytes if inner_nbytes is None else inner_nbytes
        self.slots.append(Slot(name, offset, nbytes, offset + guard_bytes, inner))
        self._next += _aligned(nbytes) + self.moat
        return offset

    def alloc(self, name: str, nbytes: int) -> Buffer:
        """A plain (unguarded) buffer in the next slot."""
        return self.view(self.carve(name, nbytes), nbytes)

    def view(self, offset: int, nbytes: int) -> Buffer:
        assert self.buffer is not None, "the arena was released"
        return self.backend.view(self.buffer, offset, nbytes)

    def moats(self) -> list[Moat]:
        """Every stretch no slot covers, with its neighbours: what holds MOAT_BITS."""
        found, start, before = [], 0, None
        for slot in self.slots:
            found.append(Moat(start, slot.offset - start, before, slot))
            start, before = slot.offset + slot.nbytes, slot
        found.append(Moat(start, self.nbytes - start, before, None))
        return [moat for moat in found if moat.nbytes > 0]

    def release(self) -> None:
        """Free the allocation; never raises (it runs in `finally`, often after a failed launch)."""
        buffer, self.buffer = self.buffer, None
        if buffer is not None:
            try:
                self.backend.release(buffer)
            except Exception:  # noqa: BLE001 - a dead context's memory: nothing to free
                pass
