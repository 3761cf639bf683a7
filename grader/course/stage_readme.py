"""The part of a stage's README that states what the spec decides, rendered from the spec.

A stage's README.md holds one block between `BEGIN` and `END` (below): the kernel's
signatures, the defines, the launch shape, the checks with their points, the test and
benchmark cases, the baseline and the pass rule, what a CPU device grades, and which hardware
counters are shown and whether they are graded. `render(spec)` writes that block from the
stage's assignment.toml; the README's own prose around it explains and never restates these
facts. `lab show` prints the README with the block rendered afresh from the spec, and a test
(tests/unit/test_stage_readmes.py) fails when a committed README's block differs from
`render(spec)`. `python -m grader.course.stage_readme` rewrites the blocks in place (`--check`: only
report the stages whose block is out of date, exit 1 if any).

Pure text: no device, no grader import.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.backends import registry
from grader.course.counter_spec import CountersSpec
from grader.course.spec import Spec

BEGIN = "<!-- BEGIN spec: rendered from assignment.toml by `python -m grader.course.stage_readme`; do not edit -->"
END = "<!-- END spec -->"


class MissingBlockError(ValueError):
    """A README has no rendered block, or its markers are out of order."""


def _number(value: int | float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def case_text(case: dict[str, int | float]) -> str:
    """`width = 32, height = 32`: one case as the README and `lab show` state it."""
    return ", ".join(f"{name} = {_number(value)}" for name, value in case.items())


def _cases(cases: tuple[dict[str, int | float], ...]) -> str:
    return "; ".join(f"`{case_text(case)}`" for case in cases)


def _baseline_text(baseline: str) -> str:
    if ":" in baseline:  # a stage's own extra kernel file: reference/<stage>/<name>.{cu,cl}
        stage, name = baseline.split(":", 1)
        return f"`reference/{stage}/{name}` ({' or '.join(registry.suffixes())}, as your file)"
    return f"the reference solution of `{baseline}`"


def _signatures(spec: Spec) -> list[str]:
    lines = []
    for kernel in spec.kernels:
        for kind in registry.backends():
            syntax = kind.syntax
            entry = f"{syntax.exported} {syntax.entry}" if syntax.exported else syntax.entry
            lines.append(f"- {syntax.label or kind.language}: "
                         f"`{entry} void {kernel.name}({kernel.declared(syntax.pointer_space)})`")
    return lines


def _launch(spec: Spec) -> str:
    def shape(parts: tuple[str | int, ...]) -> str:
        return "(" + ", ".join(str(p) for p in parts) + ")"

    which = "" if len(spec.kernels) == 1 else (
        f" of `{spec.kernel.name}` (each entry point's own grid: see the task above)")
    return (f"- Launch{which} (CUDA terms; OpenCL's local size is the block, its global size block x grid): "
            f"block `{shape(spec.block)}`, grid `{shape(spec.grid)}`.")


def _defines(spec: Spec) -> str:
    if not spec.defines:
        return "- Defines: none."
    names = ", ".join(f"`{name}` = {_number(value)}" for name, value in spec.defines.items())
    return f"- Defines, passed by the grader (your file must not `#define` them): {names}."


def _checks(spec: Spec) -> list[str]:
    lines = []
    points = spec.points
    if "compiles" in points:
        lines.append(f"- `compiles`, {points['compiles']} points: the file builds with the defines above.")
    if "correct" in points:
        lines.append(f"- `correct`, {points['correct']} points: right results, against a float64 NumPy "
                     f"oracle, on fresh random inputs for every test case: {_cases(spec.test_cases)}.")
    if "fast" in points and spec.baseline is not None:
        lines.append(f"- `fast`, {points['fast']} points: {_speed_rule(spec)}")
    if "concept" in points and spec.counters is not None and spec.counters.check is not None:
        lines.append(f"- `concept`, {points['concept']} points: {_concept_rule(spec.counters)}")
    return lines


def _speed_rule(spec: Spec) -> str:
    assert spec.baseline is not None
    bench = _cases(spec.bench_cases)
    rules = []
    if spec.threshold is not None:
        rules.append(f"your speedup over the baseline is at least {_number(spec.threshold)} x the "
                     f"reference's speedup over the baseline")
    if spec.min_speedup is not None:
        rules.append(f"your speedup over the baseline is at least {_number(spec.min_speedup)}")
    rule = " and ".join(rules)
    return (f"on a GPU, timed at {bench}, {rule}. The baseline is {_baseline_text(spec.baseline)}; "
            f"it, this stage's reference and your kernel are timed in the same run on the same device.")


def _concept_rule(counters: CountersSpec) -> str:
    check = counters.check
    assert check is not None
    title = next((i.title for i in counters.show if i.name == check.indicator), check.indicator)
    return (f"on a GPU where the counters can be read, {title} within {_number(check.within)} x the "
            f"reference's (read on `{case_text(counters.case)}`).")


def _timing(spec: Spec) -> list[str]:
    if spec.graded_for_speed:
        cpu = ("- On a CPU device (such as PoCL) speed is not graded: `fast` stays pending (to be graded "
               "on a GPU) and nothing is timed")
    else:
        cpu = ("- This stage has no speed check. On a GPU the feedback shows your kernel's time at "
               f"{_cases(spec.bench_cases)}. On a CPU device (such as PoCL) nothing is timed")
    if spec.ceiling:
        cpu = (f"- Where it is timed, the feedback shows your kernel's bandwidth beside the `{spec.ceiling}` "
               f"kernel's, run with the same launch: the ceiling to aim for.\n") + cpu
    if spec.cpu_bench_cases:
        cpu += (f", unless you ask with `--cpu-timing` (then at {_cases(spec.cpu_bench_cases)}: shown, "
                f"never graded, and saying nothing about a GPU).")
    else:
        cpu += "."
    return [cpu]


def _counters(spec: Spec) -> list[str]:
    counters = spec.counters
    if counters is None:
        return []
    titles = ", ".join(indicator.title for indicator in counters.show)
    roles = ", the reference and the baseline" if spec.baseline else " and the reference"
    graded = ("graded as `concept` (above)" if counters.check is not None
              else "shown, not graded: no points depend on them")
    lesson = counters.lesson_indicator
    said = (f"every grading on a GPU that can read them says in one line whether your kernel shows this "
            f"stage's lesson ({lesson.title}: closer to the reference's value than to the baseline's); "
            if lesson is not None else "")
    return [f"- Hardware counters (Nsight Compute, on a GPU; read at the benchmark size, "
            f"`{case_text(counters.case)}`): {said}`lab grade --counters` and `lab profile` show {titles} "
            f"for your kernel{roles}; {graded}."]


def render(spec: Spec) -> str:
    """The block, markers included, for `spec`."""
    lines = [BEGIN, "## How it is graded", "", "What your file must define, and how it is launched:", "",
             *_signatures(spec), _defines(spec), _launch(spec), "", "The checks:", "", *_checks(spec), "",
             *_timing(spec), *_counters(spec), END]
    return "\n".join(lines)


def bounds(text: str) -> tuple[int, int]:
    """Where the block starts and ends (after END) in a README's text."""
    start = text.find(BEGIN)
    end = text.find(END)
    if start < 0 or end < start or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise MissingBlockError(f"the README needs exactly one {BEGIN!r} ... {END!r} block")
    return start, end + len(END)


def committed_block(text: str) -> str:
    start, end = bounds(text)
    return text[start:end]


def with_block(text: str, spec: Spec) -> str:
    """The README's text with its block replaced by `render(spec)`."""
    start, end = bounds(text)
    return text[:start] + render(spec) + text[end:]


def main(argv: list[str]) -> int:
    from grader.course.catalog import default_catalog

    check = "--check" in argv
    stale = []
    for spec in default_catalog().stages:
        path: Path = spec.readme()
        text = path.read_text(encoding="utf-8")
        fresh = with_block(text, spec)
        if fresh != text:
            stale.append(spec.id)
            if not check:
                path.write_text(fresh, encoding="utf-8")
    if stale:
        sys.stdout.write(("out of date: " if check else "rewrote: ") + ", ".join(stale) + "\n")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
