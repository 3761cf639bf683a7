"""A stage's hardware counters: `[counters]` in assignment.toml, read into frozen dataclasses.

Each stage teaches one idea; an *indicator* is a number computed from Nsight Compute metrics
that shows that idea (sectors per request for coalescing, bank conflicts per shared load,
threads doing work per warp instruction for divergence, ...). A stage names the indicators
that show its lesson, a sentence per indicator tying a number on the wrong side of the
reference's to the lesson, where one indicator separates the lesson cleanly the one sentence
every GPU grading says about it (`[counters.lesson]`), and optionally the rule that marks a
submission's value as worse than the reference's in the table (`[counters.check]`; never graded).
The counters are read on the stage's GPU benchmark case: the size that is timed.

```toml
[counters]
show = ["global_store_sectors_per_request", "shared_load_bank_conflicts_per_request"]

[counters.lessons]
global_store_sectors_per_request = "the writes down a column of out are not coalesced"

[counters.lesson]                         # the one line of every GPU grading (on by default)
indicator = "global_store_sectors_per_request"
shown = "your kernel's writes are coalesced"
missed = "your kernel's writes are not coalesced"

[counters.indicators.loads_per_element]   # a stage's own indicator, next to the built-in ones
title = "global load requests per element"
numerator = ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]   # or { metric = weight, ... }
per = "n"                                 # divided by this expression of the case
better = "lower"

[counters.check]                          # marks a value worse in the table (never graded)
indicator = "global_store_sectors_per_request"
within = 1.25                             # pass at most 1.25x the reference's (lower is better)
slack = 0.5                               # ... plus this much, for values near zero
```

Metric names are Nsight Compute's (ncu 2019.5 and newer, sm_70 and newer: `ncu
--query-metrics` lists a device's; the nvprof transition table in NVIDIA's "Nsight Compute CLI"
manual maps the older names). Which indicator separates which lesson is measured, not
assumed: benchmarks/counters_on_gpu.py prints, per stage, how far each candidate puts the
reference from the baseline and the known-wrong kernels.

This module reads data only; grader.counters runs ncu and computes the indicators.
Errors are ValueError with a one-line reason (grader.course.spec turns them into SpecError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


@dataclass(frozen=True)
class Lesson:
    """The one sentence a grading says about the stage's lesson (`[counters.lesson]`): whether
    the submission's value of `indicator` sits on the reference's side (closer to the
    reference's value than to the baseline's) or on the baseline's. Only stages whose lesson this
    indicator separates cleanly on a GPU (measured: docs/counters.md) have one; the rest say
    nothing."""

    indicator: str
    shown: str  # "your kernel's writes are coalesced"
    missed: str  # "your kernel's writes down a column of out are not coalesced"


# A metric name as Nsight Compute spells them: unit__counter[.rollup[.submetric]] (lowercase
# letters, digits, underscores, dots). Checked before a name reaches ncu's --metrics list.
METRIC = re.compile(r"^[a-z][a-z0-9_]*__[a-z0-9_]+(\.[a-z0-9_]+)+$")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# Always collected: the kernel's duration under the profiler (weights averages over launches).
DURATION = "gpu__time_duration.sum"


def averaged(metric: str) -> bool:
    """Whether a metric is an average or a ratio (combined over a role's launches as a mean
    weighted by duration) rather than a count (summed)."""
    return ".avg" in metric or metric.endswith((".pct", ".ratio")) or ".pct_of_" in metric


@dataclass(frozen=True)
class Indicator:
    """A number computed from counters: (sum of weighted numerator metrics) / (sum of weighted
    denominator metrics, or the `per` expression of the case, or 1)."""

    name: str
    title: str  # as a person reads it: "global store sectors per request"
    numerator: tuple[tuple[str, float], ...]  # (metric, weight)
    denominator: tuple[tuple[str, float], ...] = ()
    per: str | None = None  # an expression of the profiled case (grader.course.expressions)
    better: Better = Better.LOWER
    digits: int = 1  # decimals shown
    # Two values closer than this (absolute) are "the same" for the sentence and the check
    slack: float = 0.0

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(m for m, _ in self.numerator + self.denominator)


def _terms(*pairs: tuple[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(pairs)


_SECTORS_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
_REQUESTS_LD = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
_SECTORS_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
_REQUESTS_ST = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
_FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
_FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
_FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
_FLOPS = _terms((_FFMA, 2.0), (_FADD, 1.0), (_FMUL, 1.0))

# The built-in indicators a stage names in `show`. Metric facts: NVIDIA's Nsight Compute
# "Kernel Profiling Guide" (metric structure, l1tex/smsp/dram units) and the CLI manual's
# nvprof-to-ncu table (gld_transactions_per_request = sectors / requests of
# l1tex__t_*_pipe_lsu_mem_global_op_ld; shared_load_transactions_per_request = wavefronts /
# smsp__inst_executed_op_shared_ld; achieved_occupancy = sm__warps_active.avg.pct_of_peak_
# sustained_active; warp_nonpred_execution_efficiency = smsp__thread_inst_executed_pred_on /
# smsp__inst_executed; flop_count_sp = 2 ffma + fadd + fmul thread instructions).
BUILTIN: dict[str, Indicator] = {i.name: i for i in (
    Indicator("global_load_sectors_per_request", "global load sectors per request",
              _terms((_SECTORS_LD, 1.0)), _terms((_REQUESTS_LD, 1.0)), slack=0.5),
    Indicator("global_store_sectors_per_request", "global store sectors per request",
              _terms((_SECTORS_ST, 1.0)), _terms((_REQUESTS_ST, 1.0)), slack=0.5),
    Indicator("shared_load_bank_conflicts_per_request", "bank conflicts per shared-memory load",
              _terms(("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1.0)),
              _terms(("smsp__inst_executed_op_shared_ld.sum", 1.0)), digits=2, slack=0.25),
    Indicator("shared_store_bank_conflicts_per_request", "bank conflicts per shared-memory store",
              _terms(("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 1.0)),
              _terms(("smsp__inst_executed_op_shared_st.sum", 1.0)), digits=2, slack=0.25),
    Indicator("active_threads_per_warp_instruction", "threads doing work per warp instruction (of 32)",
              _terms(("smsp__thread_inst_executed_pred_on.sum", 1.0)),
              _terms(("smsp__inst_executed.sum", 1.0)), better=Better.HIGHER, slack=0.5),
    Indicator("warp_instructions", "warp instructions issued",
              _terms(("smsp__inst_executed.sum", 1.0)), digits=0),
    Indicator("achieved_occupancy", "achieved occupancy (% of the SM's warps)",
              _terms(("sm__warps_active.avg.pct_of_peak_sustained_active", 1.0)),
              better=Better.HIGHER, digits=0, slack=5.0),
    Indicator("dram_bytes_per_flop", "DRAM bytes per floating-point operation",
              _terms(("dram__bytes_read.sum", 1.0), ("dram__bytes_write.sum", 1.0)), _FLOPS,
              digits=3, slack=0.01),
    Indicator("shared_loads_per_fma", "shared-memory load instructions per FMA (per warp)",
              _terms(("smsp__inst_executed_op_shared_ld.sum", 32.0)), _terms((_FFMA, 1.0)),
              digits=2, slack=0.05),
    Indicator("global_loads_per_fma", "global load instructions per FMA (per warp)",
              _terms(("smsp__inst_executed_op_global_ld.sum", 32.0)), _terms((_FFMA, 1.0)),
              digits=3, slack=0.01),
    Indicator("memory_stall_pct", "warps waiting on global memory (% of warp cycles)",
              _terms(("smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", 1.0)),
              digits=0, slack=5.0),
)}


@dataclass(frozen=True)
class ConceptCheck:
    """The table's rule for a worse value: the submission's value of `indicator` against the
    reference's, measured in the same run."""

    indicator: str
    within: float = 1.25  # lower is better: pass at most within x the reference's; higher: at least ref / within
    slack: float | None = None  # absolute slack added to the bound (default: the indicator's)

    def passes(self, yours: float, reference: float, indicator: Indicator) -> bool:
        slack = indicator.slack if self.slack is None else self.slack
        if indicator.better == Better.LOWER:
            return yours <= reference * self.within + slack
        return yours >= reference / self.within - slack

    def bound(self, reference: float, indicator: Indicator) -> float:
        slack = indicator.slack if self.slack is None else self.slack
        if indicator.better == Better.LOWER:
            return reference * self.within + slack
        return reference / self.within - slack


@dataclass(frozen=True)
class CountersSpec:
    # The case the counters are read on: the stage's GPU benchmark case (grader.course.spec fills it in),
    # so that the counters describe the launch whose time is graded.
    case: dict[str, int | float]
    show: tuple[Indicator, ...]
    lessons: dict[str, str] = field(default_factory=dict)  # by indicator name
    check: ConceptCheck | None = None
    lesson: Lesson | None = None
    # Which launches of the case ncu profiles (each one it profiles is replayed, 0.1-0.2 s on an
    # H100): those of these entry points (empty: every one), and, with repeats False, only the
    # first of launches alike (grader.counters.selection). The rest run unprofiled.
    kernels: tuple[str, ...] = ()
    repeats: bool = True

    def indicator(self, name: str) -> Indicator | None:
        return next((i for i in self.show if i.name == name), None)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric ncu must collect for the whole table, each once, in a stable order."""
        return metrics_for(self.show)

    @property
    def lesson_indicator(self) -> Indicator | None:
        """The indicator of the stage's lesson sentence (None: the stage says nothing)."""
        return self.indicator(self.lesson.indicator) if self.lesson is not None else None

    @property
    def lesson_metrics(self) -> tuple[str, ...]:
        """The metrics the lesson sentence needs, and no more (each is one more replay pass or
        part of one); empty where the stage has no lesson sentence."""
        chosen = self.lesson_indicator
        return metrics_for((chosen,)) if chosen is not None else ()


def metrics_for(indicators: tuple[Indicator, ...]) -> tuple[str, ...]:
    """The metrics ncu must collect for `indicators`, each once, in a stable order; the
    kernel's duration first only where an average among them is weighted by it over several
    launches (grader.counters.indicators.combined): counts need no duration."""
    seen: list[str] = []
    for indicator in indicators:
        for metric in indicator.metrics:
            if metric not in seen:
                seen.append(metric)
    return tuple([DURATION] + seen) if any(averaged(m) for m in seen) else tuple(seen)


def _weighted(value: Any, key: str) -> tuple[tuple[str, float], ...]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(m, str) for m in value):
        pairs = [(m, 1.0) for m in value]
    elif isinstance(value, dict) and all(isinstance(w, int | float) for w in value.values()):
        pairs = [(str(m), float(w)) for m, w in value.items()]
    else:
        raise ValueError(f"{key} must be a list of metric names or a table of metric = weight")
    for metric, _ in pairs:
        if not METRIC.match(metric):
            raise ValueError(f"{key}: {metric!r} is not an Nsight Compute metric name (like dram__bytes_read.sum)")
    return tuple(pairs)


def _own_indicator(name: str, table: Any) -> Indicator:
    key = f"[counters.indicators.{name}]"
    if not NAME.match(name):
        raise ValueError(f"{key}: an indicator's name is lowercase letters, digits and _")
    if not isinstance(table, dict):
        raise ValueError(f"{key} must be a table")
    unknown = set(table) - {"title", "numerator", "denominator", "per", "better", "digits", "slack"}
    if unknown:
        raise ValueError(f"{key}: unknown keys {sorted(unknown)}")
    if "numerator" not in table:
        raise ValueError(f"{key}: needs a numerator (the metrics summed)")
    if "denominator" in table and "per" in table:
        raise ValueError(f"{key}: give a denominator or per, not both")
    try:
        better = Better(table.get("better", "lower"))
    except ValueError:
        raise ValueError(f"{key}: better is \"lower\" or \"higher\"") from None
    per = table.get("per")
    if per is not None and not isinstance(per, str):
        raise ValueError(f"{key}: per is an expression of the case, as a string")
    return Indicator(name, str(table.get("title", name.replace("_", " "))),
                     _weighted(table["numerator"], f"{key} numerator"),
                     _weighted(table.get("denominator", []), f"{key} denominator"),
                     per=per, better=better, digits=int(table.get("digits", 1)),
                     slack=float(table.get("slack", 0.0)))


def load_counters(data: Any) -> CountersSpec | None:
    """`[counters]` of a stage's assignment.toml, or None where it has none. Raises ValueError
    with a one-line reason (without the file's name: the caller adds it)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("[counters] must be a table")
    unknown = set(data) - {"show", "lessons", "lesson", "indicators", "check", "kernels", "repeats"}
    if "case" in unknown:
        raise ValueError("[counters] case: the counters are read on the GPU benchmark case (the size that is "
                         "timed); remove the key")
    if unknown:
        raise ValueError(f"[counters]: unknown keys {sorted(unknown)}")
    own_tables = data.get("indicators", {})
    if not isinstance(own_tables, dict):
        raise ValueError("[counters.indicators] must be a table of tables")
    known = dict(BUILTIN)
    for name, table in own_tables.items():
        known[name] = _own_indicator(name, table)
    show_names = data.get("show", [])
    if not isinstance(show_names, list) or not show_names or not all(isinstance(n, str) for n in show_names):
        raise ValueError("[counters] show must be a non-empty list of indicator names")
    missing = [n for n in show_names if n not in known]
    if missing:
        raise ValueError(f"[counters] show: unknown indicators {missing} (built in: {', '.join(sorted(BUILTIN))})")
    lessons = data.get("lessons", {})
    if not isinstance(lessons, dict) or not all(isinstance(v, str) for v in lessons.values()):
        raise ValueError("[counters.lessons] must be a table of indicator = \"sentence\"")
    stray = set(lessons) - set(show_names)
    if stray:
        raise ValueError(f"[counters.lessons]: {sorted(stray)} not in show")
    check = None
    if "check" in data:
        table = data["check"]
        if not isinstance(table, dict) or not isinstance(table.get("indicator"), str):
            raise ValueError("[counters.check] needs indicator = \"<one of show>\"")
        if table["indicator"] not in show_names:
            raise ValueError(f"[counters.check] indicator {table['indicator']!r} is not in show")
        unknown = set(table) - {"indicator", "within", "slack"}
        if unknown:
            raise ValueError(f"[counters.check]: unknown keys {sorted(unknown)}")
        within = float(table.get("within", 1.25))
        if within < 1.0:
            raise ValueError("[counters.check] within is a factor of 1 or more (1.25: 25% worse than the reference)")
        slack = table.get("slack")
        check = ConceptCheck(table["indicator"], within, None if slack is None else float(slack))
    lesson = _lesson(data.get("lesson"), show_names)
    kernels = data.get("kernels", [])
    if not isinstance(kernels, list) or not all(isinstance(k, str) and k for k in kernels):
        raise ValueError("[counters] kernels must be a list of the stage's entry points, like [\"kf\", \"kb1\"]")
    repeats = data.get("repeats", True)
    if not isinstance(repeats, bool):
        raise ValueError("[counters] repeats must be true or false")
    return CountersSpec({}, tuple(known[n] for n in show_names), dict(lessons), check, lesson,
                        tuple(dict.fromkeys(kernels)), repeats)


def _lesson(table: Any, show_names: list[str]) -> Lesson | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError("[counters.lesson] must be a table: indicator, shown, missed")
    unknown = set(table) - {"indicator", "shown", "missed"}
    if unknown:
        raise ValueError(f"[counters.lesson]: unknown keys {sorted(unknown)}")
    for key in ("indicator", "shown", "missed"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise ValueError(f"[counters.lesson] needs {key} = \"...\"")
    if table["indicator"] not in show_names:
        raise ValueError(f"[counters.lesson] indicator {table['indicator']!r} is not in show")
    return Lesson(table["indicator"], table["shown"].strip(), table["missed"].strip())
