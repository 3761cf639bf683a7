"""Correctness of one case: fresh inputs, poisoned and guarded outputs, the problem's oracle,
and a second run with the same inputs to catch races."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from grader import memory
from grader.backends.base import Backend, Buffer, CompiledKernel
from grader.course.problems.base import Setup, Verdict
from grader.course.spec import Spec
from grader.launching import plan_for, run_plan
from grader.results import CaseResult, FailureKind


def case_label(case: dict[str, int | float]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())


def make_setup(spec: Spec, case: dict[str, int | float]) -> Setup:
    grid, block = spec.launch_shape(case)
    return Setup(values=spec.values(case), grid=grid, block=block, options=spec.problem_options,
                 dynamic_shared=spec.dynamic_shared_bytes(case))


class CaseBuffers:
    """Device buffers for one case: inputs uploaded once, inputs and outputs guarded."""

    def __init__(self, backend: Backend, problem: Any, setup: Setup, inputs: dict[str, np.ndarray] | None,
                 uniform: dict[str, tuple[tuple[int, ...], float, float]] | None = None,
                 arena: memory.Arena | None = None):
        """`inputs`: host arrays to upload; or None with `uniform` (name -> shape, low, high):
        guarded inputs that `refill` fills with random values on the device. `arena`: every
        buffer in its slots (memory.Arena, in the order inputs, outputs), freed with it."""
        self.backend = backend
        self.arena = arena
        self.problem = problem
        self.setup = setup
        self.inputs: dict[str, np.ndarray] = {}  # host copies of the inputs ({} while only on the device)
        self.uniform = uniform or {}
        self.input_buffers: dict[str, Buffer] = {}
        self.guarded_inputs: dict[str, tuple[int, memory.GuardedBuffer]] = {}  # name -> (number, buffer)
        self._plain_inputs: list[Buffer] = []
        if inputs is None:
            for number, (name, (shape, _, _)) in enumerate(self.uniform.items()):
                guarded = memory.allocate(backend, name, shape, np.dtype(np.float32),
                                          memory.input_guard_bits(number), arena)
                memory.fill(backend, guarded)
                self.guarded_inputs[name] = (number, guarded)
                self.input_buffers[name] = guarded.inner
        else:
            self.inputs = inputs
            for number, (name, array) in enumerate(inputs.items()):
                if array.dtype.itemsize == 4:
                    guarded = memory.allocate(backend, name, array.shape, array.dtype,
                                              memory.input_guard_bits(number), arena)
                    memory.fill(backend, guarded, array)
                    self.guarded_inputs[name] = (number, guarded)
                    self.input_buffers[name] = guarded.inner
                else:
                    buf = backend.alloc(array.nbytes) if arena is None else arena.alloc(name, array.nbytes)
                    backend.upload(buf, array)
                    self._plain_inputs.append(buf)
                    self.input_buffers[name] = buf
        self.outputs = {
            name: memory.allocate(backend, name, shape, dtype, arena=arena)
            for name, (shape, dtype) in problem.outputs(setup).items()
        }

    def refill(self, ops: Any, seed: int) -> None:
        """Fresh random inputs, generated on the device (`ops`: grader.device_ops.DeviceOps)."""
        for number, (name, (shape, low, high)) in enumerate(self.uniform.items()):
            ops.fill_uniform(self.input_buffers[name], int(np.prod(shape)), seed + number, low, high)
        self.inputs = {}

    def host_inputs(self) -> dict[str, np.ndarray]:
        """The inputs on the host, read back from the device where they were made there."""
        if not self.inputs:
            for name, (_, guarded) in self.guarded_inputs.items():
                self.inputs[name] = memory.read(self.backend, guarded).values
        return self.inputs

    def reset_outputs(self) -> None:
        """Poison every output, or copy in the input it starts from (the problem's `starts_from`),
        all on the device: timing resets before every launch."""
        starts = self.problem.starts_from(self.setup) if hasattr(self.problem, "starts_from") else {}
        for name, buf in self.outputs.items():
            memory.fill(self.backend, buf, self.input_buffers[starts[name]] if name in starts else None)

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

    def guards_hit(self) -> list[str]:
        """Writes out of bounds of any output or input, from the guard bands alone."""
        found = [memory.guards_hit(self.backend, buf) for buf in self.outputs.values()]
        return [line for line in found if line] + self.inputs_out_of_bounds()

    def inputs_out_of_bounds(self) -> list[str]:
        """One line for each input whose guard bands the kernel wrote into (read from the bands
        alone)."""
        found = [memory.guards_hit(self.backend, guarded) for _, guarded in self.guarded_inputs.values()]
        return [line for line in found if line]

    def read_out_of_bounds(self, outputs: dict[str, np.ndarray]) -> str | None:
        """A kernel that reads past an input carries that input's guard NaN into its outputs."""
        with_nans = {out_name: values for out_name, values in outputs.items()
                     if values.dtype.itemsize == 4 and values.dtype.kind == "f" and np.isnan(values).any()}
        for name, (number, _) in self.guarded_inputs.items():
            for out_name, values in with_nans.items():
                hits = memory.carried_input_guard(values, number)
                if hits.size:
                    where = ", ".join(str(int(i)) for i in np.unravel_index(int(hits[0]), values.shape))
                    return (f"read out of bounds of `{name}`: {hits.size} element(s) of `{out_name}` hold "
                            f"the marked NaN the grader puts around `{name}` (the first at "
                            f"{out_name}[{where}]), so some thread reads past the end or before the "
                            f"start of `{name}`")
        return None

    def release(self) -> None:
        """Free everything; never raise (this runs in `finally`, often after a failed launch, and
        must not replace the launch's error with a failure to free a dead context's memory)."""
        if self.arena is not None:
            self.arena.release()
            return
        buffers = [*self._plain_inputs, *(g.whole for _, g in self.guarded_inputs.values()),
                   *(out.whole for out in self.outputs.values())]
        for buf in buffers:
            try:
                self.backend.release(buf)
            except Exception:  # noqa: BLE001 - see above
                pass


def run_case(backend: Backend, spec: Spec, problem: Any, kernels: dict[str, CompiledKernel],
             case: dict[str, int | float], rng: np.random.Generator, repeat: bool = True) -> CaseResult:
    """Grade `kernels` on one case; `repeat` runs it twice to catch races."""
    setup = make_setup(spec, case)
    label = case_label(case)
    seed = rng.bit_generator.state  # the inputs are made again from it after the launch
    buffers = CaseBuffers(backend, problem, setup, problem.inputs(setup, rng))
    specs = {k.name: k for k in spec.kernels}
    plan = plan_for(problem, spec, setup)
    try:
        buffers.reset_outputs()
        run_plan(backend, kernels, specs, plan, setup.values, buffers.bound())
        if backend.info.kind != "gpu":  # the kernel ran in this process: its host copy is checked
            forged = host_copy_written(buffers, inputs_again(problem, setup, rng, seed))
            if forged is not None:
                return CaseResult(label, False, FailureKind.OUT_OF_BOUNDS, forged)
        first, failed, verdict = judge_run(buffers, problem, setup, label)
        if failed is not None:
            return failed
        race = None
        if repeat:
            buffers.reset_outputs()
            run_plan(backend, kernels, specs, plan, setup.values, buffers.bound())
            second, out_of_bounds = buffers.read_outputs()
            if out_of_bounds:
                return CaseResult(label, False, FailureKind.OUT_OF_BOUNDS, "; ".join(out_of_bounds))
            race = _differences(first, second)
        if race:
            message = (f"outputs differ between two runs with the same inputs ({race}): a likely "
                       f"missing barrier, or a race between threads")
            skipped = _left_unwritten(first, second)
            if skipped:
                message = (f"outputs differ between two runs with the same inputs: the second run left "
                           f"{skipped} never written that the first run wrote; a kernel must do all "
                           f"its work on every launch (no state kept from one launch to the next)")
            if not verdict.ok:
                message = verdict.message + "; " + message
            return CaseResult(label, False, FailureKind.RACE, message, verdict.details)
        if not verdict.ok:
            return CaseResult(label, False, FailureKind.WRONG, verdict.message, verdict.details)
        return CaseResult(label, True)
    finally:
        buffers.release()


def inputs_again(problem: Any, setup: Setup, rng: np.random.Generator,
                 state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The case's inputs made again from the generator's `state` before they were first made:
    new arrays, allocated after the launch, so no kernel can have written them."""
    again = np.random.Generator(type(rng.bit_generator)())
    again.bit_generator.state = state
    return problem.inputs(setup, again)


def host_copy_written(buffers: CaseBuffers, fresh: dict[str, np.ndarray]) -> str | None:
    """After a launch: whether the grader's host copy of the inputs still holds what the case's
    seed makes (`fresh`). On a CPU device the kernel runs inside this process, and a write far
    out of bounds can reach that copy, which the oracle and the input check read: where it
    changed, one line saying so; where not, None, and the checks go on with `fresh`."""
    for name, array in fresh.items():
        kept = buffers.inputs.get(name)
        if kept is None or kept.shape != array.shape or kept.tobytes() != array.tobytes():
            return (f"wrote out of bounds, outside every buffer of its own: into the grader's own copy of the "
                    f"inputs (`{name}` no longer holds what this case's seed makes); on a CPU device the "
                    f"kernel runs inside the grading process, where a pointer walked far past its buffers "
                    f"reaches the grader's memory")
    buffers.inputs = fresh
    return None


def judge_run(buffers: CaseBuffers, problem: Any, setup: Setup, label: str,
              ) -> tuple[dict[str, np.ndarray], CaseResult | None, Verdict]:
    """The checks of one run whose outputs are in `buffers` (reset before it): the outputs read
    back, the first memory failure (a write or read out of bounds, an input written), and the
    problem's oracle's verdict on the outputs (where no memory failure came first). Also used by
    the profiling entry (grader.counters.entry) on a launch it profiled."""
    first, out_of_bounds = buffers.read_outputs()
    if out_of_bounds:
        return first, CaseResult(label, False, FailureKind.OUT_OF_BOUNDS, "; ".join(out_of_bounds)), Verdict(False)
    out_of_bounds = buffers.inputs_out_of_bounds()
    if out_of_bounds:
        return first, CaseResult(label, False, FailureKind.OUT_OF_BOUNDS, "; ".join(out_of_bounds)), Verdict(False)
    changed = [n for n in buffers.modified_inputs() if n not in first]
    if changed:
        return first, CaseResult(label, False, FailureKind.INPUT_MODIFIED,
                                 f"the kernel wrote into its input `{changed[0]}`"), Verdict(False)
    read_past = buffers.read_out_of_bounds(first)
    if read_past:
        return first, CaseResult(label, False, FailureKind.READ_OUT_OF_BOUNDS, read_past), Verdict(False)
    verdict = problem.check(setup, buffers.inputs, first)
    if not verdict.ok:
        verdict = explain_nans(verdict, first)
    return first, None, verdict


def explain_nans(verdict: Verdict, outputs: dict[str, np.ndarray]) -> Verdict:
    """Say so when some NaNs in the outputs are not the grader's poison: the kernel wrote them."""
    computed = sum(memory.computed_nans(values) for values in outputs.values())
    if not computed:
        return verdict
    note = (f"; {computed} of the wrong elements hold a NaN the kernel wrote (not the grader's "
            f"poison): reading out of bounds or uninitialized memory is the usual cause")
    return Verdict(verdict.ok, verdict.message + note, verdict.details)


def _left_unwritten(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> str | None:
    for name, a in first.items():
        if a.dtype.itemsize != 4 or a.dtype.kind != "f":
            continue
        poison = second[name].view(np.uint32) == memory.POISON_BITS
        skipped = poison & (a.view(np.uint32) != memory.POISON_BITS)
        if skipped.any():
            return f"{int(skipped.sum())} element(s) of `{name}`"
    return None


def _differences(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> str | None:
    for name, a in first.items():
        b = second[name]
        differ = a.view(np.uint32) != b.view(np.uint32)
        if differ.any():
            return f"{int(differ.sum())} element(s) of `{name}`"
    return None
