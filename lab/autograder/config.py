"""What one Gradescope assignment grades: lab-autograder.json in the zip."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FORMAT = 1


class ConfigError(ValueError):
    """lab-autograder.json is missing or not what `lab gradescope` writes; the message says why."""


@dataclass(frozen=True)
class AutograderConfig:
    stages: tuple[str, ...]  # the stages this assignment grades, in course order
    lab_version: str  # the lab that built the zip
    grader_version: str

    def to_json(self) -> str:
        data: dict[str, Any] = {"format": FORMAT, **asdict(self)}
        data["stages"] = list(self.stages)
        return json.dumps(data, indent=2) + "\n"


def load_config(path: Path) -> AutograderConfig:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (the zip was not made by `lab gradescope`)") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot be read as JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a format-{FORMAT} lab-autograder.json; rebuild the zip with `lab gradescope`")
    stages = data.get("stages")
    if not isinstance(stages, list) or not stages or not all(isinstance(s, str) and s for s in stages):
        raise ConfigError(f"{path}: 'stages' must be a non-empty list of stage ids")
    return AutograderConfig(tuple(stages), str(data.get("lab_version", "")), str(data.get("grader_version", "")))
