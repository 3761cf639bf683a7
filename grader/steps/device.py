"""Open the device the parent chose, and say what it is."""

from __future__ import annotations

from grader.results import DeviceOpened
from grader.steps import Context, Step
from lab.backends import open_backend


class OpenDevice(Step):
    def run(self, ctx: Context) -> bool:
        ctx.phase("startup", "compile")
        ctx.backend = open_backend(ctx.request.backend, ctx.request.device)
        info = ctx.backend.info
        ctx.send(DeviceOpened(info.name, info.kind, info.vendor, info.platform, dict(info.limits)))
        return True
