"""Output buffers with guard bands: a canary on both sides, NaN poison inside.

A write past either end of an output lands in a guard band and is reported with the buffer
and the offset; an element the kernel never writes stays NaN and is reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.backends.base import Backend, Buffer

CANARY_BITS = np.uint32(0x7FA5A5A5)  # a NaN with a payload no kernel computes by chance
POISON = np.float32(np.nan)
GUARD_BYTES_MIN = 16 * 1024


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

    @property
    def count(self) -> int:
        return int(np.prod(self.shape))

    def host_image(self, interior: np.ndarray | None = None) -> np.ndarray:
        """Guards set to the canary; interior poisoned (or the given values)."""
        image = np.empty(self.count + 2 * self.guard, dtype=self.dtype)
        image.view(np.uint32)[: self.guard] = CANARY_BITS
        image.view(np.uint32)[self.guard + self.count :] = CANARY_BITS
        if interior is None:
            image[self.guard : self.guard + self.count] = POISON
        else:
            image[self.guard : self.guard + self.count] = interior.ravel()
        return image


def allocate(backend: Backend, name: str, shape: tuple[int, ...], dtype: np.dtype) -> GuardedBuffer:
    dtype = np.dtype(dtype)
    if dtype.itemsize != 4:
        raise ValueError("guarded buffers hold 4-byte elements")
    count = int(np.prod(shape))
    guard = guard_elements(count, dtype.itemsize)
    whole = backend.alloc((count + 2 * guard) * dtype.itemsize)
    inner = backend.view(whole, guard * dtype.itemsize, count * dtype.itemsize)
    return GuardedBuffer(name, shape, dtype, guard, whole, inner)


def fill(backend: Backend, buf: GuardedBuffer, interior: np.ndarray | None = None) -> None:
    """Reset the canaries and poison the interior (or load `interior`)."""
    backend.upload(buf.whole, buf.host_image(interior))


@dataclass(frozen=True)
class Readback:
    values: np.ndarray  # the interior, shaped
    out_of_bounds: str | None  # a one-line account of writes into the guard bands


def read(backend: Backend, buf: GuardedBuffer) -> Readback:
    image = np.empty(buf.count + 2 * buf.guard, dtype=buf.dtype)
    backend.download(buf.whole, image)
    bits = image.view(np.uint32)
    before = np.flatnonzero(bits[: buf.guard] != CANARY_BITS)
    after = np.flatnonzero(bits[buf.guard + buf.count :] != CANARY_BITS)
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
    values = image[buf.guard : buf.guard + buf.count].reshape(buf.shape).copy()
    return Readback(values, message)
