"""Correctness of one case: fresh inputs, poisoned and guarded outputs, the problem's oracle,
and a second run with the same inputs to catch races."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader import memory
from grader.launching import plan_for, run_plan
from lab.backends.base import Backend, Buffer, CompiledKernel
from lab.problems.base import Setup
from lab.spec import Spec


@dataclass
class CaseResult:
    label: str
    ok: bool
    message: str = ""
    kind: str = ""  # "", "wrong", "out_of_bounds", "race", "input_modified"
    details: dict[str, Any] = field(default_factory=dict)


def case_label(case: dict[str, int | float]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())


def make_setup(spec: Spec, case: dict[str, int | float]) -> Setup:
    grid, block = spec.launch_shape(case)
    return Setup(values=spec.values(case), grid=grid, block=block, options=spec.problem_options)


class CaseBuffers:
    """Device buffers for one case: inputs uploaded once, outputs guarded."""

    def __init__(self, backend: Backend, problem: Any, setup: Setup, inputs: dict[str, np.ndarray]):
        self.backend = backend
        self.problem = problem
        self.setup = setup
        self.inputs = inputs
        self.input_buffers: dict[str, Buffer] = {}
        for name, array in inputs.items():
            buf = backend.alloc(array.nbytes)
            backend.upload(buf, array)
            self.input_buffers[name] = buf
        self.outputs = {
            name: memory.allocate(backend, name, shape, dtype)
            for name, (shape, dtype) in problem.outputs(setup).items()
        }

    def initial(self) -> dict[str, np.ndarray]:
        if hasattr(self.problem, "initial"):
            return self.problem.initial(self.setup, self.inputs)
        return {}

    def reset_outputs(self) -> None:
        start = self.initial()
        for name, buf in self.outputs.items():
            memory.fill(self.backend, buf, start.get(name))

    def load_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        self.inputs = inputs
        for name, array in inputs.items():
            self.backend.upload(self.input_buffers[name], array)

    def bound(self) -> dict[str, Buffer]:
        return {**self.input_buffers, **{n: b.inner for n, b in self.outputs.items()}}

    def read_outputs(self) -> tuple[dict[str, np.ndarray], list[str]]:
        values, problems = {}, []
        for name, buf in self.outputs.items():
            back = memory.read(self.backend, buf)
            values[name] = back.values
            if back.out_of_bounds:
                problems.append(back.out_of_bounds)
        return values, problems

    def modified_inputs(self) -> list[str]:
        changed = []
        for name, array in self.inputs.items():
            now = np.empty_like(array)
            self.backend.download(self.input_buffers[name], now)
            if not np.array_equal(now.view(np.uint8), np.ascontiguousarray(array).view(np.uint8)):
                changed.append(name)
        return changed

    def release(self) -> None:
        for buf in self.input_buffers.values():
            self.backend.release(buf)
        for out in self.outputs.values():
            self.backend.release(out.whole)


def run_case(backend: Backend, spec: Spec, problem: Any, kernels: dict[str, CompiledKernel],
             case: dict[str, int | float], rng: np.random.Generator, repeat: bool = True) -> CaseResult:
    """Grade `kernels` on one case; `repeat` runs it twice to catch races."""
    setup = make_setup(spec, case)
    label = case_label(case)
    buffers = CaseBuffers(backend, problem, setup, problem.inputs(setup, rng))
    specs = {k.name: k for k in spec.kernels}
    plan = plan_for(problem, spec, setup)
    try:
        buffers.reset_outputs()
        run_plan(backend, kernels, specs, plan, setup.values, buffers.bound())
        first, out_of_bounds = buffers.read_outputs()
        if out_of_bounds:
            return CaseResult(label, False, "; ".join(out_of_bounds), "out_of_bounds")
        changed = [n for n in buffers.modified_inputs() if n not in first]
        if changed:
            return CaseResult(label, False, f"the kernel wrote into its input `{changed[0]}`",
                              "input_modified")
        verdict = problem.check(setup, buffers.inputs, first)
        race = None
        if repeat:
            buffers.reset_outputs()
            run_plan(backend, kernels, specs, plan, setup.values, buffers.bound())
            second, out_of_bounds = buffers.read_outputs()
            if out_of_bounds:
                return CaseResult(label, False, "; ".join(out_of_bounds), "out_of_bounds")
            race = _differences(first, second)
        if race:
            message = (f"outputs differ between two runs with the same inputs ({race}): a likely "
                       f"missing barrier (__syncthreads() / barrier()) or a race between threads")
            if not verdict.ok:
                message = verdict.message + "; " + message
            return CaseResult(label, False, message, "race", verdict.details)
        if not verdict.ok:
            return CaseResult(label, False, verdict.message, "wrong", verdict.details)
        return CaseResult(label, True)
    finally:
        buffers.release()


def _differences(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> str | None:
    for name, a in first.items():
        b = second[name]
        differ = a.view(np.uint32) != b.view(np.uint32)
        if differ.any():
            return f"{int(differ.sum())} element(s) of `{name}`"
    return None
