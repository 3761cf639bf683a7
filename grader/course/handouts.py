"""Kernels the course handed out: a stage's skeleton, and every other stage's reference.

A submission that is one of them, unchanged apart from whitespace, comments and macros, has not done
the stage's work. On a CPU device, where speed is not graded, such a file (the skeleton is the
previous stage's correct kernel) would otherwise pass; on a GPU it would fail only as "too slow",
which hides that nothing was changed. This stage's own reference is not counted as a handout:
`is_own_reference` finds it, through grader.course.checks.normalised_source, also where its names were changed
(a students' copy of the course holds the reference's normalised digest in place of its source).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from grader.course.checks.normalised_source import DIGEST_SCHEME, normalised_digest, token_digest


@dataclass(frozen=True)
class Handout:
    """What the submission is a copy of."""

    stage: str  # the stage whose file it is
    what: str  # "skeleton" | "reference"

    def describe(self, graded_stage: str) -> str:
        if self.what == "skeleton":
            return f"the skeleton of {graded_stage} as handed out"
        return f"the reference kernel of {self.stage}"


@lru_cache(maxsize=1)
def _tokenizer_code() -> str:
    """A digest of the code that makes token_digest (this package's checks, and pcpp's version):
    another version of it keys other entries."""
    import hashlib

    import pcpp

    from grader.course.checks import normalised_source

    digest = hashlib.sha256(str(getattr(pcpp, "__version__", "")).encode())
    for path in sorted(Path(normalised_source.__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=512)
def _file_digest_of_tokens(path: str, mtime_ns: int, size: int) -> str:
    """A handed-out file's token_digest: kept in the trusted-kernel cache (grader.backends.kernel_cache),
    by the file's path, time and size and the tokenizer's code, so that a fresh `lab grade`
    does not tokenize every stage's reference again; the parent alone reads and writes it."""
    from grader.backends import kernel_cache

    key = kernel_cache.cache_key("handout-token-digest", path, mtime_ns, size, DIGEST_SCHEME, _tokenizer_code())
    kept = kernel_cache.load(key)
    if kept is not None and len(kept[0]) in (0, 64):
        return kept[0].decode("ascii")
    digest = token_digest(Path(path).read_text(encoding="utf-8"))
    kernel_cache.store(key, digest.encode("ascii"), {"handout": path})
    return digest


def _digest_of(path: Path) -> str | None:
    try:
        info = path.stat()
        return _file_digest_of_tokens(str(path), info.st_mtime_ns, info.st_size)
    except (OSError, UnicodeDecodeError):
        return None


def find_handout(source: str, suffix: str, stage: str, skeleton: Path,
                 references: dict[str, Path]) -> Handout | None:
    """`references`: each stage's reference file with `suffix`, by stage id (this stage's own
    is skipped). None when the submission is none of them (its tokens, as token_digest holds
    them, are none of theirs)."""
    mine = token_digest(source)
    if not mine:
        return None
    if _digest_of(skeleton) == mine:
        return Handout(stage, "skeleton")
    for other, path in references.items():
        if other != stage and _digest_of(path) == mine:
            return Handout(other, "reference")
    return None


@lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, fixed: tuple[str, ...],
                 defines: tuple[tuple[str, int | float], ...]) -> str:
    return normalised_digest(Path(path).read_text(encoding="utf-8"), fixed, dict(defines))


def reference_digest(reference: Path, shipped: dict[str, dict[str, str]] | None, stage: str,
                     suffix: str, fixed: tuple[str, ...] = (),
                     defines: tuple[tuple[str, int | float], ...] = ()) -> str | None:
    """The normalised digest of `stage`'s reference with `suffix` (`fixed`: the names the stage
    gives, `defines`: their values, grader.course.checks.normalised_source): of its source where
    present, else the one a students' copy ships (`shipped`: stage -> suffix -> digest); None
    where neither."""
    try:
        return _file_digest(str(reference), reference.stat().st_mtime_ns, fixed, defines)
    except (OSError, UnicodeDecodeError):
        pass
    return (shipped or {}).get(stage, {}).get(suffix)


def is_own_reference(source: str, reference: Path, shipped: dict[str, dict[str, str]] | None, stage: str,
                     suffix: str, fixed: tuple[str, ...] = (),
                     defines: tuple[tuple[str, int | float], ...] = ()) -> bool:
    """Whether `source` is `stage`'s reference, apart from whitespace, comments, macros and its
    own names."""
    expected = reference_digest(reference, shipped, stage, suffix, fixed, defines)
    return bool(expected) and normalised_digest(source, fixed, dict(defines)) == expected
