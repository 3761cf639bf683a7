"""The `lab` command's entry point. For `lab grade STAGE FILE`, the grading worker is started
first, before the command line's own imports (about half a second), so that its start (its
imports, the GPU driver's) overlaps them; everything else goes straight to the typer app."""

from __future__ import annotations

import sys


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
    _start_grading_worker(sys.argv[1:])
    from lab.cli import main as cli

    cli()
