"""benchmarks/gpu_clocks.py: nvidia-smi's samples read back and cut into each grading's window
(a stand-in nvidia-smi on PATH; the real one runs on the lent GPU)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import time
from pathlib import Path

spec = importlib.util.spec_from_file_location("gpu_clocks", Path(__file__).parents[2] / "benchmarks" / "gpu_clocks.py")
gpu_clocks = importlib.util.module_from_spec(spec)
sys.modules["gpu_clocks"] = gpu_clocks  # its dataclasses look their module up there
spec.loader.exec_module(gpu_clocks)


def test_a_line_of_nvidia_smi_is_read():
    sample = gpu_clocks.parse_line("2026/11/25 04:56:41.123, 1980, 2619, 312.45, 41")
    assert sample.sm_mhz == 1980 and sample.mem_mhz == 2619 and sample.power_w == 312.45 and sample.temperature_c == 41
    assert gpu_clocks.parse_line("2026/11/25 04:56:41.123, [N/A], 2619, [N/A], 41").sm_mhz is None
    assert gpu_clocks.parse_line("timestamp, clocks.sm [MHz], ...") is None
    assert gpu_clocks.parse_line("") is None


def test_describe_gives_the_range_and_the_median():
    samples = [gpu_clocks.Sample(float(t), mhz, 2619.0, 300.0 + t, 40.0) for t, mhz in enumerate([1980, 1755, 1980])]
    assert gpu_clocks.describe(samples) == "SM 1755-1980 MHz (median 1980, 3 samples), memory 2619 MHz, 302 W max, 40 C"
    assert gpu_clocks.describe([]) == "no clock samples"


def test_the_sampler_reads_a_stand_in_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nwhile true; do date '+%Y/%m/%d %H:%M:%S.%N, 1980, 2619, 250.0, 40' | "
                    "sed 's/\\.\\([0-9]\\{6\\}\\)[0-9]*,/.\\1,/'; sleep 0.05; done\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with gpu_clocks.ClockSampler(period_ms=50) as clocks:
        start = time.time()
        time.sleep(0.4)
        end = time.time()
    assert clocks.available
    inside = clocks.between(start, end)
    assert inside and all(s.sm_mhz == 1980 for s in inside)
    assert len(clocks.samples()) >= len(inside)


def test_without_nvidia_smi_nothing_is_sampled(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with gpu_clocks.ClockSampler() as clocks:
        pass
    assert not clocks.available and clocks.samples() == []
