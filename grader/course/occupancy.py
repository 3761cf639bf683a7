"""Theoretical occupancy, as lecture 3's occupancy calculator works it out: how many blocks of
a kernel fit on one multiprocessor, limited by threads, registers, shared memory or the block
count, and which of those is the limit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Occupancy:
    threads_per_block: int
    registers_per_thread: int
    shared_per_block: int
    blocks_per_sm: int
    active_warps: int
    max_warps: int
    limited_by: str  # "threads", "registers", "shared memory", "blocks per SM"
    limits: dict[str, int]  # blocks per SM each resource alone would allow

    @property
    def fraction(self) -> float:
        return self.active_warps / self.max_warps if self.max_warps else 0.0


REQUIRED = ("warp_size", "max_threads_per_sm", "registers_per_sm", "shared_per_sm")


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step if step > 0 else value


def occupancy(threads_per_block: int, registers_per_thread: int, shared_per_block: int,
              device: dict[str, int]) -> Occupancy | None:
    """Blocks and warps per multiprocessor; None when the device does not tell its limits."""
    if any(key not in device for key in REQUIRED) or threads_per_block <= 0:
        return None
    warp = device["warp_size"]
    warps_per_block = -(-threads_per_block // warp)
    max_warps = device["max_threads_per_sm"] // warp
    max_blocks = device.get("max_blocks_per_sm", 32)

    by_threads = max_warps // warps_per_block
    # Registers are allocated per warp, rounded up to the allocation unit.
    regs_per_warp = _round_up(max(registers_per_thread, 1) * warp, device.get("register_granularity", 256))
    warps_by_regs = device["registers_per_sm"] // regs_per_warp
    by_registers = warps_by_regs // warps_per_block
    if registers_per_thread > device.get("max_registers_per_thread", 255):
        by_registers = 0
    shared = _round_up(shared_per_block + device.get("reserved_shared_per_block", 0),
                       device.get("shared_granularity", 128))
    by_shared = device["shared_per_sm"] // shared if shared_per_block > 0 else max_blocks
    limits = {
        "threads": by_threads,
        "registers": by_registers,
        "shared memory": by_shared,
        "blocks per SM": max_blocks,
    }
    limited_by = min(limits, key=lambda k: (limits[k], list(limits).index(k)))
    blocks = max(0, min(limits.values()))
    return Occupancy(
        threads_per_block=threads_per_block,
        registers_per_thread=registers_per_thread,
        shared_per_block=shared_per_block,
        blocks_per_sm=blocks,
        active_warps=blocks * warps_per_block,
        max_warps=max_warps,
        limited_by=limited_by,
        limits=limits,
    )


# Hopper-class limits (compute capability 9.0), for `lab occupancy` on a machine with no GPU.
HOPPER_SM90 = {
    "warp_size": 32,
    "max_threads_per_sm": 2048,
    "max_blocks_per_sm": 32,
    "registers_per_sm": 65536,
    "register_granularity": 256,
    "max_registers_per_thread": 255,
    "shared_per_sm": 233472,
    "shared_granularity": 128,
    "reserved_shared_per_block": 1024,
}

# Per compute capability, for backends that give only the capability (NVIDIA's OpenCL).
BY_COMPUTE_CAPABILITY = {
    (7, 0): {"max_threads_per_sm": 2048, "shared_per_sm": 98304, "max_blocks_per_sm": 32},
    (7, 5): {"max_threads_per_sm": 1024, "shared_per_sm": 65536, "max_blocks_per_sm": 16},
    (8, 0): {"max_threads_per_sm": 2048, "shared_per_sm": 167936, "max_blocks_per_sm": 32},
    (8, 6): {"max_threads_per_sm": 1536, "shared_per_sm": 102400, "max_blocks_per_sm": 16},
    (8, 9): {"max_threads_per_sm": 1536, "shared_per_sm": 102400, "max_blocks_per_sm": 24},
    (9, 0): {"max_threads_per_sm": 2048, "shared_per_sm": 233472, "max_blocks_per_sm": 32},
}


def device_limits(limits: dict[str, int]) -> dict[str, int]:
    """Complete a backend's limits from its compute capability where it gave only that."""
    if all(key in limits for key in REQUIRED):
        return limits
    major, minor = limits.get("cc_major"), limits.get("cc_minor")
    if major is None or minor is None or (major, minor) not in BY_COMPUTE_CAPABILITY:
        return limits
    base = {**HOPPER_SM90, **BY_COMPUTE_CAPABILITY[(major, minor)]}
    return {**base, **limits}


def next_register_cliff(threads_per_block: int, registers_per_thread: int, shared_per_block: int,
                        device: dict[str, int]) -> int | None:
    """The smallest register count above the current one at which fewer blocks fit."""
    now = occupancy(threads_per_block, registers_per_thread, shared_per_block, device)
    if now is None:
        return None
    for regs in range(registers_per_thread + 1, device.get("max_registers_per_thread", 255) + 1):
        found = occupancy(threads_per_block, regs, shared_per_block, device)
        if found is not None and found.blocks_per_sm < now.blocks_per_sm:
            return regs
    return None
