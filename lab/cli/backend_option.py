"""The command line's backends: `--backend WORD` of the commands that take one, and a kernel
FILE's suffix. The word or the suffix becomes the backend's row here, at the command line's edge
(grader.backends.registry); inward, the row is passed."""

from __future__ import annotations

from pathlib import Path

from grader.backends import registry
from grader.backends.registry import BackendKind
from lab.cli.typer_app import fail

AUTO = "auto"


def backend_named(word: str) -> BackendKind | None:
    """The row `word` names (--backend's word: auto or a backend's name, as typed or as a cluster
    run's run.json keeps it); None for auto. Raises ValueError for any other word."""
    if word == AUTO:
        return None
    kind = registry.find(word)
    if kind is None:
        raise ValueError(word)
    return kind


def backend_choice(word: str) -> BackendKind | None:
    """The row `--backend WORD` names; None for auto. Fails (a usage error, exit 2) naming the
    known backends where WORD is none of them."""
    try:
        return backend_named(word)
    except ValueError:
        fail(f"--backend must be auto or one of {', '.join(registry.names())}, not {word!r}")


def batch_backend_choice(word: str) -> BackendKind | None:
    """`lab batch`'s --backend (auto or a backend's name): its row, None for auto. Fails (exit 2)
    for any other word."""
    try:
        return backend_named(word)
    except ValueError:
        fail(f"--backend must be one of auto, {', '.join(registry.names())}, not {word!r}")


def file_backend(path: Path) -> BackendKind | None:
    """The backend of a kernel FILE given on the command line: its suffix's row (any letter
    case); None where the suffix is no backend's."""
    return registry.by_suffix(path.suffix)


def pick_backend(path: Path, own: BackendKind | None, backend: str) -> BackendKind:
    """The backend that grades `path`: a .cu or .cl file picks its own (`own`: file_backend's
    row); --backend (`backend`, its word) may only agree with it. Fails (exit 2) otherwise. The
    device itself is chosen by the grading worker (it starts the GPU library anyway)."""
    asked = backend_choice(backend)
    if own is None:
        fail(f"{path}: a submission is a {registry.suffix_list()} file")
    if asked is not None and own != asked:
        fail(f"{path.name} is {own.language} source: it cannot run on the {asked.name} backend")
    return own
