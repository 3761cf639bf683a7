"""The adversarial corpus's verdicts as one Markdown table: a row per case, a column per
device. Reads the JSON lines that `LAB_VERDICT_LOG=FILE pytest tests/adversarial` writes.

    python3 benchmarks/verdict_table.py FILE [FILE ...]
"""

from __future__ import annotations

import json
import re
import sys

_PATH = re.compile(r"(?:/[\w.-]+)+/([\w.-]+\.c[lu])")  # a kernel's absolute path: its name is enough


def main(paths: list[str]) -> int:
    verdicts: dict[str, dict[str, str]] = {}
    devices: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as log:
            for line in log:
                record = json.loads(line)
                if record["device"] not in devices:
                    devices.append(record["device"])
                message = _PATH.sub(r"\1", record["message"]).replace("|", "/")
                if len(message) > 80:
                    message = message[:77] + "..."
                verdicts.setdefault(record["case"], {})[record["device"]] = (
                    f"{record['check']} {record['check_status']}: {message}")
    print("| case | " + " | ".join(devices) + " |")
    print("|---|" + "---|" * len(devices))
    for case in sorted(verdicts):
        cells = [verdicts[case].get(d, "-") for d in devices]
        print(f"| {case} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
