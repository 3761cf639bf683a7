"""A student's saved server and token (`lab login`), in the user's config folder:
$XDG_CONFIG_HOME/gpu-lab/server.json (~/.config/gpu-lab where XDG_CONFIG_HOME is unset),
readable by the user alone."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from grader import settings


class CredentialsError(ValueError):
    """No saved login, or one that cannot be read; the message says what to do."""


@dataclass(frozen=True)
class Credentials:
    url: str  # the server's base URL, without a trailing /
    token: str


def config_file() -> Path:
    """Where `lab login` keeps the server's address and token: under XDG_CONFIG_HOME."""
    return settings.value(settings.XDG_CONFIG_HOME) / "gpu-lab" / "server.json"


def save(credentials: Credentials) -> Path:
    """Write the login where load() reads it (mode 0600, replaced whole); its path."""
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"url": credentials.url, "token": credentials.token}, handle)
    os.replace(tmp, path)
    return path


def load() -> Credentials:
    path = config_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Credentials(str(data["url"]), str(data["token"]))
    except FileNotFoundError:
        raise CredentialsError("not signed in to a course server: run lab login URL --token TOKEN first") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CredentialsError(f"{path}: cannot be read ({error}): run lab login URL --token TOKEN again") from None
