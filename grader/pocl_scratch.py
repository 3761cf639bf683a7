"""Each OpenCL grading worker's own PoCL folder, removed when the worker ends or is killed.

PoCL writes its temporary files at the top of its cache folder (POCL_CACHE_DIR, by default
~/.cache/pocl/kcache): `tempfile_*`, `tempdir_*`, clang's `*.tmp` outputs. A worker killed
at a time limit leaves them there for good, and a compiler bomb's preprocessor output is
gigabytes. So each worker gets POCL_CACHE_DIR = a folder of its own inside the shared cache,
where those temporaries land, and the parent removes it with everything in it.

What is worth keeping is shared as before: PoCL keeps a compiled program in `<two letters>/
<hash>/` below its cache folder, the two letters from A-P, so the worker's folder holds a
link `XY -> ../XY` for each of the 256 pairs. Programs compiled by earlier gradings (the
reference and baseline kernels' first-launch builds take seconds each on a CPU) are found
through the links, and new ones are kept. The worker's folder is in the same file system as
the cache, so PoCL's rename of a finished file into its program folder still works.

A folder whose parent died without removing it (kill -9) is found by its lock: the parent
holds an flock on `<folder>/.owner` for as long as it lives; the next parent to start a
worker removes the folders nobody holds. Standard library only (imported before the rest
of `lab grade`).
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

PREFIX = "lab-worker-"
OWNER = ".owner"
LETTERS = "ABCDEFGHIJKLMNOP"  # PoCL's hash digits: 'A' + a nibble
PAIRS = tuple(a + b for a in LETTERS for b in LETTERS)
STALE_WITHOUT_OWNER_S = 600.0  # a folder with no lock file yet is still being made, unless this old

_swept: set[Path] = set()
_made: set[Path] = set()  # shared caches whose 256 program folders exist


def shared_cache() -> Path:
    """PoCL's cache folder as PoCL itself picks it (pocl_cache_init_topdir)."""
    configured = os.environ.get("POCL_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pocl" / ("kcache" if kernel_cache_on() else "uncached")


def kernel_cache_on() -> bool:
    return os.environ.get("POCL_KERNEL_CACHE", "1").strip().lower() not in ("0", "no", "false", "off")


class Scratch:
    """A worker's PoCL folder; `remove()` deletes it and everything PoCL left in it."""

    def __init__(self, path: Path, lock: int | None):
        self.path = path
        self._lock = lock

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        _mine.discard(self.path)
        if self._lock is not None:
            try:
                os.close(self._lock)
            except OSError:
                pass
            self._lock = None


# Every folder this process made and has not removed, named here before it exists: whenever
# an interrupt comes (even inside create()), what it made is removed at exit.
_mine: set[Path] = set()


@atexit.register
def _remove_mine() -> None:
    for path in list(_mine):
        shutil.rmtree(path, ignore_errors=True)
    _mine.clear()


def _new_folder(parent: Path, prefix: str) -> Path:
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        _mine.add(path)
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            _mine.discard(path)
        except BaseException:
            _mine.discard(path)
            raise
    raise FileExistsError(f"no free folder name in {parent}")


def create() -> Scratch | None:
    """A new worker folder in the shared cache (linked to its programs); else a private one
    in the temporary folder (nothing shared: slower, still nothing left behind); else None."""
    shared = shared_cache()
    if kernel_cache_on():
        try:
            shared.mkdir(parents=True, exist_ok=True)
            if shared not in _swept:
                _swept.add(shared)
                sweep(shared)
            path = _new_folder(shared, PREFIX)
        except OSError:
            pass
        else:
            scratch = Scratch(path, _hold(path))
            try:
                if shared not in _made:
                    for pair in PAIRS:
                        (shared / pair).mkdir(exist_ok=True)
                    _made.add(shared)
                for pair in PAIRS:
                    os.symlink(os.path.join(os.pardir, pair), path / pair)
                return scratch
            except OSError:
                scratch.remove()
    try:
        return Scratch(_new_folder(Path(tempfile.gettempdir()), "lab-pocl-"), None)
    except OSError:
        return None


def _hold(path: Path) -> int | None:
    """Lock `<path>/.owner` for this process's lifetime (the descriptor is not inherited)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path / OWNER, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep(shared: Path) -> int:
    """Remove the worker folders in `shared` whose parent is gone (nobody holds their lock)."""
    if fcntl is None:
        return 0
    removed = 0
    try:
        with os.scandir(shared) as entries:
            folders = [Path(e.path) for e in entries
                       if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for folder in folders:
        try:
            fd = os.open(folder / OWNER, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            try:
                if time.time() - folder.stat().st_mtime < STALE_WITHOUT_OWNER_S:
                    continue
            except OSError:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its parent is alive
            os.close(fd)
            continue
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)
        removed += 1
    return removed
