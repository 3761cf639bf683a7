"""The worker opens its device while its request is on its way (grader.worker.open_early), on
each device present; the OpenDevice step takes that device only where the request asks for it."""

from __future__ import annotations

import pytest

from grader.backends import registry
from grader.backends.discovery import discover
from grader.steps.context import Request
from grader.worker import open_early

PRESENT = [kind for kind in registry.backends() if discover((kind,)).of(kind)]


def request(kind, device: int = -1, choice: str | None = None) -> Request:
    return Request("course", "transpose_coalesced", "", "k", kind, device, 0, device_choice=choice)


@pytest.mark.skipif(not PRESENT, reason="no device here (PoCL, CUDA)")
@pytest.mark.parametrize("kind", PRESENT, ids=lambda kind: kind.name)
def test_the_early_device_is_taken_only_where_the_request_asks_for_it(kind):
    best = open_early(kind, -1)
    assert best is not None and best.chosen and best.backend.info.name
    index = best.index
    assert best.fits(request(kind))  # no device named: the backend's best
    assert best.fits(request(kind, index)) and best.fits(request(kind, -1, str(index)))
    assert not best.fits(request(kind, index + 1)) and not best.fits(request(kind, -1, str(index + 1)))
    assert not best.fits(request(kind, -1, "some other name"))
    named = open_early(kind, index)
    assert named is not None and not named.chosen
    assert named.fits(request(kind, index)) and not named.fits(request(kind))  # best is chosen anew
    for opened in (best, named):
        opened.backend.close()


def test_no_row_or_no_such_device_opens_nothing():
    assert open_early(None, -1) is None
    if PRESENT:
        assert open_early(PRESENT[0], 10_000) is None  # said by the OpenDevice step, which opens it again
