"""The header of an adversarial kernel file: its leading `// key: value` lines (verdict, stage,
counters, ...), read up to the first line that is not one."""

from __future__ import annotations

import re
from pathlib import Path

HEADER = re.compile(r"^//\s*(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")


def header_fields(path: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = HEADER.match(line)
        if match is None:
            break
        fields[match.group("key")] = match.group("value")
    return fields
