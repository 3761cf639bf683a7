"""The `lab` command's entry point. For `lab grade STAGE FILE`, the grading worker is started
first, before the command line's own imports (about half a second), so that its start (its
imports, the GPU driver's) overlaps them; everything else goes straight to the typer app."""

from __future__ import annotations

import sys

from lab import interrupt


def _start_grading_worker(args: list[str]) -> None:
    if not args or args[0] != "grade" or "--sanitize" in args or "--help" in args:
        return
    from lab.backends.registry import backends

    for arg in args[1:]:
        for kind in backends():
            if arg.lower().endswith(kind.suffix):
                from grader.worker_process import prestart_worker

                prestart_worker(kind.name)
                return


def main() -> None:
    args = sys.argv[1:]
    try:
        interrupt.install()  # Ctrl-C from here on: one line, the workers killed, exit 130
        _start_grading_worker(args)
        from lab.cli import main as cli

        if not args or args[0] != "grade":
            interrupt.restore()  # the other commands say what an interrupt kept (lab batch)
        cli()
    except BaseException as error:  # a Ctrl-C during the imports, before typer runs (it turns one into exit 130)
        if isinstance(error, SystemExit) or not interrupt.caused_by_interrupt(error):
            raise
        interrupt.end()
