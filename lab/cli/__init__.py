"""The `lab` command line: one module per command, all registered on one typer app."""

# Each import registers its commands on `app`.
from lab.cli import (  # noqa: E402,F401
    batch,  # noqa: E402,F401
    course,
    devices,
    grade,
    occupancy,
)
from lab.cli.app import app, main

__all__ = ["app", "main"]
