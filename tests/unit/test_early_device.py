"""The worker opens its GPU while its request is on its way (grader.steps.device.open_early); the
OpenDevice step takes that device only where the request asks for it."""

from __future__ import annotations

import pytest

from grader.backends import registry
from grader.backends.discovery import discover
from grader.steps.context import Request
from grader.steps.device import EarlyDevice, open_early

PRESENT = [kind for kind in registry.backends() if discover((kind,)).of(kind)]


def request(kind, device: int = -1, choice: str | None = None) -> Request:
    return Request("course", "transpose_coalesced", "", "k", kind, device, 0, device_choice=choice)


@pytest.mark.skipif(not PRESENT, reason="no device here (PoCL, CUDA)")
@pytest.mark.parametrize("kind", PRESENT, ids=lambda kind: kind.name)
def test_a_gpu_is_opened_early_and_a_cpu_device_is_not(kind):
    best = discover((kind,)).of(kind)[0]
    opened = open_early(kind, -1)
    if best.kind != "gpu":
        assert opened is None and open_early(kind, best.index) is None  # PoCL: opened with its request
        return
    assert opened is not None and opened.chosen and opened.backend.info.kind == "gpu"
    named = open_early(kind, opened.index)
    assert named is not None and not named.chosen and named.index == opened.index
    for early in (opened, named):
        early.backend.close()


def test_the_early_device_is_taken_only_where_the_request_asks_for_it():
    kind = registry.backends()[0]
    best = EarlyDevice(2, True, backend=None)  # the backend's best, chosen: device 2
    assert best.fits(request(kind))  # no device named: the backend's best
    assert best.fits(request(kind, 2)) and best.fits(request(kind, -1, "2"))
    assert not best.fits(request(kind, 3)) and not best.fits(request(kind, -1, "3"))
    assert not best.fits(request(kind, -1, "some other name"))
    named = EarlyDevice(2, False, backend=None)  # named by index on the command line
    assert named.fits(request(kind, 2)) and not named.fits(request(kind))  # the best is chosen anew


def test_no_row_or_no_such_device_opens_nothing():
    assert open_early(None, -1) is None
    if PRESENT:
        assert open_early(PRESENT[0], 10_000) is None  # said by the OpenDevice step, which opens it again
