"""Opening a file under a folder without following a link anywhere on the way, and reading it
with a bound.

Each step from the folder down is opened relative to the one before (openat) with O_NOFOLLOW,
so a folder or file swapped for a symbolic link after the folder was listed is refused (ELOOP
or ENOTDIR), never followed to somewhere else; the file is opened without waiting (a FIFO put
there does not block) and must be a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class NotBeneath(OSError):
    """A step of the path is a link, or the file is not a regular file: `link` says which."""

    def __init__(self, message: str, link: bool):
        super().__init__(errno.ELOOP if link else errno.EINVAL, message)
        self.link = link


@dataclass(frozen=True)
class Read:
    """What a bounded read found: the bytes (at most limit + 1) and the size fstat gave."""

    data: bytes
    size: int  # st_size of the open file, before anything was read

    def over(self, limit: int) -> bool:
        return self.size > limit or len(self.data) > limit


def open_beneath(root: Path, parts: Sequence[str]) -> int:
    """A read-only descriptor of root/parts[0]/.../parts[-1], no step of it a link. The caller
    closes it. Raises NotBeneath (a link, or not a regular file), OSError (missing, unreadable)."""
    if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
        raise ValueError(f"not a relative path of plain names: {parts!r}")
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                step = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise NotBeneath(f"{part}: a symbolic link or not a folder", link=True) from None
                raise
            os.close(fd)
            fd = step
        try:
            file = os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise NotBeneath(f"{parts[-1]}: a symbolic link", link=True) from None
            if error.errno == errno.ENXIO:  # a socket
                raise NotBeneath(f"{parts[-1]}: not a regular file", link=False) from None
            raise
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            raise NotBeneath(f"{parts[-1]}: not a regular file", link=False)
    except BaseException:
        os.close(file)
        raise
    return file


def read_bounded(fd: int, limit: int) -> Read:
    """At most limit + 1 bytes of an open file; nothing read when fstat already says it is over
    `limit` (a sparse giant costs nothing). Does not close `fd`. Raises OSError."""
    size = os.fstat(fd).st_size
    if size > limit:
        return Read(b"", size)
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = os.read(fd, min(limit + 1 - got, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return Read(b"".join(chunks), size)
