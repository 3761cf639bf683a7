"""What every step of grading shares: the request the parent sends, the worker's `Context`,
and the `Step` each one is (grader.steps puts them in order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.results import PhaseStarted, WorkerMessage

if TYPE_CHECKING:
    import numpy as np

    from grader.backends.base import Backend, CompiledKernel


@dataclass(frozen=True)
class Request:
    """What the parent asks the worker to grade. It goes to the worker as JSON (to_json), its
    backend named there; the worker reads it back into its row (grader.worker)."""

    course_root: str
    stage: str
    source: str
    filename: str
    backend: BackendKind
    device: int  # the backend's device index; -1: choose with device_choice, as `lab grade` does
    seed: int
    timing: bool = True  # time it (on a GPU; on a CPU device only with cpu_timing)
    cpu_timing: bool = False
    memory_limit: int | None = None  # bytes of address space, on a CPU device
    compile_only: bool = False  # the source already fails correctness: compile, run nothing
    device_choice: str | None = None  # --device: an index or part of a name (with device -1)
    # What each plugin asks of the worker (grader.plugins), by plugin name, as JSON holds it: the
    # worker runs the steps of the plugins named here, and only theirs.
    plugins: dict[str, Any] = field(default_factory=dict)
    # Ask for a timing session where this grading can be timed in one (grader.timing_session):
    # the parent then decides whether it is timed alone or with others of its stage.
    session: bool = False
    # This worker is a session's anchor: it grades nothing, and times the stage's trusted kernels
    # for every session of its stage, backend and device (grader.session_worker).
    anchor: bool = False

    def to_json(self) -> dict[str, Any]:
        """As the worker reads it: every field, the backend by its name."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "backend": self.backend.name}


@dataclass
class Context:
    """What the steps of one grading share inside the worker."""

    request: Request
    catalog: Catalog
    spec: Spec
    problem: Any
    rng: np.random.Generator
    send: Callable[[WorkerMessage], None]
    backend: Backend | None = None
    kernels: dict[str, CompiledKernel] = field(default_factory=dict)  # the submission's
    # The trusted kernels timed beside it, by role (baseline, reference, ceiling), each with
    # the spec it is launched by.
    trusted: dict[str, tuple[Spec, dict[str, CompiledKernel]]] = field(default_factory=dict)
    benchmark: Any = None  # grader.steps.benchmark.Bench: the benchmark's buffers, for the size check
    host_inputs: Any = None  # grader.steps.host_inputs.HostInputs: benchmark-size inputs made ahead
    # What the plugins' worker steps keep for their later steps, by plugin name (grader.plugins).
    plugin_data: dict[str, Any] = field(default_factory=dict)
    # Work a plugin's step started that must be over before anything is timed (the benchmark
    # calls each first), and what is to be closed when the grading ends, however it ends.
    before_timing: list[Callable[[], None]] = field(default_factory=list)
    closers: list[Callable[[], Any]] = field(default_factory=list)
    _ops: Any = None  # grader.device_ops.DeviceOps, made on first use
    # A line from the parent, waited for (its answer to WantDevice: grader.device_claim);
    # None where nobody answers (the device is then never waited for).
    receive: Callable[[], str] | None = None
    device_claimed: bool = False  # this grading's turn on the device is under way
    in_session: bool = False  # ... and it is a timing session's (grader.session_worker)
    shared_claimed: bool = False  # ... its shared turn, for the correctness cases
    # How many buffer placements the benchmark times each kernel on (grader.timing): set by
    # grader.device_claim.claim from the policy and the device's memory.
    placements: int = 1

    @property
    def kind(self) -> BackendKind:
        """The row of the request's backend."""
        return self.request.backend

    def phase(self, name: str, limit: str = "run") -> None:
        self.send(PhaseStarted(name, limit))

    @property
    def inputs_on_device(self) -> bool:
        """Whether benchmark-size inputs are made on the device: the problem says what they are
        (uniform floats), and the grader's own kernels exist for this backend."""
        from grader.device_ops import supports

        return hasattr(self.problem, "uniform_inputs") and supports(self.kind)

    def device_ops(self) -> Any:
        """The grader's own kernels on this device (grader.device_ops.DeviceOps), made once."""
        if self._ops is None:
            from grader.device_ops import DeviceOps

            assert self.backend is not None
            self._ops = DeviceOps(self.backend)
        return self._ops

    @property
    def timed(self) -> bool:
        """Whether speed is measured here: asked for, and on a GPU (or CPU timing asked for)."""
        assert self.backend is not None
        return self.request.timing and (self.backend.info.kind == "gpu" or self.request.cpu_timing)


class Step:
    """One step: `run` sends its results and returns False to end the grading there."""

    def wanted(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> bool:
        raise NotImplementedError
