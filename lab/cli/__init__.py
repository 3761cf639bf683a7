"""The `lab` command line: one module per command, each registering its commands on one typer
app (lab.cli.typer_app).

`lab.cli.app` and `lab.cli.main` are that app with every command registered. The `lab` command
(lab.launch) registers only the module of the command its command line names, where it names
one: a student's `lab submit` then does not import what `lab grade`, `lab batch` or `lab serve`
need (most of the command's start)."""

from __future__ import annotations

import importlib
from typing import Any

# Every command's module. `lab --help` lists the commands in this order, in the panels of
# lab.cli.typer_app (students, instructors, the course server), each panel where its first
# command is registered.
MODULES = ("course", "grade", "devices", "occupancy", "profile", "submit",
           "batch", "gradescope", "release", "serve", "config")

# The module that registers each command (tests/cli/test_cli.py checks it against the app).
COMMAND_MODULES = {
    "list": "course", "show": "course", "init": "course", "grade": "grade", "devices": "devices",
    "occupancy": "occupancy", "profile": "profile", "login": "submit", "submit": "submit",
    "history": "submit", "batch": "batch", "gradescope": "gradescope", "release": "release",
    "serve": "serve", "tokens": "serve", "export-grades": "serve", "work": "serve", "config": "config",
}


def register(command: str | None = None) -> None:
    """Register the commands of `command`'s module where `command` names one; every module's
    otherwise (no command, an option such as --help, a misspelt name: typer then lists them all)."""
    names = (COMMAND_MODULES[command],) if command in COMMAND_MODULES else MODULES
    for name in names:
        importlib.import_module(f"lab.cli.{name}")


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        register()
        from lab.cli import typer_app

        return getattr(typer_app, name)
    raise AttributeError(f"module 'lab.cli' has no attribute {name!r}")


__all__ = ["COMMAND_MODULES", "MODULES", "app", "main", "register"]
