"""Open the device (the one the parent chose, or the best match of the backend's own), and say
what it is."""

from __future__ import annotations

from grader.backends.discovery import Discovery, NoDeviceError, Target, choose
from grader.backends.registry import BackendKind
from grader.resident_device import open_device
from grader.results import DeviceOpened, FailureKind, GraderError
from grader.steps.context import Context, Step


def limit_memory(nbytes: int | None) -> None:
    """Cap this process's address space at `nbytes`, or at the limit it already has where that
    is lower (`ulimit -v`: a process may lower its limits, never raise them)."""
    if nbytes:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = min(v for v in (nbytes, soft, hard) if v != resource.RLIM_INFINITY)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def device_target(kind: BackendKind, choice: str | None = None) -> Target:
    """The backend's device this worker opens: the one `choice` names (an index or part of a
    name, as --device), else its best. Raises NoDeviceError."""
    found, problem = kind.probe()
    return choose(Discovery(found, {kind.name: problem} if problem else {}), kind, choice)


class OpenDevice(Step):
    def run(self, ctx: Context) -> bool:
        ctx.phase("startup", "compile")
        kind = ctx.kind
        index = ctx.request.device
        if index < 0:
            try:
                index = device_target(kind, ctx.request.device_choice or None).index
            except NoDeviceError as error:
                ctx.send(GraderError(str(error), failure=FailureKind.NO_DEVICE))
                return False
        ctx.backend = open_device(kind, index)  # (a resident worker's, held from its last grading)
        info = ctx.backend.info
        if info.kind == "cpu":  # the kernel runs in this process's own memory: cap it
            limit_memory(ctx.request.memory_limit)
        ctx.send(DeviceOpened(info.name, info.kind, info.vendor, info.platform, dict(info.limits),
                              device_id=ctx.backend.stable_id(index), memory_bytes=int(info.memory_bytes or 0)))
        return True
