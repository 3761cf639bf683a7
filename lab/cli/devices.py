"""`lab devices`: what this machine can grade on, and why the rest is not usable."""

from __future__ import annotations

from rich.table import Table

from grader.backends.discovery import discover
from grader.course.sinks import for_terminal
from lab.cli.typer_app import STUDENTS, app, console


@app.command(rich_help_panel=STUDENTS)
def devices() -> None:
    """List usable devices (backend, index, kind) and why other backends are not usable."""
    found = discover()
    if found.targets:
        table = Table(header_style="bold", box=None)
        for column in ("backend", "device", "name", "kind", "platform"):
            table.add_column(column)
        for t in found.targets:
            table.add_row(t.backend, str(t.index), for_terminal(t.name), t.kind, for_terminal(t.platform))
        console.print(table)
    else:
        console.print("no usable device")
    for backend, why in found.problems.items():
        console.print(f"[yellow]{backend}[/yellow] not usable: {for_terminal(why)}")
