"""The `lab` command line: one module per command, all registered on one typer app."""

# Each import registers its commands on `app`; `lab --help` lists them in this order, in the
# panels of lab.cli.app (students, instructors, the course server), each panel where its first
# command is registered.
from lab.cli import course, grade, devices, occupancy, profile, submit  # noqa: F401, I001 - the students'
from lab.cli import batch, gradescope, release, serve, config  # noqa: F401, I001 - the instructors', the server's
from lab.cli.app import app, main

__all__ = ["app", "main"]
