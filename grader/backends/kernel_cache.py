"""A disk cache of compiled trusted kernels (baseline, reference, ceiling, the grader's own).

The same trusted files are compiled for every grading; their binaries are kept, keyed by
everything that decides them: the backend, the device, the toolchain's version, the source,
the defines and the entry points. A submission is never cached. The cache lives in
$LAB_KERNEL_CACHE (or ~/.cache/gpu-teaching-lab/kernels); LAB_KERNEL_CACHE=off turns it off.
A cache that cannot be read or written is simply not used.

A sandboxed grading worker (grader.sandbox) sees the cache read-only: its new entries go to
`sink` (set by the worker: a message to the parent, which writes them while it still trusts
the worker), never to the disk, so student code cannot put a binary there for later gradings.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader import settings

KEY = re.compile(r"[0-9a-f]{64}")
sink: Callable[[str, bytes, dict[str, Any]], None] | None = None  # set in a sandboxed worker


def cache_root() -> Path | None:
    """The cache's folder (LAB_KERNEL_CACHE); None where it is off."""
    return settings.value(settings.KERNEL_CACHE)


def cache_key(*parts: Any) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def load(key: str) -> tuple[bytes, dict[str, Any]] | None:
    root = cache_root()
    if root is None:
        return None
    try:
        blob = (root / f"{key}.bin").read_bytes()
        meta = json.loads((root / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if meta.get("size") != len(blob):
        return None
    return blob, meta


def store(key: str, blob: bytes, meta: dict[str, Any], group: int | None = None) -> None:
    """Keep an entry (in a sandboxed worker: hand it to `sink`). `group`: the group that may
    read it (mode 0640), for a sandboxed worker that is not the cache's owner."""
    if sink is not None:
        sink(key, blob, meta)
        return
    root = cache_root()
    if root is None or not KEY.fullmatch(key):
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        for name, data in ((f"{key}.bin", blob),
                           (f"{key}.json", json.dumps({**meta, "size": len(blob)}).encode())):
            fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-")
            with os.fdopen(fd, "wb") as out:
                if group is not None:
                    os.fchown(out.fileno(), -1, group)
                    os.fchmod(out.fileno(), 0o640)
                out.write(data)
            os.replace(tmp, root / name)
    except OSError:
        pass
