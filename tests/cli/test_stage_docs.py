"""The stage READMEs, `lab show` and `lab grade --help` agree with the stage specs.

What a spec decides (signatures, defines, launch, points, cases, baseline, pass rule, what a CPU
device grades, the counters) is stated in each README's block rendered by grader.course.stage_readme;
these tests fail when a committed block, the prose around it, `lab show` or the help says
something else. No device: the specs and texts only.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from grader.course.catalog import default_catalog
from grader.course.checks.source_checks import strip_comments
from grader.course.expressions import evaluate
from grader.course.spec import Param, Spec, parse_params
from grader.course.stage_readme import bounds, committed_block, render
from lab.cli import app
from lab.cli.typer_app import console

STAGES = default_catalog().stages
runner = CliRunner()


def _readme(spec: Spec) -> str:
    return spec.readme().read_text(encoding="utf-8")


def _prose(spec: Spec) -> str:
    """The README without its rendered block: the text written by hand."""
    text = _readme(spec)
    start, end = bounds(text)
    return text[:start] + text[end:]


def _plain(markdown: str) -> str:
    return " ".join(markdown.replace("`", "").replace("**", "").split())


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_the_committed_block_is_the_rendering_of_the_spec(spec):
    assert committed_block(_readme(spec)) == render(spec), (
        f"{spec.readme()}: its block is out of date; run `python -m grader.course.stage_readme`")


_CUDA = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)")
_OPENCL = re.compile(r"__kernel\s+void\s+(\w+)\s*\(([^)]*)\)")


def _typed(param: Param) -> tuple[str, str, bool, bool]:
    """What the grader checks of a parameter: a scalar's const is the kernel's own business."""
    return param.name, param.base_type, param.is_pointer, param.is_const and param.is_pointer


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_every_signature_in_the_readme_is_the_specs(spec):
    kernels = {k.name: k.params for k in spec.kernels}
    found = [*_CUDA.findall(_readme(spec)), *_OPENCL.findall(_readme(spec))]
    for name, params in found:
        assert name in kernels, f"{spec.id} README names a kernel {name!r}; the spec's are {sorted(kernels)}"
        stated = parse_params(strip_comments(params))
        assert [_typed(p) for p in stated] == [_typed(p) for p in kernels[name]], (
            f"{spec.id} README: {name}({params}) is not the spec's")


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_every_define_the_prose_states_is_the_specs(spec):
    prose = _prose(spec)
    stated = re.findall(r"-D(\w+)=([\w.]+)", prose) + re.findall(r"`(\w+)` = ([\d.]+)\b", prose)
    for name, value in stated:
        if name in spec.defines:
            assert float(value) == float(spec.defines[name]), f"{spec.id} README: {name} = {value}"


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_the_prose_never_says_cpu_timings_are_shown(spec):
    """The grader times nothing on a CPU device unless asked (--cpu-timing); the block says so."""
    prose = _plain(_prose(spec))
    claim = re.search(r"timings?\b[^.]{0,80}\bshown", prose, re.IGNORECASE)
    assert claim is None, f"{spec.id} README: {claim.group(0)!r}"


def _seconds_near_counters(text: str) -> list[str]:
    sentences = re.split(r"(?<=[.;])\s", _plain(text))
    return [s for s in sentences if ("--counters" in s or "profiling run" in s)
            and re.search(r"\b\d+(\.\d+)?\s?s\b", s)]


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_the_cost_of_counters_is_stated_only_in_docs_performance(spec):
    assert _seconds_near_counters(_readme(spec)) == []


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setattr(console, "width", 400)


def _facts(spec: Spec) -> list[str]:
    """Each line of the rendered block that states a fact, as plain text."""
    lines = render(spec).splitlines()[1:-1]
    return [_plain(line.removeprefix("- ")) for line in lines if line.startswith("- ")]


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_lab_show_states_the_specs_facts(spec, wide):
    result = runner.invoke(app, ["show", spec.id])
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    for fact in _facts(spec):
        assert fact in shown, f"`lab show {spec.id}` does not say: {fact}"
    assert _seconds_near_counters(result.output) == []


def test_grade_help_states_no_cost_of_counters(wide):
    result = runner.invoke(app, ["grade", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--counters" in text
    assert "not yet measured" not in text
    assert _seconds_near_counters(result.output) == []
    assert "docs/performance.md" in text


_LAUNCH = re.compile(r"\bblock\s+`?\(([^()]*)\)`?(?:\s*=\s*\(([^()]*)\))?(?:,?\s*grid\s+`?\(([^()]*)\)`?)?",
                     re.IGNORECASE)
_OPENCL_SIZES = re.compile(r"local(?:\s+size)?\s+\(([^()]*)\),\s*global(?:\s+size)?\s+\(([^()]*)\)", re.IGNORECASE)


def _shape(text: str, names: dict[str, int | float]) -> tuple[int, ...]:
    return tuple(int(evaluate(part.strip(), names)) for part in text.split(","))


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.id)
def test_every_launch_shape_the_prose_states_is_the_specs(spec):
    """`block (TILE_DIM, BLOCK_ROWS) = (32, 8), grid (width / TILE_DIM, ...)` and OpenCL's
    `local (..), global (..)`, wherever the prose states them, for every test case."""
    prose = " ".join(_prose(spec).split())
    stated = [m for m in _LAUNCH.finditer(prose) if m.group(2) or m.group(3)]
    sizes = list(_OPENCL_SIZES.finditer(prose))
    for case in spec.test_cases:
        grid, block = spec.launch_shape(case)
        names = spec.values(case)
        for m in stated:
            where = f"{spec.id} README, {m.group(0)!r} for {case}"
            assert _shape(m.group(1), names) == block, where
            if m.group(2):
                assert _shape(m.group(2), names) == block, where
            if m.group(3):
                assert _shape(m.group(3), names) == grid, where
        for m in sizes:
            where = f"{spec.id} README, {m.group(0)!r} for {case}"
            assert _shape(m.group(1), names) == block, where
            assert _shape(m.group(2), names) == tuple(g * b for g, b in zip(grid, block)), where
