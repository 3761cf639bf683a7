"""The typer app, its exit codes and the one-line error convention shared by every command."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup

from grader.course.sinks import for_terminal

# Exit codes: 0 every check passed; 1 graded and something failed; 2 a usage error (unknown
# stage, missing file, bad option, no device); 3 the grader could not finish; 4 graded, but a
# file asked for (--json, --report) could not be written (the result is on the terminal); 5
# correct as far as graded here, speed still to be graded (a CPU device, or --no-timing); 130
# interrupted; 6 correct, with a speed so far beyond the reference's that it is held for a person
# to review.
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_GRADER_ERROR, EXIT_NOT_WRITTEN, EXIT_PENDING = 0, 1, 2, 3, 4, 5
EXIT_REVIEW = 6

# `lab --help` groups the commands by who uses them (each command's rich_help_panel), in this order.
STUDENTS, INSTRUCTORS, COURSE_SERVER = "Students", "Instructors", "Course server"



class _Commands(TyperGroup):
    """The app's commands, as `lab --help` lists them: in the order they are registered, except
    that a command with commands of its own (`lab batch`), which typer adds after every plain
    command, comes first in its panel."""

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        names = super().list_commands(ctx)
        groups = [name for name in names if isinstance(self.commands[name], TyperGroup)]
        ordered = [name for name in names if name not in groups]
        for group in groups:
            panel = getattr(self.commands[group], "rich_help_panel", None)
            at = next((n for n, name in enumerate(ordered)
                       if getattr(self.commands[name], "rich_help_panel", None) == panel), len(ordered))
            ordered.insert(at, group)
        return ordered


app = typer.Typer(
    cls=_Commands,
    name="lab",
    help="The GPU-programming teaching lab: stages, kernels, verdicts.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's too (click inherits it)
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Student text reaches these through grader.course.sinks (for_terminal, for_text); no :emoji: codes either.
console = Console(highlight=False, emoji=False)
errors = Console(stderr=True, highlight=False, emoji=False)


def version_text() -> str:
    """`lab --version`: the package's version and the grader's (a result file records the latter)."""
    from importlib.metadata import PackageNotFoundError, version

    from grader import GRADER_VERSION

    try:
        package = version("gpu-teaching-lab")
    except PackageNotFoundError:  # run from a checkout that was never installed
        package = "unknown (not installed)"
    return f"lab {package} (grader {GRADER_VERSION})"


def _print_version(asked: bool) -> None:
    if asked:
        console.print(version_text())
        raise typer.Exit(EXIT_PASSED)


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="print the lab's version and exit")) -> None:
    """The GPU-programming teaching lab: stages, kernels, verdicts."""


def say_error(message: str) -> None:
    """Print a one-line reason on standard error, as `error: ...`."""
    errors.print(f"[bold red]error:[/bold red] {for_terminal(message)}", soft_wrap=True)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a one-line reason and exit."""
    say_error(message)
    raise typer.Exit(code)


def main() -> None:
    """Run the app on sys.argv. Bare `lab` prints the help and exits 2, a usage error, whatever
    typer's version makes of no_args_is_help (0 or 2)."""
    import sys

    try:
        if len(sys.argv) <= 1:
            try:
                app(["--help"])
            except SystemExit:
                pass
            raise SystemExit(EXIT_USAGE)
        app()
    except KeyboardInterrupt:
        from lab import interrupt

        interrupt.end()
