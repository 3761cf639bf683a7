"""Open the device (the one the parent chose, or the best match of the backend's own), and say
what it is."""

from __future__ import annotations

from grader.device_identity import stable_id
from grader.results import DeviceOpened, FailureKind, GraderError
from grader.steps.context import Context, Step
from lab.backends import registry
from lab.backends.discovery import Discovery, NoDeviceError, choose


def limit_memory(nbytes: int | None) -> None:
    if nbytes:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


class ChooseDevice(Step):
    """Which device, and its kind, before it is opened: the host's work that needs the kind
    (grader.steps.host_inputs: the benchmark's case is a GPU's or a CPU's) then starts while
    the device opens (NVIDIA's OpenCL context took 0.5-0.9 s of the H100's startup). Where the
    parent chose the index and the probe does not list it, the kind waits for the open."""

    def run(self, ctx: Context) -> bool:
        ctx.phase("startup", "compile")
        kind = registry.by_name(ctx.request.backend)
        index = ctx.request.device
        found, problem = kind.probe()
        if index >= 0:
            ctx.target = next((t for t in found if t.index == index), None)
        else:
            try:
                ctx.target = choose(Discovery(found, {kind.name: problem} if problem else {}), kind.name,
                                    ctx.request.device_choice or None)
            except NoDeviceError as error:
                ctx.send(GraderError(str(error), failure=FailureKind.NO_DEVICE))
                return False
        if ctx.target is not None and ctx.target.kind == "cpu":  # before any thread allocates
            limit_memory(ctx.request.memory_limit)
        return True


class OpenDevice(Step):
    def run(self, ctx: Context) -> bool:
        index = ctx.target.index if ctx.target is not None else ctx.request.device
        ctx.backend = registry.by_name(ctx.request.backend).open(index)
        info = ctx.backend.info
        if info.kind == "cpu" and (ctx.target is None or ctx.target.kind != "cpu"):
            limit_memory(ctx.request.memory_limit)  # the kernel runs in this process's own memory: cap it
        ctx.send(DeviceOpened(info.name, info.kind, info.vendor, info.platform, dict(info.limits),
                              device_id=stable_id(ctx.backend, index)))
        return True
