"""Each OpenCL grading worker's own PoCL folder, emptied when the worker ends or is killed.

PoCL writes its temporary files at the top of its cache folder (POCL_CACHE_DIR, by default
~/.cache/pocl/kcache): `tempfile_*`, `tempdir_*`, clang's `*.tmp` outputs. A worker killed
at a time limit leaves them there for good, and a compiler bomb's preprocessor output is
gigabytes. So each worker gets POCL_CACHE_DIR = a folder of its own inside the shared cache,
where those temporaries land, and the parent deletes them when the worker has ended.

What is worth keeping is shared: PoCL keeps a compiled program in `<two letters>/
<hash>/` below its cache folder, the two letters from A-P, so the worker's folder holds a
link `XY -> ../XY` for each of the 256 pairs. Programs compiled by earlier gradings (the
reference and baseline kernels' first-launch builds take seconds each on a CPU) are found
through the links, and new ones are kept. The worker's folder is in the same file system as
the cache, so PoCL's rename of a finished file into its program folder still works.

Making the 256 links is slow on some file systems, so a folder is made once and then
reused: the parent holds an flock on `<folder>/.owner` while its worker may write there
and lets go once the folder is emptied; the next worker takes any folder nobody holds, first
emptying it of what a parent killed with -9 could not. Standard library only (imported
before the rest of `lab grade`).
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from grader import settings

try:
    import fcntl

    HAVE_FCNTL = True
except ImportError:  # not POSIX: no shared cache folder (create() makes a private one)
    HAVE_FCNTL = False

PREFIX = "lab-worker-"
OWNER = ".owner"  # locked by the parent while its worker may write in the folder
COMPLETE = ".complete"  # the links are all there
LETTERS = "ABCDEFGHIJKLMNOP"  # PoCL's hash digits: 'A' + a nibble
PAIRS = tuple(a + b for a in LETTERS for b in LETTERS)
_KEPT = frozenset((OWNER, COMPLETE, *PAIRS))

_made: set[Path] = set()  # shared caches whose 256 program folders exist


def shared_cache() -> Path:
    """PoCL's cache folder as PoCL itself picks it (pocl_cache_init_topdir)."""
    configured = settings.value(settings.POCL_CACHE_DIR)
    if configured is not None:
        return configured
    return settings.value(settings.XDG_CACHE_HOME) / "pocl" / ("kcache" if kernel_cache_on() else "uncached")


def kernel_cache_on() -> bool:
    """Whether PoCL keeps compiled kernels (POCL_KERNEL_CACHE)."""
    return settings.value(settings.POCL_KERNEL_CACHE)


class Scratch:
    """A worker's PoCL folder. `remove()`, once the worker has ended: delete everything PoCL
    left in it and let the next worker have it (a private folder is deleted outright)."""

    def __init__(self, path: Path, lock: int | None, shared: bool):
        self.path = path
        self._lock = lock
        self.shared = shared  # complete and in the shared cache: kept for the next worker

    def remove(self) -> None:
        if self.shared:
            empty(self.path)
        else:
            shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            try:
                os.close(self._lock)  # lets go of the flock
            except OSError:
                pass
            self._lock = None
        _mine.discard(self)


# Every folder this process holds or is making, named here before it exists: whatever an
# interrupt stops (even inside create()), it is emptied or removed at exit.
_mine: set[Scratch] = set()


@atexit.register
def _remove_mine() -> None:
    for scratch in list(_mine):
        scratch.remove()


def empty(folder: Path) -> None:
    """Delete what PoCL put in a worker folder: all but the links and the lock files."""
    try:
        with os.scandir(folder) as entries:
            left = [e for e in entries if e.name not in _KEPT or (e.name in PAIRS and not e.is_symlink())]
    except OSError:
        return
    for entry in left:
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def create() -> Scratch | None:
    """A worker folder in the shared cache, linked to its programs: one nobody holds, emptied,
    else a new one; else a private folder in the temporary folder (nothing shared: slower,
    still nothing left behind); else None."""
    if kernel_cache_on() and HAVE_FCNTL:
        shared = shared_cache()
        try:
            shared.mkdir(parents=True, exist_ok=True)
            scratch = _take(shared) or _make(shared)
        except OSError:
            scratch = None
        if scratch is not None:
            return scratch
    scratch = Scratch(Path(tempfile.gettempdir()) / f"lab-pocl-{secrets.token_hex(6)}", None, shared=False)
    _mine.add(scratch)
    try:
        scratch.path.mkdir(mode=0o700)
    except OSError:
        _mine.discard(scratch)
        return None
    return scratch


def _hold(folder: Path, create: bool = False) -> int | None:
    """An flock on `<folder>/.owner`, or None where someone holds it (the descriptor is not
    inherited by the worker: it is the parent that holds the folder)."""
    try:
        fd = os.open(folder / OWNER, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_CREAT if create else 0),
                     0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _take(shared: Path) -> Scratch | None:
    """A complete folder nobody holds (its parent let go of it, or died), emptied. Folders
    whose making was stopped (kill -9) are deleted on the way."""
    try:
        with os.scandir(shared) as entries:
            folders = [Path(e.path) for e in entries if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return None
    taken = None
    for folder in folders:
        complete = (folder / COMPLETE).is_file()
        if complete and taken is not None:
            continue
        lock = _hold(folder)  # None: in use, or being made (no lock file yet)
        if lock is None:
            continue
        if not complete:
            shutil.rmtree(folder, ignore_errors=True)
            os.close(lock)
            continue
        taken = Scratch(folder, lock, shared=True)
        _mine.add(taken)
        empty(folder)
    return taken


def _make(shared: Path) -> Scratch | None:
    scratch = Scratch(shared / f"{PREFIX}{secrets.token_hex(6)}", None, shared=False)
    _mine.add(scratch)  # from here on, an interrupt still removes it (deleted outright until complete)
    try:
        scratch.path.mkdir(mode=0o700)
        scratch._lock = _hold(scratch.path, create=True)
        if scratch._lock is None:
            raise OSError("no lock")
        if shared not in _made:
            for pair in PAIRS:
                (shared / pair).mkdir(exist_ok=True)
            _made.add(shared)
        for pair in PAIRS:
            os.symlink(os.path.join(os.pardir, pair), scratch.path / pair)
        (scratch.path / COMPLETE).touch()
    except OSError:
        scratch.remove()
        return None
    scratch.shared = True
    return scratch
