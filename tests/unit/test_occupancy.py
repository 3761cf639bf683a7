from grader.course.occupancy import HOPPER_SM90, device_limits, occupancy


def test_full_occupancy_with_few_registers():
    o = occupancy(256, 32, 0, HOPPER_SM90)
    assert (o.blocks_per_sm, o.active_warps, o.max_warps) == (8, 64, 64)
    assert o.fraction == 1.0


def test_registers_limit_as_in_the_lecture():
    # 64 registers x 256 threads = 16384 per block: 4 blocks of 8 warps fit in 65536 registers.
    o = occupancy(256, 64, 0, HOPPER_SM90)
    assert o.blocks_per_sm == 4 and o.limited_by == "registers"
    assert o.fraction == 0.5
    # one more register per thread rounds up to 72 per thread per warp allocation: 3 blocks
    assert occupancy(256, 65, 0, HOPPER_SM90).blocks_per_sm == 3


def test_shared_memory_limit():
    o = occupancy(256, 16, 48 * 1024, HOPPER_SM90)
    assert o.limited_by == "shared memory" and o.blocks_per_sm == 4


def test_unknown_device_gives_none():
    assert occupancy(256, 32, 0, {"warp_size": 32}) is None


def test_limits_from_compute_capability():
    limits = device_limits({"cc_major": 9, "cc_minor": 0, "warp_size": 32})
    assert occupancy(1024, 32, 0, limits).blocks_per_sm == 2
