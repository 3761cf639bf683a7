"""The `lab` command line: one module per command, all registered on one typer app."""

from lab.cli import config  # noqa: F401, I001 - `lab config`: the environment variables read, for everyone
# Each import registers its commands on `app`.
from lab.cli import batch, course, devices, grade, gradescope, occupancy, profile, release, serve, submit  # noqa: F401
from lab.cli.app import app, main

__all__ = ["app", "main"]
