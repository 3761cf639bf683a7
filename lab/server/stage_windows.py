"""When each stage takes submissions: `lab serve --schedule FILE`, a TOML file of windows.

    [transpose_naive]
    opens = 2026-11-01T00:00:00+01:00
    closes = 2026-12-01T23:59:00+01:00

Either end may be left out (open from the start, open to the end); a stage the file does not
name is always open. Times carry their zone (TOML's offset date-times). A student's upload
outside its stage's window is refused with the window's end it missed; an instructor's never is.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


class ScheduleError(ValueError):
    """The schedule file cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class StageWindow:
    opens: datetime | None = None
    closes: datetime | None = None

    def refusal(self, stage: str, moment: datetime) -> str | None:
        """Why a submission for `stage` at `moment` is refused, or None where the stage is open."""
        if self.opens is not None and moment < self.opens:
            return f"{stage} opens for submissions at {self.opens.isoformat()}"
        if self.closes is not None and moment >= self.closes:
            return f"{stage} closed for submissions at {self.closes.isoformat()}"
        return None


def _moment(path: Path, stage: str, key: str, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ScheduleError(f"{path}: [{stage}] {key}: give a date and time with its zone, "
                            "e.g. 2026-12-01T23:59:00+01:00")
    return value


def load_schedule(path: Path, stages: Sequence[str]) -> Mapping[str, StageWindow]:
    """The windows `path` gives, by stage. Raises ScheduleError."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScheduleError(f"{path}: cannot be read ({error.strerror or error})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ScheduleError(f"{path}: not a TOML file ({error})") from None
    windows = {}
    for stage, table in data.items():
        if stage not in stages:
            raise ScheduleError(f"{path}: there is no stage {stage!r}")
        if not isinstance(table, dict) or set(table) - {"opens", "closes"}:
            raise ScheduleError(f"{path}: [{stage}] holds only opens and closes")
        window = StageWindow(_moment(path, stage, "opens", table.get("opens")),
                             _moment(path, stage, "closes", table.get("closes")))
        if window.opens and window.closes and window.closes <= window.opens:
            raise ScheduleError(f"{path}: [{stage}] closes before it opens")
        windows[stage] = window
    return windows
