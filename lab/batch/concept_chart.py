"""The class summary's picture of a stage's concept counter, as inline SVG (no script, nothing
fetched), drawn like the speedup histogram beside it: a histogram of the students' values on a
linear axis, with dashed lines at the reference's and the baseline's values and a dotted one at
the midpoint between them. The bins have the midpoint as an edge, so a bar is wholly on one
side: bars on the reference's side ("applied the idea") are green, the others grey. Under the
axis, a box from the lower to the upper quartile, the median marked, whiskers to the extremes.
"""

from __future__ import annotations

import math

from grader.course.sinks import for_html
from lab.batch.charts import mark_lines
from lab.batch.concept import StageConcept

WIDTH, HEIGHT = 640, 196
LEFT, RIGHT, TOP, BOTTOM = 24, 24, 44, 60
TARGET_BINS = 20
MAX_BINS = 40
LABEL_W = 130  # room a mark's label takes, in px


def short_number(value: float) -> str:
    """An axis label: 4, 0.25, 31, 12.5k, 3.31M."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e4:
        return f"{value / 1e3:.3g}k"
    if size >= 100 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.3g}"


def _nice_step(span: float, count: int) -> float:
    raw = span / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)


def _edges(lo: float, hi: float, anchor: float | None) -> tuple[float, float, int]:
    """(first edge, width, count) covering [lo, hi], with `anchor` (the midpoint) on an edge."""
    step = _nice_step(hi - lo, TARGET_BINS)
    pivot = anchor if anchor is not None else 0.0
    start = pivot + math.floor((lo - pivot) / step + 1e-9) * step
    count = max(1, math.ceil((hi - start) / step - 1e-9))
    if hi >= start + count * step:  # the largest value sits on the last edge: one bin more
        count += 1
    return start, step, min(count, MAX_BINS)


def concept_histogram(concept: StageConcept, title: str) -> str:
    """An SVG element; the empty string where the stage has no distribution."""
    dist = concept.distribution
    if dist is None or not dist.values:
        return ""
    marks = [v for v in (dist.reference, dist.baseline) if v is not None]
    lo, hi = min([*dist.values, *marks]), max([*dist.values, *marks])
    if hi - lo < 1e-9:  # everyone on one value: an axis of some width around it
        pad = max(abs(lo) * 0.1, 1.0)
        lo, hi = lo - pad, hi + pad
    start, step, count = _edges(lo, hi, dist.midpoint)
    end = start + step * count
    counts = [0] * count
    for v in dist.values:
        counts[min(count - 1, max(0, int((v - start) // step)))] += 1
    tallest = max(counts)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bar_w = plot_w / count
    base = TOP + plot_h

    def x_of(value: float) -> float:
        return LEFT + (value - start) / (end - start) * plot_w

    label = for_html(title)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="hist concept" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{label}">', f"<title>{label}</title>"]
    for i, n in enumerate(counts):
        if not n:
            continue
        lo_edge, hi_edge = start + i * step, start + (i + 1) * step
        side = dist.applied_side((lo_edge + hi_edge) / 2)
        css = "bin" if side is None else ("bin applied" if side else "bin other")
        h = max(2.0, (plot_h - 14) * n / tallest)
        x = LEFT + i * bar_w
        parts.append(f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{max(1.0, bar_w - 2):.1f}" '
                     f'height="{h:.1f}" class="{css}"><title>{n} submission{"s" if n != 1 else ""}: '
                     f"{short_number(lo_edge)} to {short_number(hi_edge)}</title></rect>")
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base - h - 4:.1f}" class="count">{n}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + plot_w}" y2="{base}" class="axis"/>')
    tick_step = _nice_step(end - start, 8)
    tick = math.ceil(start / tick_step - 1e-9) * tick_step
    while tick <= end + 1e-9 * max(1.0, abs(end)):
        x = x_of(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" class="axis"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" class="tick">{short_number(tick)}</text>')
        tick += tick_step
    # The quartiles: whiskers from the least to the greatest value, a box from Q1 to Q3, the median.
    y = base + 30
    x_min, x_max = x_of(dist.values[0]), x_of(dist.values[-1])
    x_q1, x_q3, x_med = x_of(dist.q1), x_of(dist.q3), x_of(dist.median)
    parts.append(f'<line x1="{x_min:.1f}" y1="{y}" x2="{x_max:.1f}" y2="{y}" class="whisker"/>')
    parts.append(f'<rect x="{x_q1:.1f}" y="{y - 5}" width="{max(1.5, x_q3 - x_q1):.1f}" height="10" class="box">'
                 f"<title>quartiles {short_number(dist.q1)} to {short_number(dist.q3)}, median "
                 f"{short_number(dist.median)}</title></rect>")
    parts.append(f'<line x1="{x_med:.1f}" y1="{y - 6}" x2="{x_med:.1f}" y2="{y + 6}" class="median"/>')
    marks_drawn = [(value, name, css, row) for value, name, css, row in
                   ((dist.reference, "reference", "ref", TOP - 28), (dist.baseline, "baseline", "base", TOP - 14))
                   if value is not None]
    if dist.midpoint is not None:
        x = x_of(dist.midpoint)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 2}" x2="{x:.1f}" y2="{base}" class="mid">'
                     f"<title>midpoint {short_number(dist.midpoint)}</title></line>")
    parts += mark_lines([(x_of(value), f"{name} {concept.number(value)}", css, row)
                         for value, name, css, row in marks_drawn], base, LEFT, plot_w, WIDTH, LABEL_W)
    axis = f"{concept.title} ({'lower' if concept.better == 'lower' else 'higher'} is better)"
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" class="axis-label">{for_html(axis)}</text>')
    parts.append("</svg>")
    return "".join(parts)
