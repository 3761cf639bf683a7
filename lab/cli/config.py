"""`lab config`: the environment variables the lab reads (grader.settings), each with its value
now, its default, who sets it and what it does."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict

import typer
from rich.text import Text

from grader import settings
from grader.course.sinks import for_terminal
from lab.cli.typer_app import EXIT_USAGE, INSTRUCTORS, app, console, errors


@app.command("config", rich_help_panel=INSTRUCTORS)
def config(
    as_json: bool = typer.Option(False, "--json", help="print the table as JSON: one object per variable"),
    markdown: bool = typer.Option(False, "--markdown", help="print the table as docs/configuration.md "
                                  "holds it (no values)"),
) -> None:
    """The environment variables the lab reads: each one's value now, default and meaning.

    Exits 2, after the table and one line per variable, where a variable's value cannot be used."""
    if as_json and markdown:
        errors.print("[bold red]error:[/bold red] --json and --markdown: choose one", soft_wrap=True)
        raise typer.Exit(EXIT_USAGE)
    if markdown:
        console.print(settings.markdown(), end="", markup=False, highlight=False, soft_wrap=True)
        return
    rows = settings.rows()
    if as_json:
        console.print(json.dumps([asdict(row) for row in rows], indent=2), markup=False, soft_wrap=True)
    else:
        for row in rows:
            now = "cannot be used" if row.value is None else row.value
            where = "default" if row.set_to is None else f"set; default: {row.default}"
            line = Text(row.name, style="bold")
            line.append(f" = {for_terminal(now)}")
            owner = f"; {row.owner}'s own variable" if row.owner else ""
            line.append(f"  ({where}; for {', '.join(row.audience)}{owner})", style="dim")
            console.print(line, soft_wrap=True)
            console.print(textwrap.fill(row.meaning, width=max(40, console.width - 4), initial_indent="    ",
                                        subsequent_indent="    ") + "\n", markup=False, highlight=False)
    problems = [row.problem for row in rows if row.problem is not None]
    for problem in problems:
        errors.print(f"[bold red]error:[/bold red] {for_terminal(problem)}", soft_wrap=True)
    if problems:
        raise typer.Exit(EXIT_USAGE)
