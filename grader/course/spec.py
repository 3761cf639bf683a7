"""Stage specs: `assignments/<id>/assignment.toml` read into frozen dataclasses."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.course.counter_spec import CountersSpec, load_counters
from grader.course.expressions import ExpressionError, evaluate


class SpecError(ValueError):
    """A stage's assignment.toml is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter, as the stage's signature declares it."""

    name: str
    base_type: str  # "float", "int", "double", "unsigned int", ...
    is_pointer: bool
    is_const: bool

    @property
    def shape_text(self) -> str:
        return self.base_type + (" *" if self.is_pointer else "")


_PARAM = re.compile(r"^(?P<decl>.*?)(?P<name>[A-Za-z_]\w*)\s*(\[\s*\])?$")
_QUALIFIERS = {"const", "__restrict__", "restrict", "__restrict", "volatile",
               "__global", "global", "__constant", "constant", "__local", "local"}


def parse_params(signature: str) -> tuple[Param, ...]:
    """Split a C parameter list into named, typed parameters."""
    params = []
    text = signature.strip()
    if not text or text == "void":
        return ()
    for part in text.split(","):
        part = " ".join(part.replace("*", " * ").split())
        match = _PARAM.match(part)
        if not match:
            raise SpecError(f"cannot read parameter {part!r}")
        words = match.group("decl").split()
        is_pointer = "*" in words or bool(match.group(3))
        is_const = "const" in words[: words.index("*")] if "*" in words else "const" in words
        base = " ".join(w for w in words if w != "*" and w not in _QUALIFIERS)
        if not base:
            raise SpecError(f"parameter {part!r} has no type")
        params.append(Param(match.group("name"), base, is_pointer, is_const))
    return tuple(params)


@dataclass(frozen=True)
class KernelSpec:
    """An entry point a submission must define."""

    name: str
    signature: str
    params: tuple[Param, ...]

    def declared(self, pointer_space: str = "") -> str:
        """The parameter list as a language writes it: the stage's own, or each pointer in
        `pointer_space` (OpenCL's `__global`)."""
        if not pointer_space:
            return self.signature
        parts = []
        for p in self.params:
            if p.is_pointer:
                const = "const " if p.is_const else ""
                parts.append(f"{pointer_space} {const}{p.base_type} *{p.name}")
            else:
                parts.append(f"{p.base_type} {p.name}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Spec:
    id: str
    title: str
    track: str
    stage: int
    problem: str
    kernels: tuple[KernelSpec, ...]
    defines: dict[str, int | float]
    concept: str
    block: tuple[str | int, ...]
    grid: tuple[str | int, ...]
    problem_options: dict[str, Any]
    test_cases: tuple[dict[str, int | float], ...]
    bench_cases: tuple[dict[str, int | float], ...]
    cpu_bench_cases: tuple[dict[str, int | float], ...]
    bytes_expr: str | None
    flops_expr: str | None
    ceiling: str | None
    baseline: str | None
    threshold: float | None
    min_speedup: float | None
    points: dict[str, int]
    allowed_headers: tuple[str, ...]
    hints: dict[str, str]  # [feedback]: what to look at, by failure kind (wrong, too_slow, ...)
    folder: Path = field(compare=False)
    # [counters]: the hardware counters that show the stage's idea (grader.course.counter_spec), or None
    counters: CountersSpec | None = None
    # [launch] dynamic_shared: bytes of dynamic shared memory (CUDA's `extern __shared__`) each
    # block is launched with, an expression of the defines and the case; None: the stage
    # launches with none, and a kernel that declares such memory is refused
    dynamic_shared: str | int | None = None

    @property
    def kernel(self) -> KernelSpec:
        """The stage's main entry point (the one timed and shown)."""
        return self.kernels[0]

    @property
    def graded_for_speed(self) -> bool:
        return "fast" in self.points and self.baseline is not None

    @property
    def max_score(self) -> int:
        return sum(self.points.values())

    def values(self, case: dict[str, int | float]) -> dict[str, int | float]:
        """The names an expression of this stage may use for `case`."""
        return {**self.defines, **case}

    def launch_shape(self, case: dict[str, int | float]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        names = self.values(case)
        grid = tuple(int(evaluate(e, names)) for e in self.grid)
        block = tuple(int(evaluate(e, names)) for e in self.block)
        return grid, block

    def dynamic_shared_bytes(self, case: dict[str, int | float]) -> int:
        """Bytes of dynamic shared memory each block is launched with on `case` (0: none)."""
        if self.dynamic_shared is None:
            return 0
        return int(evaluate(self.dynamic_shared, self.values(case)))

    def work(self, case: dict[str, int | float]) -> tuple[float | None, float | None]:
        """Bytes moved and floating-point operations for one launch on `case`."""
        names = self.values(case)
        nbytes = float(evaluate(self.bytes_expr, names)) if self.bytes_expr else None
        flops = float(evaluate(self.flops_expr, names)) if self.flops_expr else None
        return nbytes, flops

    def readme(self) -> Path:
        return self.folder / "README.md"

    def skeleton(self, suffix: str) -> Path:
        return self.folder / f"skeleton{suffix}"


def _table(data: dict[str, Any], key: str, where: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{where}: [{key}] must be a table")
    return value


def _cases(value: Any, key: str, where: Path) -> tuple[dict[str, int | float], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise SpecError(f"{where}: {key} must be a list of tables like {{ width = 32 }}")
    return tuple(dict(c) for c in value)


def load_spec(folder: Path) -> Spec:
    """Read and validate `folder/assignment.toml`."""
    path = folder / "assignment.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise SpecError(f"{folder}: no assignment.toml") from error
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path}: {error}") from error

    a = _table(data, "assignment", path)
    launch = _table(data, "launch", path)
    tests = _table(data, "tests", path)
    bench = _table(data, "benchmark", path)
    grading = _table(data, "grading", path)
    try:
        stage_id = a["id"]
        if stage_id != folder.name:
            raise SpecError(f"{path}: id {stage_id!r} differs from its folder name {folder.name!r}")
        if "kernels" in a:
            kernels = tuple(
                KernelSpec(name, sig, parse_params(sig)) for name, sig in dict(a["kernels"]).items()
            )
        else:
            kernels = (KernelSpec(a["kernel"], a["signature"], parse_params(a["signature"])),)
        spec = Spec(
            id=stage_id,
            title=a["title"],
            track=a.get("track", stage_id.split("_")[0]),
            stage=int(a.get("stage", 0)),
            problem=a["problem"],
            kernels=kernels,
            defines=dict(a.get("defines", {})),
            concept=a.get("concept", ""),
            block=tuple(launch.get("block", ())),
            grid=tuple(launch.get("grid", ())),
            problem_options=_table(data, "problem", path),
            test_cases=_cases(tests.get("cases"), "tests.cases", path),
            bench_cases=_cases(bench.get("cases"), "benchmark.cases", path),
            cpu_bench_cases=_cases(bench.get("cpu_cases"), "benchmark.cpu_cases", path),
            bytes_expr=bench.get("bytes"),
            flops_expr=bench.get("flops"),
            ceiling=bench.get("ceiling"),
            baseline=grading.get("baseline"),
            threshold=grading.get("threshold"),
            min_speedup=grading.get("min_speedup"),
            points={k: int(v) for k, v in grading.get("points", {}).items()},
            allowed_headers=tuple(a.get("headers", ())),
            hints={k: str(v) for k, v in _table(data, "feedback", path).items()},
            folder=folder,
            counters=_counters(data.get("counters"), bench.get("cases"), path),
            dynamic_shared=launch.get("dynamic_shared"),
        )
    except KeyError as error:
        raise SpecError(f"{path}: missing key {error.args[0]!r}") from error
    _validate(spec, path)
    return spec


def _validate(spec: Spec, path: Path) -> None:
    if not spec.test_cases:
        raise SpecError(f"{path}: [tests] cases is empty")
    if not spec.points:
        raise SpecError(f"{path}: [grading] points is empty")
    if "concept" in spec.points:
        raise SpecError(f"{path}: points.concept: no check grades the hardware counters (they are shown, "
                        f"never graded); give its points to compiles, correct or fast")
    unknown = set(spec.points) - {"compiles", "correct", "fast"}
    if unknown:
        raise SpecError(f"{path}: unknown point keys {sorted(unknown)}")
    if "fast" in spec.points and spec.baseline is None:
        raise SpecError(f"{path}: points.fast needs a [grading] baseline")
    if spec.baseline is not None and spec.threshold is None and spec.min_speedup is None:
        raise SpecError(f"{path}: a baseline needs a threshold or a min_speedup")
    if spec.counters is not None:
        stray = [k for k in spec.counters.kernels if k not in {kernel.name for kernel in spec.kernels}]
        if stray:
            raise SpecError(f"{path}: [counters] kernels: {stray} are not entry points of this stage")
    if spec.dynamic_shared is not None and (isinstance(spec.dynamic_shared, bool)
                                            or not isinstance(spec.dynamic_shared, (str, int))):
        raise SpecError(f"{path}: [launch] dynamic_shared must be a number of bytes or an expression of them")
    if len(spec.block) != len(spec.grid) or not spec.block:
        raise SpecError(f"{path}: [launch] block and grid must have the same number of dimensions")
    try:
        for case in spec.test_cases + spec.bench_cases + spec.cpu_bench_cases:
            spec.launch_shape(case)
            spec.work(case)
            if spec.dynamic_shared_bytes(case) < 0:
                raise SpecError(f"{path}: [launch] dynamic_shared is negative for {case}")
        if spec.counters is not None:
            spec.launch_shape(spec.counters.case)
            for indicator in spec.counters.show:
                if indicator.per is not None:
                    evaluate(indicator.per, spec.values(spec.counters.case))
    except ExpressionError as error:
        raise SpecError(f"{path}: {error}") from error


def _counters(data: Any, bench_cases: Any, path: Path) -> CountersSpec | None:
    """[counters], read on the first GPU benchmark case: the counters describe the launch whose
    time is graded (a kernel that changes its access pattern with the size cannot show one
    pattern to the counters and time another)."""
    try:
        counters = load_counters(data)
    except ValueError as error:
        raise SpecError(f"{path}: {error}") from error
    if counters is None:
        return None
    cases = _cases(bench_cases, "benchmark.cases", path)
    if not cases:
        raise SpecError(f"{path}: [counters] needs a [benchmark] case: the counters are read at the size that is timed")
    return replace(counters, case=dict(cases[0]))
