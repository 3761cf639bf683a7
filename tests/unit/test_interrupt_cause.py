"""lab.launch after a Ctrl-C that Python handed on as another exception (3.11 wraps one raised in
a class's __set_name__, as `ipaddress` has while it is imported, in a RuntimeError): still one
line and exit 130, no traceback. Any other exception before a Ctrl-C is raised as it is."""

from __future__ import annotations

import signal

import pytest

from lab import interrupt, launch


@pytest.fixture
def quiet(monkeypatch):
    before = signal.getsignal(signal.SIGINT)  # interrupt.end ignores Ctrl-C from then on
    monkeypatch.setattr(interrupt, "install", lambda: None)
    monkeypatch.setattr(interrupt, "kill_workers", lambda: None)
    monkeypatch.setattr(launch.sys, "argv", ["lab", "grade", "transpose_coalesced", "k.cl"])
    yield
    signal.signal(signal.SIGINT, before)


def _raises(error: BaseException):
    def start(args):
        raise error
    return start


def test_an_exception_after_the_interrupt_fired_ends_as_the_interrupt(quiet, monkeypatch, capfd):
    monkeypatch.setattr(interrupt, "_said", False)
    interrupt.say()  # the handler fired: it said its line
    wrapped = RuntimeError("Error calling __set_name__ on 'cached_property' instance 'hostmask'")
    wrapped.__cause__ = KeyboardInterrupt()
    monkeypatch.setattr(launch, "_start_grading_worker", _raises(wrapped))
    with pytest.raises(SystemExit) as ended:
        launch.main()
    assert ended.value.code == interrupt.EXIT_INTERRUPTED
    assert capfd.readouterr().err.count(interrupt.MESSAGE) == 1


def test_a_keyboard_interrupt_ends_with_130(quiet, monkeypatch):
    monkeypatch.setattr(interrupt, "_said", False)
    monkeypatch.setattr(launch, "_start_grading_worker", _raises(KeyboardInterrupt()))
    with pytest.raises(SystemExit) as ended:
        launch.main()
    assert ended.value.code == interrupt.EXIT_INTERRUPTED


def test_any_other_exception_without_an_interrupt_is_raised(quiet, monkeypatch):
    monkeypatch.setattr(interrupt, "_said", False)
    monkeypatch.setattr(launch, "_start_grading_worker", _raises(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        launch.main()
