"""The GPU's clocks, power and temperature while the benchmarks run: nvidia-smi samples them in a
process of its own (every `period_ms`), and each grading's window is read back afterwards. It
changes no setting of the GPU (it only queries), and it is not the grader's: the benchmark
scripts use it to say whether a slow grading ran at a lower clock.

    with ClockSampler() as clocks:          # no nvidia-smi: clocks.available is False
        start = time.time(); ...; end = time.time()
    print(describe(clocks.between(start, end)))
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

QUERY = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch (nvidia-smi's timestamp, local time)
    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temperature_c: float | None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def parse_line(line: str) -> Sample | None:
    """One line of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; None where it
    is not one."""
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != 5:
        return None
    try:
        at = datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except ValueError:
        return None
    return Sample(at, *(_number(field) for field in fields[1:]))


def describe(samples: list[Sample]) -> str:
    """The SM clock's range and median over `samples`, the memory clock, power and temperature."""
    sm = [s.sm_mhz for s in samples if s.sm_mhz is not None]
    if not sm:
        return "no clock samples"
    power = [s.power_w for s in samples if s.power_w is not None]
    temperature = [s.temperature_c for s in samples if s.temperature_c is not None]
    memory = sorted({s.mem_mhz for s in samples if s.mem_mhz is not None})
    return (f"SM {min(sm):.0f}-{max(sm):.0f} MHz (median {statistics.median(sm):.0f}, {len(sm)} samples), "
            f"memory {'/'.join(f'{m:.0f}' for m in memory) or '-'} MHz, "
            f"{max(power) if power else float('nan'):.0f} W max, {max(temperature) if temperature else float('nan'):.0f} C")


class ClockSampler:
    """nvidia-smi sampling GPU `index` every `period_ms` for as long as the `with` lasts."""

    def __init__(self, index: int = 0, period_ms: int = 100):
        self.index, self.period_ms = index, period_ms
        self.available = shutil.which("nvidia-smi") is not None
        self._folder: tempfile.TemporaryDirectory | None = None
        self._process: subprocess.Popen | None = None
        self._samples: list[Sample] = []

    def __enter__(self) -> ClockSampler:
        if self.available:
            self._folder = tempfile.TemporaryDirectory(prefix="lab-clocks-")
            log = open(Path(self._folder.name) / "clocks.csv", "w", encoding="utf-8")  # noqa: SIM115 - the child's
            self._process = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                 f"-lms={self.period_ms}", f"--id={self.index}"], stdout=log, stderr=subprocess.DEVNULL)
            log.close()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
        if self._folder is not None:
            text = (Path(self._folder.name) / "clocks.csv").read_text(encoding="utf-8", errors="replace")
            self._samples = [s for s in map(parse_line, text.splitlines()) if s is not None]
            self._folder.cleanup()

    def samples(self) -> list[Sample]:
        """Every sample read (once the `with` has ended)."""
        return list(self._samples)

    def between(self, start: float, end: float) -> list[Sample]:
        """The samples taken from `start` to `end` (seconds since the epoch: time.time())."""
        return [s for s in self._samples if start <= s.at <= end]
