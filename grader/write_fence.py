"""Whether a launch wrote anywhere but its own outputs: the far writes that guard bands miss.

A guard band catches a write just past a buffer. A write further away lands, on a GPU, in
another allocation of the grader's (another role's buffer, another placement, the cache-flush
buffer) or faults where nothing is mapped; on a CPU device it may land anywhere in the grading
process. A `WriteFence` around one launch tells which:

- every `Region` (grader memory the launch must not write: the other kernels' buffers, the
  submission's own inputs) is checksummed on the device before the launch and after it (the
  grader's lab_checksum: a pair of words per 256 KiB, so a change is placed within 256 KiB);
- the moats of the submission's `memory.Arena` (MOAT_BYTES before, between and after its
  buffers, whatever the allocator does) are checksummed once when the fence is made and again
  after each launch; where one changed, its chunk is read back for the first word that is not
  MOAT_BITS, whose place is then exact.

The passes are queued on the device and read back with one download after the launch; they
read each byte once and write nothing but their results, so nothing timed includes them. A
backend without the grader's kernels (grader.device_ops) reads the memory back and does the
same on the host. A launch that faults never gets here: the caller reports its error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.backends.base import Backend, Buffer
from grader.device_ops import CHECKSUM_CHUNK, MAX_WORDS, DeviceOps, chunks, host_checksum
from grader.memory import ARENA_ALIGN, MOAT_BITS, Arena, Moat
from grader.results import FailureKind


@dataclass(frozen=True)
class Region:
    """Grader memory a launch must not write: `buffer`'s words, named in a message as `what`
    (e.g. "the reference kernel's input `in`"); a change there is a `failure` of that kind.
    `lead`: the bytes of guard band before the part a kernel is given, `inner`: that part's
    bytes (None: the rest), so that a change is placed from where the buffer starts."""

    what: str
    buffer: Buffer
    failure: FailureKind = FailureKind.OUT_OF_BOUNDS
    lead: int = 0
    inner: int | None = None

    def place(self, start: int, end: int) -> str:
        """Where bytes `start` to `end` of the buffer lie, in words: "into <what>, ~X into it", or
        into one of its guard bands."""
        inner = self.inner if self.inner is not None else self.buffer.nbytes - self.lead
        if end <= self.lead:
            return f"into the guard band before {self.what}"
        if start >= self.lead + inner:
            return f"into the guard band after {self.what}"
        offset = max(0, start - self.lead)
        return f"into {self.what}, " + (f"~{size_text(offset)} into it" if offset else "near its start")


@dataclass(frozen=True)
class FarWrite:
    """What a fence found: the failure's kind, and where the launch wrote (one line, e.g. "into
    the space the grader keeps free around its buffers, ~64.0 MiB past the end of `out`")."""

    failure: FailureKind
    where: str


def size_text(nbytes: int) -> str:
    """A distance as a student reads it: bytes, KiB or MiB."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    if nbytes < 1 << 20:
        return f"{nbytes / 1024:.0f} KiB"
    return f"{nbytes / (1 << 20):.1f} MiB"


def moat_text(moat: Moat, offset: int) -> str:
    """Where the word `offset` bytes into the arena (inside `moat`) lies, from the nearer of the
    buffers on either side (measured from the part the kernel is given, guard bands counted)."""
    past = offset - (moat.after.inner_offset + moat.after.inner_nbytes) if moat.after is not None else None
    before = moat.before.inner_offset - offset if moat.before is not None else None
    if past is not None and (before is None or past <= before):
        assert moat.after is not None
        return f"~{size_text(past)} past the end of `{moat.after.name}`"
    assert moat.before is not None and before is not None
    return f"~{size_text(before)} before the start of `{moat.before.name}`"


@dataclass(frozen=True)
class _Part:
    """A piece of a region, at most MAX_WORDS words, and where its checksums start."""

    region: Region
    buffer: Buffer  # the region's buffer (a moat: the arena's)
    at: int  # bytes into `buffer` where the part starts (a multiple of 4, no more aligned)
    offset: int  # bytes into the region (a moat: into the moat)
    words: int
    first: int  # its first checksum pair
    moat: Moat | None = None  # the arena's moat it is a piece of


class WriteFence:
    """Checksums of `regions` and the moats of `arena` (None: none) around a launch: `before()`
    just before it, `after()` just after, which returns the first FarWrite or None. The moats
    are checksummed once, here: nothing may write them, so each `after()` compares with that.
    `ops`: the grader's kernels on this device (grader.device_ops.DeviceOps), None to do it on
    the host. Allocates its small result buffer at once; `release()` frees it (never raises)."""

    def __init__(self, backend: Backend, ops: DeviceOps | None, regions: list[Region], arena: Arena | None = None):
        self.backend = backend
        self.ops = ops
        self.arena = arena
        self.moats = arena.moats() if arena is not None else []
        self.parts: list[_Part] = []
        self.pairs = 0
        for region in regions:
            self._add(region, region.buffer, None)
        for moat in self.moats:
            assert arena is not None and arena.buffer is not None
            self._add(Region("the space the grader keeps free around its buffers", arena.buffer), arena.buffer, moat)
        self._sums: Buffer | None = None
        # The host's checksums, where there is no `ops`.
        self._before = np.zeros((self.pairs, 2), dtype=np.uint32)
        self._after = np.zeros((self.pairs, 2), dtype=np.uint32)
        if ops is not None:
            # Before and after side by side: one download reads both.
            self._sums = backend.alloc(16 * max(1, self.pairs))
        self._sum(lambda part: part.moat is not None, after=False)

    def _add(self, region: Region, buffer: Buffer, moat: Moat | None) -> None:
        """`region`'s parts of at most MAX_WORDS words (a moat: its stretch of the arena), none
        across the edge of its guard bands (so a change is placed in one or the other)."""
        if moat is not None:
            base, edges = moat.offset, [0, moat.nbytes]
        else:
            inner = region.inner if region.inner is not None else buffer.nbytes - region.lead
            base, edges = 0, sorted({0, region.lead, region.lead + inner, buffer.nbytes})
        for low, high in zip(edges, edges[1:]):
            for start in range(low // 4, high // 4, MAX_WORDS):
                count = min(MAX_WORDS, high // 4 - start)
                self.parts.append(_Part(region, buffer, base + start * 4, start * 4, count, self.pairs, moat))
                self.pairs += chunks(count)

    def _sum(self, which: Callable[[_Part], bool], after: bool) -> None:
        """Checksum the parts `which` picks, into the before or the after half (queued on the
        device; on the host, at once)."""
        for part in filter(which, self.parts):
            if self.ops is not None:
                assert self._sums is not None
                self.ops.checksum_into(part.buffer, part.words, self._sums, self.pairs * after + part.first,
                                       part.at // 4)
            else:
                own = host_checksum(self._read(part.buffer, part.at, part.words))
                if after:
                    self._after[part.first: part.first + own.shape[0]] = own
                else:
                    self._before[part.first: part.first + own.shape[0]] = own

    def before(self) -> None:
        """Checksum every region as it is now (the launch comes next; queued, not waited for)."""
        self._sum(lambda part: part.moat is None, after=False)

    def after(self) -> FarWrite | None:
        """After the launch: every region and moat checksummed again and compared; the first
        region that changed (in the order given), else the first moat written into, else None."""
        self._after = np.zeros((self.pairs, 2), dtype=np.uint32)
        self._sum(lambda part: True, after=True)
        if self.ops is not None:
            assert self._sums is not None
            sums = np.zeros((2 * max(1, self.pairs), 2), dtype=np.uint32)
            self.backend.download(self._sums, sums)
            before, after = sums[: self.pairs], sums[self.pairs: 2 * self.pairs]
        else:
            before, after = self._before, self._after
        for part in self.parts:
            own = slice(part.first, part.first + chunks(part.words))
            changed = np.flatnonzero((before[own] != after[own]).any(axis=1))
            if changed.size:
                return self._place(part, int(changed[0]))
        return None

    def _place(self, part: _Part, chunk: int) -> FarWrite:
        """The finding for a change in `part`'s `chunk`-th checksum chunk: in a moat, the first
        word there that is not MOAT_BITS (read back: 256 KiB), placed from its neighbours."""
        at = part.offset + chunk * CHECKSUM_CHUNK * 4
        if part.moat is None:  # placed within the chunk's 256 KiB: what was there before is gone
            end = min(at + CHECKSUM_CHUNK * 4, part.offset + part.words * 4)
            return FarWrite(part.region.failure, part.region.place(at, end))
        words = self._read(part.buffer, part.at + chunk * CHECKSUM_CHUNK * 4,
                           min(CHECKSUM_CHUNK, part.words - chunk * CHECKSUM_CHUNK))
        wrong = np.flatnonzero(words != MOAT_BITS)
        offset = part.moat.offset + at + (4 * int(wrong[0]) if wrong.size else 0)
        return FarWrite(FailureKind.OUT_OF_BOUNDS, f"into {part.region.what}, {moat_text(part.moat, offset)}")

    def _read(self, buffer: Buffer, at: int, words: int) -> np.ndarray:
        """`words` words of `buffer` from byte `at` (a multiple of 4) on, read back through a view
        that starts at ARENA_ALIGN (every device's sub-buffer alignment divides it)."""
        start = at // ARENA_ALIGN * ARENA_ALIGN
        nbytes = at - start + 4 * words
        data = np.empty(nbytes // 4, dtype=np.uint32)
        whole = start == 0 and nbytes == buffer.nbytes
        self.backend.download(buffer if whole else self.backend.view(buffer, start, nbytes), data)
        return data[(at - start) // 4:]

    def release(self) -> None:
        """Free the result buffer; never raises (it runs in `finally`, often after a fault)."""
        if self._sums is not None:
            try:
                self.backend.release(self._sums)
            except Exception:  # noqa: BLE001 - a dead context's memory: nothing to free
                pass
        self._sums = None
