"""Nsight Compute's raw page as CSV (`ncu --csv --page raw --print-units base`): one row per
profiled launch, one column per metric.

The format, as NVIDIA's "Nsight Compute CLI" manual describes the raw page and as ncu 2023-2025
print it: a header row naming the launch's columns ("ID", "Process ID", "Process Name", "Host
Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", then one
column per metric, named as asked), a row of units (its launch columns empty), then one row
per launch, every field quoted; numbers may carry thousands separators ("16,382,701") and a
metric with no value reads "n/a". The tool's own lines start with "==" (==PROF==, ==WARNING==,
==ERROR==) and may come before or after the table. ID counts profiled launches from 0 in
launch order. tests/counters/fixtures/ holds examples written to this description; the first
GPU run of benchmarks/counters_on_gpu.py checks it against a real ncu.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

LAUNCH_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                  "Block Size", "Grid Size", "Device", "CC")


class RawCsvError(ValueError):
    """The text holds no raw-page table, or one that cannot be read."""


@dataclass(frozen=True)
class RawRow:
    id: int
    kernel: str  # "Kernel Name": the function's name (extern "C": as written)
    values: dict[str, float | None]
    units: dict[str, str]


def number(text: str) -> float | None:
    """A metric's value: thousands separators dropped; n/a, empty or text -> None."""
    cleaned = text.strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if not cleaned or cleaned.lower() in ("n/a", "na", "nan", "-"):
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def parse_raw(text: str) -> list[RawRow]:
    """Every launch of the raw page in `text` (ncu's log: its own lines are skipped)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("==")]
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith('"ID"')), None)
    if start is None:
        raise RawCsvError("no table in ncu's output (no header row starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = [h.strip() for h in rows[0]]
    for needed in ("ID", "Kernel Name"):
        if needed not in header:
            raise RawCsvError(f"ncu's table has no {needed!r} column")
    id_at, name_at = header.index("ID"), header.index("Kernel Name")
    metric_at = [(i, h) for i, h in enumerate(header) if h not in LAUNCH_COLUMNS and h]
    units: dict[str, str] = {}
    found: list[RawRow] = []
    for row in rows[1:]:
        if len(row) < len(header):
            if not any(cell.strip() for cell in row):
                continue
            raise RawCsvError(f"a row of ncu's table has {len(row)} fields, the header {len(header)}")
        if not row[id_at].strip():  # the units row
            units = {h: row[i].strip() for i, h in metric_at}
            continue
        try:
            launch_id = int(row[id_at].strip().replace(",", ""))
        except ValueError as error:
            raise RawCsvError(f"a launch ID of ncu's table is not a number: {row[id_at][:40]!r}") from error
        found.append(RawRow(launch_id, row[name_at].strip(), {h: number(row[i]) for i, h in metric_at}, units))
    return sorted(found, key=lambda r: r.id)
