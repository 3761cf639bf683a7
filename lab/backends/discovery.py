"""What devices this machine can grade on, and why the others are not usable."""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.backends.nvcc import nvcc_path


@dataclass(frozen=True)
class Target:
    """One device of one backend: what `--backend` and `--device` pick."""

    backend: str  # "cuda" | "opencl"
    index: int  # the backend's device index
    name: str
    kind: str  # "gpu" | "cpu" | "other"
    platform: str = ""

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.index}"


@dataclass(frozen=True)
class Discovery:
    targets: list[Target] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)  # backend -> why it is not usable

    def of(self, backend: str) -> list[Target]:
        return [t for t in self.targets if t.backend == backend]


def _cuda() -> tuple[list[Target], str | None]:
    try:
        import pycuda.driver as drv
    except ImportError:
        return [], "PyCUDA is not installed (pip install -e '.[cuda]')"
    except OSError as error:  # libcuda.so missing: no NVIDIA driver
        return [], f"no NVIDIA driver ({error})"
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as error:  # noqa: BLE001 - any driver failure is a reason to show
        return [], f"the CUDA driver did not start: {error}"
    if count == 0:
        return [], "the NVIDIA driver sees no GPU"
    if nvcc_path() is None:
        return [], "nvcc (the CUDA compiler) is not on PATH"
    targets = [Target("cuda", i, drv.Device(i).name(), "gpu", "CUDA") for i in range(count)]
    return targets, None


def _opencl() -> tuple[list[Target], str | None]:
    try:
        from lab.backends.opencl import all_devices, device_kind
    except ImportError:
        return [], "PyOpenCL is not installed (pip install -e '.[opencl]', or '.[pocl]' with no GPU)"
    try:
        pairs = all_devices()
    except Exception as error:  # noqa: BLE001 - no ICD loader or no platform
        return [], f"no OpenCL platform ({error}); pip install -e '.[pocl]' adds a CPU one"
    if not pairs:
        return [], "no OpenCL device found; pip install -e '.[pocl]' adds a CPU one"
    targets = [
        Target("opencl", i, d.name.strip(), device_kind(d), p.name.strip())
        for i, (p, d) in enumerate(pairs)
    ]
    return targets, None


def discover(backends: tuple[str, ...] = ("cuda", "opencl")) -> Discovery:
    targets: list[Target] = []
    problems: dict[str, str] = {}
    for name, probe in (("cuda", _cuda), ("opencl", _opencl)):
        if name not in backends:
            continue
        found, problem = probe()
        targets.extend(found)
        if problem:
            problems[name] = problem
    return Discovery(targets, problems)


class NoDeviceError(LookupError):
    """No usable device matches what was asked for; the message says why."""


def choose(discovery: Discovery, backend: str = "auto", device: str | None = None) -> Target:
    """Pick a target. auto: a CUDA GPU, else an OpenCL GPU, else an OpenCL CPU device.

    `device` is an index within the backend, or a piece of the device's name.
    """
    if backend == "auto":
        ordered = (
            [t for t in discovery.of("cuda")]
            + [t for t in discovery.of("opencl") if t.kind == "gpu"]
            + [t for t in discovery.of("opencl") if t.kind != "gpu"]
        )
    else:
        ordered = discovery.of(backend)
    if device is not None:
        if device.isdigit():
            ordered = [t for t in ordered if t.index == int(device)]
        else:
            ordered = [t for t in ordered if device.lower() in t.name.lower()]
    if ordered:
        return ordered[0]
    wanted = "any backend" if backend == "auto" else backend
    why = "; ".join(f"{b}: {p}" for b, p in discovery.problems.items())
    if device is not None:
        raise NoDeviceError(f"no {wanted} device matches --device {device!r} (`lab devices` lists them)")
    raise NoDeviceError(f"no usable device for {wanted}" + (f" ({why})" if why else ""))
