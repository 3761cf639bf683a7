"""The counters in the terminal (rich): the stage's lesson line; the table of each indicator for
yours, the reference and the baseline where more than the lesson's was read, with the sentence
tying a number on the wrong side to the lesson; or the one line saying why there are none. Used
by `lab grade`'s report and by `lab profile`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.counters.view import CountersShown, case_text, fmt
from grader.course.sinks import for_terminal, for_text


def render_counters(shown: CountersShown | None, console: Console, title: str = "hardware counters") -> None:
    if shown is None:
        return
    if not shown.available:
        console.print(Text(for_text(f"{title} unavailable: {shown.line}"), style="dim"), soft_wrap=True)  # one line
        return
    if shown.lesson is not None:
        style = "green" if shown.lesson.shows else "yellow" if shown.lesson.shows is False else "dim"
        console.print(Text(for_text(shown.lesson.text), style=style), soft_wrap=True)
    if not shown.only_lesson:
        seconds = f", {shown.seconds:.1f} s" if shown.seconds else ""
        table = Table(title=for_terminal(f"{title} ({case_text(shown.case)}{seconds})"), box=None,
                      header_style="bold", title_justify="left")
        table.add_column("indicator")
        table.add_column("yours", justify="right")
        table.add_column("reference", justify="right")
        table.add_column("baseline", justify="right")
        for row in shown.rows:
            style = "red" if row.worse else ("green" if row.worse is False else "")
            table.add_row(for_terminal(row.title), Text(fmt(row.yours, row.digits), style=style),
                          fmt(row.reference, row.digits), fmt(row.baseline, row.digits))
        console.print(table)
    if shown.route:
        console.print(Text(for_text(shown.route), style="dim"))
    for row in shown.rows:
        if shown.said(row):
            console.print(Text(for_text(row.sentence), style="yellow"))
    for role, why in shown.role_errors.items():
        if role == "submission" and shown.lesson is not None and shown.lesson.shows is None:
            continue  # the lesson's line says it
        who = "your kernel" if role == "submission" else f"the {role}"
        console.print(Text(for_text(f"{who}: {why}"), style="red"))
    if shown.note and not shown.only_lesson:
        console.print(Text(for_text(shown.note), style="dim"))
