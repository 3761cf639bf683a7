"""The speedup histogram of the class summary, as inline SVG (no script, nothing fetched).

Speedups are ratios, so the bins are equal steps of log2(speedup): 2x and 0.5x sit the same
distance from 1x. The axis spans at most 16x either side of the class's median (and always
the marks); a speedup past that lands in the end bar, which says how many it holds. Dashed
lines mark the reference's speedup and the speedup a kernel needs to pass.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from grader.course.sinks import for_html

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 24, 24, 44, 40
MAX_BINS = 24
MAX_TICKS = 9
SPAN = 4.0  # octaves either side of the median that the axis shows at most
STEPS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)  # bin widths, in octaves
LABEL_W = 120  # room a mark's label takes, in px
# Tick values within a decade, densest last: the axis takes the densest that fits MAX_TICKS.
NICE = ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0),
        (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0),
        tuple(round(1 + 0.1 * i, 1) for i in range(10)) + tuple(2 + 0.25 * i for i in range(12))
        + tuple(5 + 0.5 * i for i in range(10)))


def speedup_text(speedup: float) -> str:
    if speedup >= 10:
        return f"{speedup:.0f}x"
    if speedup >= 0.1:
        return f"{speedup:.2f}x"
    return f"{speedup:.2g}x"


def _range(logs: list[float], marks: list[float]) -> tuple[float, float]:
    center = statistics.median(logs)
    lo = max(min(logs + marks), center - SPAN)
    hi = min(max(logs + marks), center + SPAN)
    if marks:
        lo, hi = min(lo, min(marks)), max(hi, max(marks))
    if hi - lo < 0.5:  # everyone within a few percent: show half an octave around them
        middle = (hi + lo) / 2
        lo, hi = middle - 0.25, middle + 0.25
    return lo, hi


def _bins(lo: float, hi: float) -> tuple[float, float, int]:
    """(first edge, width, count) in log2 units covering [lo, hi]."""
    for step in STEPS:
        start = math.floor(lo / step) * step
        count = max(1, math.ceil((hi - start) / step - 1e-9))
        if count <= MAX_BINS:
            return start, step, count
    step = STEPS[-1]
    start = math.floor(lo / step) * step
    return start, step, max(1, math.ceil((hi - start) / step))


def _ticks(start: float, end: float) -> list[float]:
    """Tick values (speedups) between 2**start and 2**end: powers of two over a wide range,
    round numbers over a narrow one."""
    lo, hi = 2 ** start, 2 ** end
    if end - start >= 3:
        step = next(s for s in (1, 2, 4, 8, 16) if (end - start) / s <= MAX_TICKS - 1)
        first = math.ceil(start / step - 1e-9) * step
        return [2.0 ** (first + step * i) for i in range(int((end - first) // step) + 1)]
    best: list[float] = []
    for series in NICE:
        ticks = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for m in series]
        ticks = sorted(t for t in ticks if lo - 1e-9 <= t <= hi + 1e-9)
        if len(ticks) > MAX_TICKS:
            break
        best = ticks
    return best


def speedup_histogram(speedups: Sequence[float], reference: float | None = None,
                      required: float | None = None, title: str = "speedups") -> str:
    """An SVG element; the empty string when there is nothing to show."""
    values = [v for v in speedups if v > 0 and math.isfinite(v)]
    if not values:
        return ""
    logs = [math.log2(v) for v in values]
    mark_logs = [math.log2(m) for m in (reference, required) if m and m > 0 and math.isfinite(m)]
    lo, hi = _range(logs, mark_logs)
    start, step, count = _bins(lo, hi)
    end = start + step * count
    counts = [0] * count
    below = above = 0
    for x in logs:
        if x < start:
            below += 1
        elif x >= end:
            above += 1
        counts[min(count - 1, max(0, int((x - start) // step)))] += 1
    tallest = max(counts)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bar_w = plot_w / count
    base = TOP + plot_h

    def x_of(log_value: float) -> float:
        return LEFT + (log_value - start) / (end - start) * plot_w

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="hist" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{for_html(title)}">',
             f"<title>{for_html(title)}</title>"]
    for i, n in enumerate(counts):
        if not n:
            continue
        h = max(2.0, (plot_h - 14) * n / tallest)  # 14 px above the tallest bar for its count
        x = LEFT + i * bar_w
        edge = (i == 0 and below) or (i == count - 1 and above)
        lo_edge, hi_edge = 2 ** (start + i * step), 2 ** (start + (i + 1) * step)
        span = (f"below {speedup_text(hi_edge)}" if i == 0 and below else
                f"{speedup_text(lo_edge)} and above" if i == count - 1 and above else
                f"{speedup_text(lo_edge)} to {speedup_text(hi_edge)}")
        parts.append(f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{max(1.0, bar_w - 2):.1f}" '
                     f'height="{h:.1f}" class="bin{" edge" if edge else ""}"><title>{n} submission'
                     f'{"s" if n != 1 else ""}: {span}</title></rect>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base - h - 4:.1f}" class="count">{n}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + plot_w}" y2="{base}" class="axis"/>')
    for tick in _ticks(start, end):
        x = x_of(math.log2(tick))
        parts.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" class="axis"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" class="tick">{speedup_text(tick)}</text>')
    marks = [(value, name, css, y) for value, name, css, y in
             ((reference, "reference", "ref", TOP - 28), (required, "needed to pass", "need", TOP - 14))
             if value and value > 0 and math.isfinite(value)]
    parts += mark_lines([(x_of(math.log2(value)), f"{name} {speedup_text(value)}", css, y)
                         for value, name, css, y in marks], base, LEFT, plot_w, WIDTH, LABEL_W)
    notes = []
    if below:
        notes.append(f"first bar: {below} below {speedup_text(2 ** start)}")
    if above:
        notes.append(f"last bar: {above} at {speedup_text(2 ** end)} or more")
    axis = "speedup over the baseline (log scale)" + (f"; {', '.join(notes)}" if notes else "")
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" class="axis-label">{for_html(axis)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def mark_lines(marks: Sequence[tuple[float, str, str, float]], base: float, left: float, plot_w: float,
               width: float, label_w: float) -> list[str]:
    """SVG for vertical marks on a chart (x, label text, CSS class, the label's row): each a line
    down to `base` and a label beside it, on the side with room, and two marks close together
    labelled away from each other. The label text is escaped here."""
    parts: list[str] = []
    xs = [x for x, *_ in marks]
    for n, (x, text, css, row) in enumerate(marks):
        anchor = "end" if x > left + plot_w * 0.6 else "start"
        others = [o for m, o in enumerate(xs) if m != n and abs(o - x) < label_w]
        if others:  # close together: each label on its own side, away from the other
            anchor = "end" if x < others[0] else "start"
        if anchor == "end" and x < left + label_w:
            anchor = "start"
        elif anchor == "start" and x > width - label_w:
            anchor = "end"
        dx = -4 if anchor == "end" else 4
        parts.append(f'<line x1="{x:.1f}" y1="{row - 4}" x2="{x:.1f}" y2="{base}" class="{css}"/>')
        parts.append(f'<text x="{x + dx:.1f}" y="{row}" class="{css}-label" text-anchor="{anchor}">'
                     f"{for_html(text)}</text>")
    return parts
