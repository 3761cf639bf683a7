"""What a resident worker keeps between gradings (grader.resident_device) and how it finds its
next request (grader.worker.next_request), with the fake backend: which devices are kept, and
that a device which does not answer its probe ends the worker. That real kernels are graded one
after another in one process on a GPU is tests/queue/test_resident_workers.py's."""

from __future__ import annotations

import io
import json
import threading

import pytest

from grader import resident_device, worker
from grader.backends.fake import FakeBackend
from grader.results import DeviceGranted, SessionOver, encode


class Row:
    """A backend's row as open_device uses it: a name, and a device to open."""

    def __init__(self, kind: str = "gpu", broken: bool = False):
        self.name = f"fake-{kind}"
        self.kind, self.broken, self.opened = kind, broken, 0

    def open(self, index: int) -> FakeBackend:
        self.opened += 1
        backend = FakeBackend({}, kind=self.kind)
        if self.broken:
            def fill32(buffer, bits):
                raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
            backend.fill32 = fill32  # type: ignore[method-assign]
        return backend


@pytest.fixture
def resident(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resident_device, "_held", {})
    monkeypatch.setattr(resident_device, "_keeping", False)
    resident_device.keep_devices()


def test_a_worker_that_is_not_resident_opens_its_device_each_time_and_never_serves_again() -> None:
    row = Row()
    first, second = resident_device.open_device(row, 0), resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert first is not second and row.opened == 2
    assert not resident_device.serves_again()


@pytest.mark.usefixtures("resident")
def test_a_resident_worker_keeps_its_gpu_and_serves_again_while_it_answers() -> None:
    row = Row()
    first = resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert resident_device.serves_again()
    assert resident_device.open_device(row, 0) is first and row.opened == 1
    assert resident_device.open_device(row, 1) is not first  # another device: opened, and kept too
    assert resident_device.serves_again()


@pytest.mark.usefixtures("resident")
def test_a_resident_worker_never_keeps_a_cpu_device() -> None:
    row = Row(kind="cpu")
    assert resident_device.open_device(row, 0) is not resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert not resident_device.serves_again()


@pytest.mark.usefixtures("resident")
def test_a_device_that_does_not_answer_its_probe_ends_the_worker() -> None:
    row = Row(broken=True)
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert not resident_device.serves_again()
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert row.opened == 2  # (it was dropped)


def test_the_next_request_passes_over_the_commands_a_session_sent_as_the_last_grading_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    request = json.dumps({"course_root": "/c", "stage": "s"})
    lines = [encode(SessionOver()), encode(DeviceGranted()), request, encode(DeviceGranted())]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    assert worker.next_request() == request + "\n"
    assert worker.next_request() == ""  # (commands, then the end of the pipe)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert worker.next_request() == ""


@pytest.mark.usefixtures("resident")
def test_what_a_step_hands_a_resident_worker_is_kept_while_it_answers_and_ended_when_not() -> None:
    resident_device.open_device(Row(), 0)  # type: ignore[arg-type]
    ended: list[str] = []
    assert resident_device.keep("sound", "a", lambda thing: True, ended.append)
    assert resident_device.keep("broken", "b", lambda thing: False, ended.append)
    assert resident_device.serves_again()  # (the device answers: the worker serves on)
    assert ended == ["b"] and resident_device.take("broken") is None
    assert resident_device.take("sound") == "a" and resident_device.take("sound") is None


def test_a_worker_that_is_not_resident_keeps_nothing() -> None:
    assert not resident_device.keep("thing", object(), lambda thing: True, lambda thing: None)
    assert resident_device.take("thing") is None


def test_a_thread_never_takes_a_worker_another_thread_started_under_its_id() -> None:
    """Thread ids are reused: a lane thread that ended left its parked worker dying with it
    (PR_SET_PDEATHSIG); a new thread of the same id must start its own."""
    from grader import worker_process

    class Spare:
        def __init__(self, owner: threading.Thread):
            self.owner = owner

        def alive(self) -> bool:
            return True

    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    assert not worker_process._usable(Spare(ended))  # type: ignore[arg-type]
    assert worker_process._usable(Spare(threading.current_thread()))  # type: ignore[arg-type]


@pytest.mark.usefixtures("resident")
def test_a_grading_on_a_device_the_worker_does_not_hold_ends_it() -> None:
    resident_device.open_device(Row(), 0)  # type: ignore[arg-type]
    assert resident_device.serves_again()
    resident_device.open_device(Row(kind="cpu"), 0)  # type: ignore[arg-type]
    assert not resident_device.serves_again()  # (a CPU device: the kernel ran in this process)


@pytest.mark.usefixtures("resident")
def test_a_kernel_that_needs_much_local_memory_or_grew_the_stack_ends_the_worker() -> None:
    from grader.backends.base import KernelResources
    from grader.backends.fake import FakeKernel

    row = Row()
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    small = FakeKernel("k", lambda *a: None, KernelResources(local_bytes=resident_device.LOCAL_BYTES_KEPT))
    resident_device.note_grading(None, [small])
    assert resident_device.serves_again()
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    resident_device.note_grading(None, [small, FakeKernel("big", lambda *a: None,
                                                          KernelResources(local_bytes=resident_device.LOCAL_BYTES_KEPT + 4))])
    assert not resident_device.serves_again()


@pytest.mark.usefixtures("resident")
def test_kernels_that_allocate_on_the_device_heap_end_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a kernel takes from the device heap and never frees stays in the context's heap:
    a grading whose kernels allocate there (Backend.uses_device_heap) ends the worker."""
    heap = {"used": True}
    monkeypatch.setattr(FakeBackend, "uses_device_heap", lambda self, kernels: heap["used"])
    backend = resident_device.open_device(Row(), 0)  # type: ignore[arg-type]
    resident_device.note_grading(backend, [])
    assert not resident_device.serves_again()
    heap["used"] = False
    resident_device.open_device(Row(), 0)  # type: ignore[arg-type]
    resident_device.note_grading(backend, [])
    assert resident_device.serves_again(), "the next grading, whose kernels do not, serves again"


@pytest.mark.usefixtures("resident")
def test_a_device_whose_per_thread_stack_grew_in_a_grading_ends_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = {"bytes": 1024}
    monkeypatch.setattr(FakeBackend, "stack_bytes", lambda self: stack["bytes"], raising=False)
    row = Row()
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    assert resident_device.serves_again()
    resident_device.open_device(row, 0)  # type: ignore[arg-type]
    stack["bytes"] = 64 * 1024  # (a kernel with a large stack frame ran)
    assert not resident_device.serves_again()


@pytest.mark.parametrize("flushed", [True, False])
def test_what_the_c_library_holds_is_written_before_the_worker_says_done(tmp_path, flushed: bool) -> None:
    """What the C library buffers (a kernel's printf on CUDA goes through it) is in the worker's
    output file before Done: flush_output writes it. (A worker runs with PYTHONUNBUFFERED, which
    makes C's stdio unbuffered too; this checks the flush where it is buffered.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "out.txt"
    code = ("import ctypes, os\nfrom grader.worker import flush_output\nctypes.CDLL(None).printf(b'left in the C buffer\\n')\n"
            + ("flush_output()\n" if flushed else "") + "os._exit(0)\n")
    with open(out, "wb") as sink:
        subprocess.run([sys.executable, "-c", code], stdout=sink, check=True, cwd=Path(__file__).resolve().parents[2],
                       env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})
    assert ("left in the C buffer" in out.read_text()) == flushed
