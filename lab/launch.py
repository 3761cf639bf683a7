"""The `lab` command's entry point. For `lab grade STAGE FILE`, the grading worker is started
first, before the command line's own imports (about half a second), so that its start (its
imports, the GPU driver's) overlaps them; everything else goes straight to the typer app.

What that early worker prints (the note "grading without a sandbox") is held until `lab grade`
has graded (lab.early_worker.say_held_notes): a command that stops at a usage error ("no such
file", no device for the file's language) says only that error."""

from __future__ import annotations

import sys

from grader.settings import SettingError
from lab import interrupt
from lab.early_worker import prestart_quietly


def _start_grading_worker(args: list[str]) -> None:
    if not args or args[0] != "grade" or "--sanitize" in args or "--help" in args or "-h" in args:
        return
    from grader.backends.registry import backends

    for arg in args[1:]:
        for kind in backends():
            if arg.lower().endswith(kind.suffix):
                prestart_quietly(kind)
                return


def main() -> None:
    args = sys.argv[1:]
    try:
        interrupt.install()  # Ctrl-C from here on: one line, the workers killed, exit 130
        _start_grading_worker(args)
        from lab import cli

        cli.register(args[0] if args else None)  # only the named command's module, where it names one
        from lab.cli.typer_app import main as run

        if not args or args[0] != "grade":
            interrupt.restore()  # the other commands say what an interrupt kept (lab batch)
        run()
    except SettingError as error:  # an environment variable the lab cannot use: one line, a usage error
        sys.stderr.write(f"error: {error}\n")
        raise SystemExit(2) from None
    except BaseException as error:  # a Ctrl-C during the imports, before typer runs (it turns one into exit 130)
        if isinstance(error, SystemExit) or not interrupt.caused_by_interrupt(error):
            raise
        interrupt.end()
