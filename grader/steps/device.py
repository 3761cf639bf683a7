"""Open the device (the one the parent chose, or the best match of the backend's own), and say
what it is; or take the GPU the worker opened before its request came (open_early), where the
request asks for that one."""

from __future__ import annotations

from dataclasses import dataclass

from grader.backends.base import Backend
from grader.backends.discovery import Discovery, NoDeviceError, Target, choose
from grader.backends.registry import BackendKind
from grader.results import DeviceOpened, FailureKind, GraderError
from grader.steps.context import Context, Request, Step


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


@dataclass(frozen=True)
class EarlyDevice:
    """A device the worker opened before its request came (open_early)."""

    index: int
    chosen: bool  # chosen as the backend's best (the worker's command line named none)
    backend: Backend

    def fits(self, request: Request) -> bool:
        """Whether `request` asks for this device: its index, or (with neither an index nor
        --device) the backend's best."""
        if request.device >= 0:
            return request.device == self.index
        if request.device_choice and request.device_choice.isdigit():  # --device 1: the index
            return int(request.device_choice) == self.index
        return self.chosen and not request.device_choice


def open_early(kind: BackendKind | None, device: int) -> EarlyDevice | None:
    """Open the device the request will most likely name, before it comes: `device`, or (-1)
    the one the OpenDevice step would choose for a request that names none; a GPU only. None
    where there is no row, the device is a CPU device (PoCL: its driver starts writing its files
    at the open, and a grading stopped then would leave them; it opens in a few hundredths of a
    second anyway), or opening fails (the OpenDevice step then opens the device and says what is
    wrong). No student code is here yet: the device is the grader's until the request's steps run."""
    if kind is None:
        return None
    try:
        target = device_target(kind, None if device < 0 else str(device))
        if target.kind != "gpu":
            return None
        return EarlyDevice(target.index, device < 0, kind.open(target.index))
    except Exception:  # noqa: BLE001 - said by the OpenDevice step, which opens it again
        return None


class OpenDevice(Step):
    def run(self, ctx: Context) -> bool:
        ctx.phase("startup", "compile")
        kind = ctx.kind
        index = ctx.request.device
        early, ctx.early_device = ctx.early_device, None
        if early is not None and early.fits(ctx.request):
            ctx.backend = early.backend
            return self._opened(ctx, early.index)
        if early is not None:
            early.backend.close()
        if index < 0:
            try:
                index = device_target(kind, ctx.request.device_choice or None).index
            except NoDeviceError as error:
                ctx.send(GraderError(str(error), failure=FailureKind.NO_DEVICE))
                return False
        ctx.backend = kind.open(index)
        return self._opened(ctx, index)

    @staticmethod
    def _opened(ctx: Context, index: int) -> bool:
        assert ctx.backend is not None
        info = ctx.backend.info
        if info.kind == "cpu":  # the kernel runs in this process's own memory: cap it
            limit_memory(ctx.request.memory_limit)
        ctx.send(DeviceOpened(info.name, info.kind, info.vendor, info.platform, dict(info.limits),
                              device_id=ctx.backend.stable_id(index)))
        return True
