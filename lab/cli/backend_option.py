"""`--backend WORD` of the commands that take one: the word becomes the backend's row here, at
the command line's edge (grader.backends.registry); inward, the row is passed."""

from __future__ import annotations

from grader.backends import registry
from grader.backends.registry import BackendKind
from lab.cli.app import fail

AUTO = "auto"


def backend_choice(word: str) -> BackendKind | None:
    """The row `--backend WORD` names; None for auto. Fails (a usage error, exit 2) naming the
    known backends where WORD is none of them."""
    if word == AUTO:
        return None
    kind = registry.find(word)
    if kind is None:
        fail(f"--backend must be auto or one of {', '.join(registry.names())}, not {word!r}")
    return kind
