"""Whether a launch wrote anywhere but its own outputs: the far writes that guard bands miss.

A guard band catches a write just past a buffer. A write further away lands, on a GPU, in
another allocation of the grader's (another role's buffer, another placement, the cache-flush
buffer) or faults where nothing is mapped; on a CPU device it may land anywhere in the grading
process. A `WriteFence` around one launch tells which:

- every `Region` (grader memory the launch must not write: the other kernels' buffers, the
  submission's own inputs) is checksummed on the device before the launch and after it (the
  grader's lab_checksum: a pair of words per 256 KiB, so a change is placed within 256 KiB);
- the moats of the submission's `memory.Arena` (MOAT_BYTES before, between and after its
  buffers, whatever the allocator does) are scanned after it for any word that is not
  MOAT_BITS, the first one's place exact.

Both passes are queued on the device and read back with one download after the launch; they
read each byte once and write nothing but their results, so nothing timed includes them. A
backend without the grader's kernels (grader.device_ops) reads the memory back and does the
same on the host. A launch that faults never gets here: the caller reports its error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.backends.base import Backend, Buffer
from grader.device_ops import CHECKSUM_CHUNK, MAX_WORDS, DeviceOps, chunks, host_checksum, scanned
from grader.memory import MOAT_BITS, Arena, Moat
from grader.results import FailureKind


@dataclass(frozen=True)
class Region:
    """Grader memory a launch must not write: `buffer`'s words, named in a message as `what`
    (e.g. "the reference kernel's input `in`"); a change there is a `failure` of that kind."""

    what: str
    buffer: Buffer
    failure: FailureKind = FailureKind.OUT_OF_BOUNDS


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
    buffer: Buffer
    offset: int  # bytes into the region
    words: int
    first: int  # its first checksum pair


class WriteFence:
    """Checksums of `regions` and the moats of `arena` (None: none) around a launch: `before()`
    just before it, `after()` just after, which returns the first FarWrite or None. `ops`: the
    grader's kernels on this device (grader.device_ops.DeviceOps), None to do it on the host.
    Allocates its small result buffers at once; `release()` frees them (never raises)."""

    def __init__(self, backend: Backend, ops: DeviceOps | None, regions: list[Region], arena: Arena | None = None):
        self.backend = backend
        self.ops = ops
        self.arena = arena
        self.moats = arena.moats() if arena is not None else []
        self.parts: list[_Part] = []
        first = 0
        for region in regions:
            words = region.buffer.nbytes // 4
            for start in range(0, words, MAX_WORDS):
                count = min(MAX_WORDS, words - start)
                view = region.buffer if count == words else backend.view(region.buffer, start * 4, count * 4)
                self.parts.append(_Part(region, view, start * 4, count, first))
                first += chunks(count)
        self.pairs = first
        self._sums: Buffer | None = None
        self._scans: Buffer | None = None
        self._before: np.ndarray | None = None  # the host's checksums, where there is no `ops`
        if any(moat.nbytes // 4 > MAX_WORDS for moat in self.moats):
            raise ValueError("a moat is larger than one scan covers")
        if ops is not None:
            # Before and after side by side: one download reads both.
            self._sums = backend.alloc(16 * max(1, self.pairs))
            self._scans = backend.alloc(8 * max(1, len(self.moats)))

    def before(self) -> None:
        """Queue the checksums of every region as they are now (the launch comes next)."""
        if self.ops is None:
            self._before = self._host_sums()
            return
        assert self._sums is not None
        for part in self.parts:
            self.ops.checksum_into(part.buffer, part.words, self._sums, part.first)

    def after(self) -> FarWrite | None:
        """After the launch: the regions' checksums again and the moats scanned; the first region
        that changed (in the order given), else the first moat written into, else None."""
        if self.ops is None:
            assert self._before is not None, "after() without before()"
            sums = np.concatenate([self._before, self._host_sums()])
            scans = self._host_scans()
        else:
            assert self._sums is not None and self._scans is not None
            ops = self.ops
            for part in self.parts:
                ops.checksum_into(part.buffer, part.words, self._sums, self.pairs + part.first)
            self.backend.fill32(self._scans, 0)
            if self.arena is not None and self.arena.buffer is not None:
                for slot, moat in enumerate(self.moats):
                    ops.scan_into(self.arena.buffer, moat.offset // 4, moat.nbytes // 4, int(MOAT_BITS), self._scans, slot)
            sums = np.zeros(self._sums.nbytes // 4, dtype=np.uint32)
            scans = np.zeros(self._scans.nbytes // 4, dtype=np.uint32)
            self.backend.download(self._sums, sums)
            self.backend.download(self._scans, scans)
        return self._finding(sums.reshape(-1, 2), scans)

    def _finding(self, sums: np.ndarray, scans: np.ndarray) -> FarWrite | None:
        before, after = sums[: self.pairs], sums[self.pairs: 2 * self.pairs]
        for part in self.parts:
            own = slice(part.first, part.first + chunks(part.words))
            changed = np.flatnonzero((before[own] != after[own]).any(axis=1))
            if changed.size:
                at = part.offset + int(changed[0]) * CHECKSUM_CHUNK * 4
                where = f"into {part.region.what}" + (f", ~{size_text(at)} into it" if at else ", near its start")
                return FarWrite(part.region.failure, where)
        for slot, moat in enumerate(self.moats):
            count, lowest = scanned(scans[2 * slot: 2 * slot + 2])
            if count:
                assert lowest is not None
                return FarWrite(FailureKind.OUT_OF_BOUNDS, f"into the space the grader keeps free around its "
                                f"buffers, {moat_text(moat, moat.offset + 4 * lowest)}")
        return None

    def _host_sums(self) -> np.ndarray:
        """Every part's checksums, from its words read back (no `ops`)."""
        found = []
        for part in self.parts:
            words = np.empty(part.words, dtype=np.uint32)
            self.backend.download(part.buffer, words)
            found.append(host_checksum(words))
        return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.uint32)

    def _host_scans(self) -> np.ndarray:
        """Every moat's scan words, from its words read back (no `ops`)."""
        out = np.zeros(max(1, 2 * len(self.moats)), dtype=np.uint32)
        if self.arena is None or self.arena.buffer is None:
            return out
        words = np.empty(self.arena.nbytes // 4, dtype=np.uint32)
        self.backend.download(self.arena.buffer, words)
        for slot, moat in enumerate(self.moats):
            wrong = np.flatnonzero(words[moat.offset // 4: (moat.offset + moat.nbytes) // 4] != MOAT_BITS)
            if wrong.size:
                out[2 * slot], out[2 * slot + 1] = wrong.size, ~np.uint32(wrong[0])
        return out

    def release(self) -> None:
        """Free the result buffers; never raises (it runs in `finally`, often after a fault)."""
        for buffer in (self._sums, self._scans):
            if buffer is not None:
                try:
                    self.backend.release(buffer)
                except Exception:  # noqa: BLE001 - a dead context's memory: nothing to free
                    pass
        self._sums = self._scans = None
