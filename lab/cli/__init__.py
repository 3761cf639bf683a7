"""The `lab` command line: one module per command, all registered on one typer app."""

from lab.cli.app import app, main

# Each import registers its commands on `app`.
from lab.cli import course, devices, grade, occupancy  # noqa: E402,F401
from lab.cli import batch  # noqa: E402,F401

__all__ = ["app", "main"]
