"""The worker's first steps (grader.steps.device): the device is chosen, the host's benchmark
inputs start, and only then the device opens; where its kind is not known before the open,
the inputs start after it. A fake backend kind stands in for the registry's."""

from types import SimpleNamespace

import numpy as np
import pytest

from grader.results import DeviceOpened, FailureKind, GraderError
from grader.steps import device as device_steps
from grader.steps.context import Context, Request
from grader.steps.device import ChooseDevice, OpenDevice
from grader.steps.host_inputs import MakeHostInputs
from lab.backends.fake import FakeBackend
from lab.backends.registry import Target
from lab.catalog import default_catalog

CATALOG = default_catalog()
SPEC = CATALOG.get("transpose_coalesced")


class HostOnly:
    """A problem whose inputs are made on the host only (as mlp's are)."""

    def inputs(self, setup, rng):
        return {"x": rng.random(4)}


def context(monkeypatch, listed, device=-1, kind="gpu"):
    opened = []

    def open_device(index):
        opened.append(index)
        return FakeBackend({}, kind=kind)

    fake = SimpleNamespace(name="fake", probe=lambda: (listed, None if listed else "none here"), open=open_device)
    monkeypatch.setattr(device_steps.registry, "by_name", lambda name: fake)
    sent = []
    request = Request(course_root=str(CATALOG.root), stage=SPEC.id, source="", filename="t.cl", backend="fake",
                      device=device, seed=1)
    return Context(request, CATALOG, SPEC, HostOnly(), np.random.default_rng(1), sent.append), sent, opened


def test_the_inputs_start_before_the_device_opens(monkeypatch):
    ctx, sent, opened = context(monkeypatch, [Target("fake", 0, "fake device", "gpu")])
    early, late = MakeHostInputs(), MakeHostInputs()
    assert ChooseDevice().run(ctx) and ctx.device_kind == "gpu" and not opened
    assert early.wanted(ctx) and early.run(ctx) and ctx.host_inputs is not None and not opened
    assert OpenDevice().run(ctx) and opened == [0]
    assert not late.wanted(ctx)  # started once
    assert ctx.host_inputs.benchmark.result()["x"].shape == (4,)
    ctx.host_inputs.close()
    assert any(isinstance(m, DeviceOpened) for m in sent)


def test_a_device_the_probe_does_not_list_opens_first(monkeypatch):
    ctx, _, opened = context(monkeypatch, [Target("fake", 0, "fake device", "gpu")], device=3)
    assert ChooseDevice().run(ctx) and ctx.target is None and ctx.device_kind is None
    assert not MakeHostInputs().wanted(ctx)
    assert OpenDevice().run(ctx) and opened == [3] and ctx.device_kind == "gpu"
    assert MakeHostInputs().wanted(ctx)


def test_no_device_ends_the_grading_with_its_reason(monkeypatch):
    ctx, sent, opened = context(monkeypatch, [])
    assert not ChooseDevice().run(ctx) and not opened
    error = next(m for m in sent if isinstance(m, GraderError))
    assert error.failure == FailureKind.NO_DEVICE


@pytest.mark.parametrize("device", [-1, 0])
def test_a_cpu_device_has_its_memory_capped_before_anything_is_made(monkeypatch, device):
    capped = []
    monkeypatch.setattr(device_steps, "limit_memory", capped.append)
    ctx, _, _ = context(monkeypatch, [Target("fake", 0, "cpu", "cpu")], device=device, kind="cpu")
    ctx = Context(ctx.request.__class__(**{**ctx.request.__dict__, "memory_limit": 1 << 30}), CATALOG, SPEC,
                  HostOnly(), np.random.default_rng(1), lambda m: None)
    assert ChooseDevice().run(ctx) and capped == [1 << 30]
    assert OpenDevice().run(ctx) and capped == [1 << 30]  # once
