"""A report in the terminal, through rich. Text taken from the report goes through grader.course.sinks:
for_text into a rich Text, for_terminal into a markup string."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.course.sinks import for_terminal, for_text
from grader.feedback import (
    bars,
    check_label,
    device_text,
    hint,
    points_text,
    rate_text,
    resources_text,
    score_text,
)
from grader.mismatch_view import mismatch_view
from grader.report import ERROR, FAILED, PASSED, PENDING, REVIEW, SKIPPED, Report

STYLE = {PASSED: "bold green", FAILED: "bold red", ERROR: "bold yellow", SKIPPED: "dim", PENDING: "bold cyan",
         REVIEW: "bold magenta"}
MARK = {PASSED: "✔", FAILED: "✘", ERROR: "!", SKIPPED: "–", PENDING: "…", REVIEW: "?"}
TEXT_WIDTH = 100  # columns of the plain-text report


def render_text(report: Report, width: int = TEXT_WIDTH) -> str:
    """What `render` shows, as plain text (no colour, no markup) `width` columns wide."""
    out = io.StringIO()
    render(report, Console(file=out, width=width, color_system=None, force_terminal=False, force_jupyter=False,
                           highlight=False, emoji=False))
    return out.getvalue()


def render(report: Report, console: Console) -> None:
    status = Text(f" {report.status.words.upper()} ", style=f"reverse {STYLE.get(report.status, '')}")
    console.print(Text.assemble(status, for_text(f"  {report.assignment}: {report.title}")))
    console.print(Text(for_text(f"{device_text(report)} · {report.file}"), style="dim"))

    checks = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    checks.add_column("check")
    checks.add_column("points", justify="right")
    checks.add_column("details", overflow="fold")
    for c in report.checks:
        points = points_text(c)
        checks.add_row(Text(f"{MARK.get(c.status, '?')} {check_label(c)}", style=STYLE.get(c.status, "")),
                       points, Text(for_text(c.message)))
    console.print(checks)
    if any(not case.ok for case in report.cases):
        cases = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        cases.add_column("correctness case")
        cases.add_column("result", overflow="fold")
        for case in report.cases:
            cases.add_row(Text(for_text(f"{'✔' if case.ok else '✘'} {case.label}"),
                               style="green" if case.ok else "red"),
                          Text(for_text("right" if case.ok else case.summary or case.message)))
        console.print(cases)
    view = mismatch_view(report)
    if view is not None:
        console.print(Text(for_text(f"what your kernel wrote: {view.legend(lines_drawn=False)} ('.' right, 'x' wrong value, "
                                    f"'_' never written)"), style="dim"))
        for line in view.text():
            cells = line.split("  ×")[0]
            console.print(Text(line, style="dim" if line.startswith("…") else "red" if set(cells) - {"."} else "green"),
                          soft_wrap=True)
        console.print(Text(view.counts_text(), style="dim"))
    console.print(f"[bold]{score_text(report)}[/bold]")
    where = hint(report)
    if where:
        console.print(f"[yellow]Where to look:[/yellow] {for_terminal(where)}")

    perf = report.performance
    if perf is not None:
        case_text = ", ".join(f"{k}={v}" for k, v in perf.case.items())
        table = Table(title=f"speed ({for_terminal(case_text)})", box=None, header_style="bold", title_justify="left")
        table.add_column("kernel")
        table.add_column("time", justify="right")
        table.add_column("spread", justify="right")
        table.add_column("")
        spread_key = {"baseline": "baseline", "yours": "submission", "reference": "reference"}
        for bar in bars(report):
            key = spread_key.get(bar.label, "ceiling")
            spread = perf.spread.get(key)
            table.add_row(bar.label, f"{bar.time_ms:.3f} ms",
                          f"{100 * spread:.1f}%" if spread is not None else "",
                          "█" * max(1, round(bar.width_pct / 4)))
        console.print(table)
        summary: list[str] = []
        if rate_text(report):
            summary.append(f"yours: {rate_text(report)}")
        if perf.percent_of_ceiling:
            summary.append(f"{perf.percent_of_ceiling:.0f}% of the {perf.ceiling_name} kernel")
        if perf.speedup:
            needed = f", needed {perf.required_speedup:.2f}x" if perf.required_speedup else ""
            summary.append(f"speedup {perf.speedup:.2f}x (reference {perf.reference_speedup:.2f}x{needed})")
        if summary:
            console.print(Text(" · ".join(summary)))
    if report.occupancy:
        o = report.occupancy
        console.print(f"occupancy {100 * o.occupancy:.0f}% ({o.active_warps}/{o.max_warps} warps, "
                      f"{o.blocks_per_sm} blocks per SM), limited by {o.limited_by}")
    render_sections(report, console, before_resources=True)
    if report.resources:
        for name, r in report.resources.items():
            words = resources_text(r, report.device_kind)
            console.print(Text(for_text(f"{name}: {words}"), style="dim"))
    render_sections(report, console, before_resources=False)
    for flag in report.flags:
        console.print(f"[bold magenta]flag:[/bold magenta] {for_terminal(flag)}")
    for note in report.notes:
        console.print(Text(for_text(f"note: {note}"), style="dim"))
    compile_check = report.check("compiles")
    if compile_check and compile_check.status == "failed" and report.compile_log:
        lines = report.compile_log.splitlines()
        console.print(Text(for_text("\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")), style="red"))


def render_sections(report: Report, console: Console, before_resources: bool) -> None:
    """Each plugin's section, as the plugin shows it (grader.plugins): those beside the occupancy
    (the counters, which explain it) before the kernels' resources, the others after them."""
    from grader.plugins import named

    for name, section in report.sections.items():
        plugin = named(name)
        if plugin is not None and plugin.beside_occupancy == before_resources:
            plugin.render_terminal(section, console)
