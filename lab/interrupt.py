"""Ctrl-C during `lab grade`, at any moment (its imports included): one line, the grading
workers' process groups killed, exit 130, no traceback.

Standard library only: lab.launch installs the handler before it imports anything else.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import NoReturn

MESSAGE = "interrupted; nothing was graded or written"
EXIT_INTERRUPTED = 130

_said = False


def say(message: str = MESSAGE) -> None:
    """Print the one line, once (straight to the descriptor: safe inside a signal handler)."""
    global _said
    if _said:
        return
    _said = True
    try:
        os.write(2, (message + "\n").encode())
    except OSError:
        pass


def caused_by_interrupt(error: BaseException) -> bool:
    """Whether `error` is this run's Ctrl-C: a KeyboardInterrupt, or any exception once the
    handler has fired. Python 3.11 wraps an exception raised inside a class's __set_name__ in a
    RuntimeError: a Ctrl-C landing while `ipaddress` was imported reached lab.launch as "Error
    calling __set_name__" (CI, the 0.05 s case of tests/cli/test_cli.py)."""
    return isinstance(error, KeyboardInterrupt) or _said


def _on_workers(action: str) -> None:
    """Call grader.worker_process's `action` (nothing if that module was never imported)."""
    module = sys.modules.get("grader.worker_process")
    if module is not None:
        try:
            getattr(module, action)()
        except Exception:  # noqa: BLE001 - ending anyway
            pass


def kill_workers() -> None:
    """Kill the grading workers started so far."""
    _on_workers("kill_all")


# How long the KeyboardInterrupt gets to end the run before the watchdog does.
WATCHDOG_SECONDS = 5.0


def _on_interrupt(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while this one ends things
    kill_workers()
    say()
    _arm_watchdog()
    raise KeyboardInterrupt


def _arm_watchdog() -> None:
    """CPython drops an exception raised while it runs a weakref callback or a __del__ (it
    prints "Exception ignored in ..." and goes on; `_unraisable` keeps that off the terminal): a
    Ctrl-C landing in one, as in an import's module-lock callback, would leave `lab grade`
    running with its workers gone. The watchdog ends the run anyway, WATCHDOG_SECONDS later, if
    nothing else has."""
    try:
        signal.signal(signal.SIGALRM, _watchdog_fired)
        signal.setitimer(signal.ITIMER_REAL, WATCHDOG_SECONDS)
    except (AttributeError, ValueError, OSError):  # no SIGALRM (Windows), or not the main thread
        pass


def _watchdog_fired(signum: int, frame: object) -> None:
    kill_workers()
    _on_workers("remove_all_scratch")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream
            pass
    os._exit(EXIT_INTERRUPTED)


def _unraisable(unraisable: object) -> None:
    """sys.unraisablehook: this run's Ctrl-C, dropped by CPython where it landed in a weakref
    callback or a __del__, is said already (one line) and ended by the watchdog, so it prints
    nothing more (no "Exception ignored in ..." and its traceback); anything else as Python says it."""
    if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt) and _said:
        return
    sys.__unraisablehook__(unraisable)  # type: ignore[arg-type]


def install() -> None:
    """From now on the first Ctrl-C kills the workers, says so, and raises KeyboardInterrupt
    (typer turns that into exit 130; lab.launch.main ends with 130 where typer is not running)."""
    signal.signal(signal.SIGINT, _on_interrupt)
    sys.unraisablehook = _unraisable
    atexit.register(_exit_130)  # registered first, so it runs last


def _exit_130() -> None:
    """The last thing at exit after an interrupt: exit 130 for sure. (CPython marks a
    KeyboardInterrupt raised inside exec() of a string, as dataclasses and namedtuple do while
    modules are imported, as never caught, and then kills itself with SIGINT after exiting.)"""
    if not _said:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to say
            pass
    os._exit(EXIT_INTERRUPTED)


def restore() -> None:
    """Python's own Ctrl-C again (commands that report their interruption themselves)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def end() -> NoReturn:
    """After a KeyboardInterrupt: kill the workers, say so (once), exit 130. At exit the
    workers are waited for and their folders removed (grader.worker_process)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass
    kill_workers()
    say()
    sys.exit(EXIT_INTERRUPTED)
