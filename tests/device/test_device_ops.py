"""The grader's own device kernels (grader.device_ops), on every device present."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from grader.backends import open_backend
from grader.backends.base import Backend, Buffer
from grader.device_ops import CHECKSUM_CHUNK, Comparison, DeviceOps, chunks, host_checksum, sample_indices
from tests.conftest import target_params

POISON = 0x7FC00000
SENTINEL = 0xDEADBEEF
LOW, HIGH = -2.0, 3.0


class Device:
    """One open backend, its DeviceOps, and the buffers a test made (released after it)."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.ops = DeviceOps(backend)
        self.buffers: list[Buffer] = []

    def alloc(self, count: int) -> Buffer:
        buffer = self.backend.alloc(count * 4)
        self.buffers.append(buffer)
        return buffer

    def put(self, array: np.ndarray) -> Buffer:
        buffer = self.alloc(array.size)
        self.backend.upload(buffer, array)
        return buffer

    def get(self, buffer: Buffer, count: int, dtype: type = np.float32) -> np.ndarray:
        out = np.empty(count, dtype=dtype)
        self.backend.download(buffer, out)
        return out

    def fill(self, count: int, seed: int, low: float = LOW, high: float = HIGH) -> np.ndarray:
        buffer = self.alloc(count)
        self.ops.fill_uniform(buffer, count, seed, low, high)
        return self.get(buffer, count)

    def release_all(self) -> None:
        for buffer in self.buffers:
            self.backend.release(buffer)
        self.buffers.clear()


@pytest.fixture(scope="module", params=target_params())
def opened(request: pytest.FixtureRequest) -> Iterator[Device]:
    target = request.param
    backend = open_backend(target.backend, target.index)
    try:
        yield Device(backend)  # one DeviceOps per device: the kernels compile once
    finally:
        backend.close()


@pytest.fixture
def dev(opened: Device) -> Iterator[Device]:
    yield opened
    opened.release_all()


def _hash(x: np.ndarray) -> np.ndarray:
    """lowbias32, as the kernels compute it."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def host_uniform(count: int, seed: int, low: float, high: float) -> np.ndarray:
    """What lab_fill_uniform writes, computed on the host (float32 arithmetic, no FMA)."""
    lo = np.array([seed & 0xFFFFFFFF], dtype=np.uint32)
    hi = np.array([(seed >> 32) & 0xFFFFFFFF], dtype=np.uint32)
    k0 = _hash(lo ^ np.uint32(0x9E3779B9))
    k1 = _hash(hi ^ k0 ^ np.uint32(0x85EBCA6B))
    h = _hash(_hash(np.arange(count, dtype=np.uint32) ^ k0) + k1)
    u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    low32, high32 = np.float32(low), np.float32(high)
    v = low32 + (high32 - low32) * u
    return np.where(v >= high32, np.nextafter(high32, low32), v)


# --- fill_uniform -------------------------------------------------------------------------------


def test_fill_is_uniform_in_range(dev: Device) -> None:
    count = (1 << 20) + 3
    values = dev.fill(count, seed=12345)
    assert values.min() >= LOW and values.max() < HIGH
    assert np.count_nonzero(values) > count // 2
    span = HIGH - LOW
    assert abs(values.mean(dtype=np.float64) - (LOW + HIGH) / 2) < 3e-3 * span
    assert abs(values.std(dtype=np.float64) - span / np.sqrt(12)) < 3e-3 * span
    # A histogram of 16 bins: each holds 1/16 of the values within 2 %.
    counts, _ = np.histogram(values, bins=16, range=(LOW, HIGH))
    assert np.all(np.abs(counts / (count / 16) - 1) < 0.02)


def test_fill_matches_the_host_formula(dev: Device) -> None:
    count = 5000
    seed = (7 << 32) | 99
    got = dev.fill(count, seed)
    assert np.array_equal(got.view(np.uint32), host_uniform(count, seed, LOW, HIGH).view(np.uint32))


def test_fill_never_reaches_high(dev: Device) -> None:
    # A range one float wide: low + span * u rounds to high for about half the values.
    low = np.float32(1.0)
    high = np.nextafter(low, np.float32(2.0))
    values = dev.fill(4096, seed=3, low=float(low), high=float(high))
    assert np.all(values == low)


def test_fill_same_seed_same_bits_other_seed_differs(dev: Device) -> None:
    count = 100_003
    first = dev.fill(count, seed=42).view(np.uint32)
    again = dev.fill(count, seed=42).view(np.uint32)
    assert np.array_equal(first, again)
    for other in (43, 42 + (1 << 32)):  # the low word and the high word both count
        different = dev.fill(count, seed=other).view(np.uint32)
        assert np.mean(first == different) < 1e-3, other


def test_fill_writes_exactly_count_elements_of_a_view(dev: Device) -> None:
    count = 1000  # not a multiple of 256
    align = dev.backend.info.limits.get("base_align_bytes", 256)
    guard = max(align // 4, 1)
    whole = dev.alloc(guard + count + guard)
    dev.backend.fill32(whole, SENTINEL)
    inner = dev.backend.view(whole, guard * 4, (count + 1) * 4)  # one word more than filled
    dev.ops.fill_uniform(inner, count, 7, LOW, HIGH)
    bits = dev.get(whole, guard + count + guard, np.uint32)
    assert np.all(bits[:guard] == SENTINEL)
    assert np.all(bits[guard + count :] == SENTINEL)
    expected = dev.fill(count, seed=7).view(np.uint32)
    assert np.array_equal(bits[guard : guard + count], expected)


def test_fill_rejects_a_count_larger_than_the_buffer(dev: Device) -> None:
    with pytest.raises(ValueError):
        dev.ops.fill_uniform(dev.alloc(10), 11, 0, LOW, HIGH)


# --- compare ------------------------------------------------------------------------------------


def _values(count: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, count).astype(np.float32)


def test_compare_identical_buffers(dev: Device) -> None:
    count = 300_001
    buffer = dev.alloc(count)
    dev.ops.fill_uniform(buffer, count, 5, LOW, HIGH)
    copy = dev.put(dev.get(buffer, count))
    assert dev.ops.compare(copy, buffer, count, 0.0, 0.0) == Comparison(count, 0, 0, 0, ())
    assert dev.ops.compare(buffer, buffer, count, 0.0, 0.0).ok


def test_compare_finds_changed_elements(dev: Device) -> None:
    count = 200_000
    want = _values(count)
    got = want.copy()
    changed = [0, 255, 256, 131_071, count - 1]
    got[changed] += np.float32(0.01)
    result = dev.ops.compare(dev.put(got), dev.put(want), count, 1e-5, 1e-5)
    assert result == Comparison(count, 5, 0, 0, tuple(changed))
    assert not result.ok


def test_compare_records_eight_of_many_mismatches(dev: Device) -> None:
    count = 70_000
    want = _values(count)
    result = dev.ops.compare(dev.put(want + np.float32(1)), dev.put(want), count, 0.0, 0.5)
    assert result.mismatches == count
    assert len(result.indices) == 8 and len(set(result.indices)) == 8
    assert list(result.indices) == sorted(result.indices) and result.indices[-1] < count


def test_compare_counts_poison_and_computed_nans(dev: Device) -> None:
    count = 10_000
    want = _values(count)
    got = want.copy()
    bits = got.view(np.uint32)
    poisoned = [3, 4000, 9999]
    bits[poisoned] = POISON
    bits[[17, 5000]] = [0x7FC00001, 0xFFC00000]  # NaNs, but not the poison
    want_nan = want.copy()
    want_nan[600] = np.nan  # a NaN only in `want` is a mismatch, and not counted as either
    result = dev.ops.compare(dev.put(got), dev.put(want_nan), count, 1e-3, 1e-3)
    assert result == Comparison(count, 6, 3, 2, (3, 17, 600, 4000, 5000, 9999))


def test_compare_tolerance_at_the_boundary(dev: Device) -> None:
    # Values whose tolerances are exact in float32, so the boundary is exact too.
    up = np.float32(np.inf)
    down = np.float32(-np.inf)
    cases = [  # (got, want, rtol, atol, matches)
        (1.25, 1.0, 0.0, 0.25, True),
        (np.nextafter(np.float32(1.25), up), 1.0, 0.0, 0.25, False),
        (0.75, 1.0, 0.0, 0.25, True),
        (np.nextafter(np.float32(0.75), down), 1.0, 0.0, 0.25, False),
        (-2.25, -2.0, 0.125, 0.0, True),
        (np.nextafter(np.float32(-2.25), down), -2.0, 0.125, 0.0, False),
        (5.0, 4.0, 0.125, 0.5, True),
        (np.nextafter(np.float32(5.0), up), 4.0, 0.125, 0.5, False),
        (3.0, 4.0, 0.125, 0.5, True),
        (np.nextafter(np.float32(3.0), down), 4.0, 0.125, 0.5, False),
    ]
    for got, want, rtol, atol, matches in cases:
        result = dev.ops.compare(dev.put(np.array([got], np.float32)),
                                 dev.put(np.array([want], np.float32)), 1, rtol, atol)
        assert result.ok == matches, (got, want, rtol, atol)


def test_compare_nothing(dev: Device) -> None:
    empty = dev.alloc(0)
    assert dev.ops.compare(empty, empty, 0, 0.0, 0.0) == Comparison(0, 0, 0, 0, ())
    dev.ops.fill_uniform(empty, 0, 1, LOW, HIGH)  # a launch that writes nothing


# -- sample_into (grader.session_audit) -----------------------------------------------------------


def test_sample_takes_the_host_formula_s_indices(dev: Device) -> None:
    words = np.random.default_rng(8).integers(0, 1 << 32, size=100_003, dtype=np.uint32)
    source = dev.put(words)
    out = dev.alloc(4096)
    seed = (0xABCDEF << 32) | 12345
    dev.ops.sample_into(out, source, words.size, seed, 4096)
    indices = sample_indices(words.size, seed, 4096)
    np.testing.assert_array_equal(dev.get(out, 4096, np.uint32), words[indices])
    assert len(set(indices.tolist())) > 4000 and indices.max() < words.size  # spread over the buffer
    other = sample_indices(words.size, seed + 1, 4096)
    assert (other != indices).mean() > 0.99, "another seed, other places"


def test_sample_of_every_word_is_the_buffer_in_order(dev: Device) -> None:
    words = np.arange(5000, dtype=np.uint32) * np.uint32(2654435761)
    out = dev.alloc(5000)
    dev.ops.sample_into(out, dev.put(words), 5000, 77, 5000)
    np.testing.assert_array_equal(dev.get(out, 5000, np.uint32), words)
    with pytest.raises(ValueError):
        dev.ops.sample_into(out, dev.put(words), 5000, 77, 5001)  # more picks than words


# -- the write fence's kernels (grader.write_fence) ------------------------------------------

@pytest.fixture(params=["device", "other"])
def layout(request: pytest.FixtureRequest, dev: Device) -> Iterator[Device]:
    """The kernels in this device's layout, and in the other one (a CPU device's runs per
    work-item, or a GPU's side by side): the same results either way."""
    kept = dev.ops._contiguous
    if request.param == "other":
        dev.ops._contiguous = 1 - kept
    try:
        yield dev
    finally:
        dev.ops._contiguous = kept


def _checksums(dev: Device, buffer: Buffer, words: int, first: int = 0) -> np.ndarray:
    sums = dev.alloc(2 * (first + chunks(words)))
    dev.backend.fill32(sums, SENTINEL)
    dev.ops.checksum_into(buffer, words, sums, first)
    return dev.get(sums, 2 * (first + chunks(words)), np.uint32).reshape(-1, 2)


def test_checksum_matches_the_host_formula(layout: Device) -> None:
    dev = layout
    words = np.random.default_rng(5).integers(0, 1 << 32, size=2 * CHECKSUM_CHUNK + 333, dtype=np.uint32)
    got = _checksums(dev, dev.put(words), words.size, first=2)
    assert (got[:2] == SENTINEL).all(), "pairs before `first` are left alone"
    np.testing.assert_array_equal(got[2:], host_checksum(words))


def test_checksum_changes_with_any_one_word(layout: Device) -> None:
    dev = layout
    words = np.full(CHECKSUM_CHUNK * 3, 0x7FA5A5A5, dtype=np.uint32)
    buffer = dev.put(words)
    before = _checksums(dev, buffer, words.size)
    words[CHECKSUM_CHUNK + 9] ^= 1
    dev.backend.upload(buffer, words)
    after = _checksums(dev, buffer, words.size)
    assert list(np.flatnonzero((after != before).any(axis=1))) == [1]


def test_checksum_from_an_unaligned_start(layout: Device) -> None:
    dev = layout
    words = np.random.default_rng(6).integers(0, 1 << 32, size=CHECKSUM_CHUNK + 1000, dtype=np.uint32)
    buffer = dev.put(words)
    sums = dev.alloc(2 * chunks(words.size - 7))
    dev.ops.checksum_into(buffer, words.size - 7, sums, 0, start=7)
    got = dev.get(sums, 2 * chunks(words.size - 7), np.uint32).reshape(-1, 2)
    np.testing.assert_array_equal(got, host_checksum(words[7:]))
    with pytest.raises(ValueError):
        dev.ops.checksum_into(buffer, words.size, sums, 0, start=1)  # past the buffer's end
