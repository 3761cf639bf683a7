"""Hardware counters read in the grading worker's own process and CUDA context, through CUPTI's
Range Profiler (cupti_range_profiler.h) and Profiler Host API (cupti_profiler_host.h), CUDA 12.6
and later, bound with ctypes: no second process, no ncu.

One `RangeProfiler` per worker: it enables range profiling on the worker's context, builds the
configuration image for the metrics (the names ncu uses, e.g.
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum) and measures one kernel launch at a time
(`start` before the launch, `stop` after it: an automatic range around the launch, kernel replay
where the metrics need several passes, CUPTI saving and restoring the memory the kernel writes).
Values are the metrics' GPU values in base units, as ncu's `--print-units base` prints them.

Every failure is a `CuptiUnavailable` with a model.Unavailable reason and a short detail (no
library, a driver that keeps the counters to administrators, a GPU CUPTI does not profile, an
unknown metric, a call that failed): the grading then reads the counters the ncu way
(grader.counters.runner), never fails for it.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader import settings
from grader.counters.model import Unavailable

LIBRARY_ENV = settings.CUPTI.name  # a libcupti.so to use; "off": never read counters in the worker

_size_t = ctypes.c_size_t
_vp = ctypes.c_void_p


class CuptiUnavailable(Exception):
    """Why CUPTI read no counters here: a reason and a short detail (a CUPTI result's name)."""

    def __init__(self, reason: Unavailable, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _struct(name: str, fields: list[tuple[str, Any]]) -> type[ctypes.Structure]:
    """A parameter struct of CUPTI's profiling API: structSize and pPriv, then `fields`."""
    return type(name, (ctypes.Structure,), {"_fields_": [("structSize", _size_t), ("pPriv", _vp), *fields]})


def _params(cls: type[ctypes.Structure], **values: Any) -> ctypes.Structure:
    """An instance with structSize as CUPTI_PROFILER_STRUCT_SIZE gives it: up to the end of the
    last field (not the padded sizeof)."""
    last = cls._fields_[-1]
    descriptor = getattr(cls, last[0])
    params = cls(**values)
    params.structSize = descriptor.offset + descriptor.size
    return params


_NAMES = ctypes.POINTER(ctypes.c_char_p)

ProfilerInitialize = _struct("ProfilerInitialize", [])
DeviceGetChipName = _struct("DeviceGetChipName", [("deviceIndex", _size_t), ("pChipName", ctypes.c_char_p)])
GetCounterAvailability = _struct("GetCounterAvailability", [
    ("ctx", _vp), ("counterAvailabilityImageSize", _size_t), ("pCounterAvailabilityImage", _vp)])
HostInitialize = _struct("HostInitialize", [
    ("profilerType", ctypes.c_int), ("pChipName", ctypes.c_char_p), ("pCounterAvailabilityImage", _vp),
    ("pHostObject", _vp)])
HostDeinitialize = _struct("HostDeinitialize", [("pHostObject", _vp)])
HostConfigAddMetrics = _struct("HostConfigAddMetrics", [
    ("pHostObject", _vp), ("ppMetricNames", _NAMES), ("numMetrics", _size_t)])
HostGetConfigImageSize = _struct("HostGetConfigImageSize", [("pHostObject", _vp), ("configImageSize", _size_t)])
HostGetConfigImage = _struct("HostGetConfigImage", [
    ("pHostObject", _vp), ("configImageSize", _size_t), ("pConfigImage", _vp)])
HostGetNumOfPasses = _struct("HostGetNumOfPasses", [
    ("configImageSize", _size_t), ("pConfigImage", _vp), ("numOfPasses", _size_t)])
HostEvaluate = _struct("HostEvaluate", [
    ("pHostObject", _vp), ("pCounterDataImage", _vp), ("counterDataImageSize", _size_t), ("rangeIndex", _size_t),
    ("ppMetricNames", _NAMES), ("numMetrics", _size_t), ("pMetricValues", ctypes.POINTER(ctypes.c_double))])
RangeEnable = _struct("RangeEnable", [("ctx", _vp), ("pRangeProfilerObject", _vp)])
RangeObject = _struct("RangeObject", [("pRangeProfilerObject", _vp)])  # Disable, Start
RangeStop = _struct("RangeStop", [
    ("pRangeProfilerObject", _vp), ("passIndex", _size_t), ("targetNestingLevel", _size_t),
    ("isAllPassSubmitted", ctypes.c_uint8)])
RangeDecode = _struct("RangeDecode", [("pRangeProfilerObject", _vp), ("numOfRangeDropped", _size_t)])
RangeCounterDataSize = _struct("RangeCounterDataSize", [
    ("pRangeProfilerObject", _vp), ("pMetricNames", _NAMES), ("numMetrics", _size_t), ("maxNumOfRanges", _size_t),
    ("maxNumRangeTreeNodes", ctypes.c_uint32), ("counterDataSize", _size_t)])
RangeCounterDataInit = _struct("RangeCounterDataInit", [
    ("pRangeProfilerObject", _vp), ("counterDataSize", _size_t), ("pCounterData", _vp)])
RangeSetConfig = _struct("RangeSetConfig", [
    ("pRangeProfilerObject", _vp), ("configSize", _size_t), ("pConfig", _vp), ("counterDataImageSize", _size_t),
    ("pCounterDataImage", _vp), ("range", ctypes.c_int), ("replayMode", ctypes.c_int),
    ("maxRangesPerPass", _size_t), ("numNestingLevels", ctypes.c_uint16), ("minNestingLevel", ctypes.c_uint16),
    ("passIndex", _size_t), ("targetNestingLevel", ctypes.c_uint16)])
RangeCounterDataInfo = _struct("RangeCounterDataInfo", [
    ("pCounterDataImage", _vp), ("counterDataImageSize", _size_t), ("numTotalRanges", _size_t)])

RANGE_PROFILER = 0  # CUpti_ProfilerType
AUTO_RANGE = 1  # CUpti_ProfilerRange: a range around each kernel launch
KERNEL_REPLAY = 2  # CUpti_ProfilerReplayMode: CUPTI replays the kernel for each further pass


def _toolkit_roots() -> list[Path]:
    roots = [str(path) for path in map(settings.value, (settings.CUDA_HOME, settings.CUDA_PATH)) if path]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/opt/cuda"]
    seen: list[Path] = []
    for root in roots:
        if root and Path(root).is_dir() and Path(root) not in seen:
            seen.append(Path(root))
    return seen


def library_path() -> str | None:
    """The libcupti.so to load (LAB_CUPTI, else the CUDA toolkit's: extras/CUPTI/lib64 or
    targets/*/lib), found without loading anything; None where there is none (or LAB_CUPTI=off)."""
    chosen = settings.value(settings.CUPTI)
    if chosen.off:
        return None
    if chosen.path:
        return chosen.path if os.path.isfile(chosen.path) else None
    for root in _toolkit_roots():
        for folder in (root / "extras" / "CUPTI" / "lib64", *sorted(root.glob("targets/*/lib")), root / "lib64"):
            found = sorted(glob.glob(str(folder / "libcupti.so*")), key=len)
            if found:
                return found[0]
    return None


RTLD_NOW = 2


def _helpers(folder: str) -> list[str]:
    """NVIDIA's perf libraries beside libcupti, which it loads at its first profiling call."""
    found = []
    for helper in ("libnvperf_host.so", "libnvperf_target.so"):
        names = sorted(glob.glob(os.path.join(folder, helper + "*")), key=len)
        if names:
            found.append(names[0])
    return found


class _Library:
    """libcupti, loaded once per process (with the NVIDIA perf host library beside it first)."""

    handle: ctypes.CDLL | None = None
    lock = threading.Lock()

    @classmethod
    def get(cls) -> ctypes.CDLL:
        with cls.lock:
            return cls._get()

    @classmethod
    def _get(cls) -> ctypes.CDLL:
        if cls.handle is None:
            path = library_path()
            if path is None:
                raise CuptiUnavailable(Unavailable.FAILED, "no libcupti (CUDA 12.6 or later) found")
            for helper in _helpers(os.path.dirname(path)):
                try:
                    ctypes.CDLL(helper, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass
            try:
                library = ctypes.CDLL(path)
                library.cuptiRangeProfilerEnable  # noqa: B018 - CUDA 12.6's Range Profiler, or refuse
                library.cuptiProfilerHostInitialize  # noqa: B018
            except (OSError, AttributeError) as error:
                raise CuptiUnavailable(Unavailable.FAILED, f"libcupti has no Range Profiler: {error}") from error
            cls.handle = library
        return cls.handle


_REASONS = {
    "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES": Unavailable.PERMISSION,
    "CUPTI_ERROR_INVALID_METRIC_NAME": Unavailable.UNKNOWN_METRIC,
    "CUPTI_ERROR_NOT_SUPPORTED": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_INVALID_DEVICE": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED": Unavailable.DEVICE_UNSUPPORTED,
    "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED": Unavailable.PROFILER_BUSY,
    "CUPTI_ERROR_HARDWARE_BUSY": Unavailable.PROFILER_BUSY,
    "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED": Unavailable.PROFILER_BUSY,
}


def _call(library: ctypes.CDLL, function: str, params: ctypes.Structure) -> None:
    """One CUPTI call; a result other than CUPTI_SUCCESS is a CuptiUnavailable."""
    code = getattr(library, function)(ctypes.byref(params))
    if code == 0:
        return
    text = ctypes.c_char_p()
    name = f"error {code}"
    try:
        if library.cuptiGetResultString(code, ctypes.byref(text)) == 0 and text.value:
            name = text.value.decode("ascii", "replace")
    except AttributeError:
        pass
    raise CuptiUnavailable(_REASONS.get(name, Unavailable.FAILED), f"CUPTI {function}: {name}")


def _device_of_current_context() -> int:
    """The CUDA device ordinal of the current context (cuCtxGetDevice), CUPTI's device index."""
    driver = ctypes.CDLL("libcuda.so.1")
    device = ctypes.c_int(-1)
    if driver.cuCtxGetDevice(ctypes.byref(device)) != 0:
        raise CuptiUnavailable(Unavailable.FAILED, "no current CUDA context")
    return device.value


class RangeProfiler:
    """Range profiling on one CUDA context, for one list of metrics: `start()` before a kernel
    launch, `stop()` after it returns that launch's values by metric. `close()` ends it (always
    call it: the context then runs unprofiled again)."""

    def __init__(self, context: int, metrics: Sequence[str]):
        self.lib = _Library.get()
        self.metrics = tuple(metrics)
        self._names = (ctypes.c_char_p * len(self.metrics))(*(m.encode("ascii") for m in self.metrics))
        self._host: Any = None
        self._object: Any = None
        self._open = False
        self.seconds: dict[str, float] = {}  # the set-up's steps' wall times (benchmarks read them)
        self._last = time.perf_counter()
        try:
            self._setup(context)
        except BaseException:
            self.close()
            raise

    def _lap(self, step: str) -> None:
        now = time.perf_counter()
        self.seconds[step] = now - self._last
        self._last = now

    def _setup(self, context: int) -> None:
        lib = self.lib
        self._lap("library")
        _call(lib, "cuptiProfilerInitialize", _params(ProfilerInitialize))
        self._lap("initialize")
        chip = _params(DeviceGetChipName, deviceIndex=_device_of_current_context())
        _call(lib, "cuptiDeviceGetChipName", chip)
        chip_name = chip.pChipName
        self._lap("chip")
        # A chip CUPTI knew at its release needs no counter availability image (querying it
        # takes the device a tenth of a second): asked for only where the host object wants it.
        host = _params(HostInitialize, profilerType=RANGE_PROFILER, pChipName=chip_name)
        try:
            _call(lib, "cuptiProfilerHostInitialize", host)
        except CuptiUnavailable:
            available = _params(GetCounterAvailability, ctx=context)
            _call(lib, "cuptiProfilerGetCounterAvailability", available)
            self._availability = ctypes.create_string_buffer(available.counterAvailabilityImageSize)
            available = _params(GetCounterAvailability, ctx=context,
                                counterAvailabilityImageSize=len(self._availability),
                                pCounterAvailabilityImage=ctypes.addressof(self._availability))
            _call(lib, "cuptiProfilerGetCounterAvailability", available)
            host = _params(HostInitialize, profilerType=RANGE_PROFILER, pChipName=chip_name,
                           pCounterAvailabilityImage=ctypes.addressof(self._availability))
            _call(lib, "cuptiProfilerHostInitialize", host)
            self._lap("counter availability")
        self._host = host.pHostObject
        _call(lib, "cuptiProfilerHostConfigAddMetrics", _params(
            HostConfigAddMetrics, pHostObject=self._host, ppMetricNames=self._names, numMetrics=len(self.metrics)))
        size = _params(HostGetConfigImageSize, pHostObject=self._host)
        _call(lib, "cuptiProfilerHostGetConfigImageSize", size)
        self._config = ctypes.create_string_buffer(size.configImageSize)
        _call(lib, "cuptiProfilerHostGetConfigImage", _params(
            HostGetConfigImage, pHostObject=self._host, configImageSize=len(self._config),
            pConfigImage=ctypes.addressof(self._config)))
        passes = _params(HostGetNumOfPasses, configImageSize=len(self._config),
                         pConfigImage=ctypes.addressof(self._config))
        _call(lib, "cuptiProfilerHostGetNumOfPasses", passes)
        self.passes = int(passes.numOfPasses)
        self._lap("host object and configuration")

        enable = _params(RangeEnable, ctx=context)
        _call(lib, "cuptiRangeProfilerEnable", enable)
        self._object = enable.pRangeProfilerObject
        data = _params(RangeCounterDataSize, pRangeProfilerObject=self._object, pMetricNames=self._names,
                       numMetrics=len(self.metrics), maxNumOfRanges=1, maxNumRangeTreeNodes=1)
        _call(lib, "cuptiRangeProfilerGetCounterDataSize", data)
        self._data = ctypes.create_string_buffer(data.counterDataSize)
        self._lap("enable")

    def start(self) -> None:
        """Profile the next kernel launch (a fresh counter data image, one automatic range)."""
        lib = self.lib
        _call(lib, "cuptiRangeProfilerCounterDataImageInitialize", _params(
            RangeCounterDataInit, pRangeProfilerObject=self._object, counterDataSize=len(self._data),
            pCounterData=ctypes.addressof(self._data)))
        _call(lib, "cuptiRangeProfilerSetConfig", _params(
            RangeSetConfig, pRangeProfilerObject=self._object, configSize=len(self._config),
            pConfig=ctypes.addressof(self._config), counterDataImageSize=len(self._data),
            pCounterDataImage=ctypes.addressof(self._data), range=AUTO_RANGE, replayMode=KERNEL_REPLAY,
            maxRangesPerPass=1, numNestingLevels=1, minNestingLevel=1, passIndex=0, targetNestingLevel=1))
        _call(lib, "cuptiRangeProfilerStart", _params(RangeObject, pRangeProfilerObject=self._object))
        self._open = True

    def stop(self) -> dict[str, float | None]:
        """End the range started by `start` and return the launch's values by metric (None: a
        value CUPTI gave as not a number)."""
        lib = self.lib
        stop = _params(RangeStop, pRangeProfilerObject=self._object)
        self._open = False
        _call(lib, "cuptiRangeProfilerStop", stop)
        if not stop.isAllPassSubmitted:
            raise CuptiUnavailable(Unavailable.FAILED, f"CUPTI kernel replay left passes unsubmitted "
                                                       f"({self.passes} needed)")
        _call(lib, "cuptiRangeProfilerDecodeData", _params(RangeDecode, pRangeProfilerObject=self._object))
        info = _params(RangeCounterDataInfo, pCounterDataImage=ctypes.addressof(self._data),
                       counterDataImageSize=len(self._data))
        _call(lib, "cuptiRangeProfilerGetCounterDataInfo", info)
        if info.numTotalRanges != 1:
            raise CuptiUnavailable(Unavailable.UNREADABLE, f"CUPTI recorded {info.numTotalRanges} ranges for one "
                                                           f"launch")
        values = (ctypes.c_double * len(self.metrics))()
        _call(lib, "cuptiProfilerHostEvaluateToGpuValues", _params(
            HostEvaluate, pHostObject=self._host, pCounterDataImage=ctypes.addressof(self._data),
            counterDataImageSize=len(self._data), rangeIndex=0, ppMetricNames=self._names,
            numMetrics=len(self.metrics), pMetricValues=values))
        return {m: (v if v == v else None) for m, v in zip(self.metrics, values)}

    def close(self) -> None:
        """Disable range profiling on the context and free the host object; never raises."""
        lib = self.lib
        for function, params in (
                ("cuptiRangeProfilerStop", _params(RangeStop, pRangeProfilerObject=self._object) if self._open else None),
                ("cuptiRangeProfilerDisable",
                 _params(RangeObject, pRangeProfilerObject=self._object) if self._object else None),
                ("cuptiProfilerHostDeinitialize",
                 _params(HostDeinitialize, pHostObject=self._host) if self._host else None)):
            if params is not None:
                try:
                    getattr(lib, function)(ctypes.byref(params))
                except Exception:  # noqa: BLE001 - closing: nothing more to do
                    pass
        self._open, self._object, self._host = False, None, None


def preload() -> None:
    """Load libcupti and NVIDIA's perf host library (a tenth of a second or more) in a thread of
    their own, started as the benchmark starts (grader.plugins.counters_steps.LoadProfiler): after the
    compile, whose own library loads would wait on the dynamic loader's lock, and before the
    counters are read. Only the libraries: nothing that touches the CUDA driver."""

    def load() -> None:
        path = library_path()
        if path is None:
            return  # RangeProfiler says why
        try:
            # The C library's dlopen through ctypes, which lets go of the interpreter's lock while
            # the libraries load (ctypes.CDLL's own dlopen holds it, stopping the worker's thread):
            # _Library then finds them loaded.
            libc = ctypes.CDLL(None)
            libc.dlopen.restype = ctypes.c_void_p
            libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
            for name in (*_helpers(os.path.dirname(path)), path):
                libc.dlopen(name.encode(), RTLD_NOW | ctypes.RTLD_GLOBAL)
            _Library.get()
        except (CuptiUnavailable, OSError, AttributeError):
            pass  # RangeProfiler says why

    threading.Thread(target=load, name="cupti-preload", daemon=True).start()
