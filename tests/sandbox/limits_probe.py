"""A probe run in the grading worker in place of a kernel (LAB_TEST_PROBE, tests only): the
limits the worker holds, and whether a file past its size limit can be written; or, with
`killed`, the worker ends by SIGKILL, as the OOM killer ends it (from outside its code)."""

from __future__ import annotations

import os
import resource
import signal
import tempfile
from typing import Any


def probe(args: dict[str, Any], send) -> dict[str, Any]:
    if args.get("killed"):
        os.kill(os.getpid(), signal.SIGKILL)
    found: dict[str, Any] = {"fsize": list(resource.getrlimit(resource.RLIMIT_FSIZE)),
                             "address_space": list(resource.getrlimit(resource.RLIMIT_AS))}
    with tempfile.TemporaryFile(buffering=0) as big:
        try:
            os.pwrite(big.fileno(), b"x", int(args["bytes"]))
            found["past_limit"] = "written"
        except OSError as error:
            found["past_limit"] = error.strerror or str(error)
    return found
