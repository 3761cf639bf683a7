"""What one Gradescope assignment grades: lab-autograder.json in the zip, and the course GPU
server that grades its speed where the course names one (its token is a file of its own,
paths.SERVER_TOKEN_NAME, never in this JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
DEFAULT_SERVER_WAIT_S = 120.0  # how long an upload waits for the course GPU server's grading


class ConfigError(ValueError):
    """lab-autograder.json is missing or not what `lab gradescope` writes; the message says why."""


@dataclass(frozen=True)
class AutograderConfig:
    stages: tuple[str, ...]  # the stages this assignment grades, in course order
    lab_version: str  # the lab that built the zip
    grader_version: str
    server_url: str = ""  # the course GPU server (lab serve) that grades the speed; "": none
    server_wait_s: float = DEFAULT_SERVER_WAIT_S  # at most this long per upload, for every stage together

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
    server_url = data.get("server_url", "")
    wait = data.get("server_wait_s", DEFAULT_SERVER_WAIT_S)
    if not isinstance(server_url, str):
        raise ConfigError(f"{path}: 'server_url' must be the course server's address")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait > 0:
        raise ConfigError(f"{path}: 'server_wait_s' must be a positive number of seconds")
    return AutograderConfig(tuple(stages), str(data.get("lab_version", "")), str(data.get("grader_version", "")),
                            server_url, float(wait))
