"""A disk cache of compiled trusted kernels (baseline, reference, ceiling, the grader's own).

The same trusted files are compiled for every grading; their binaries are kept, keyed by
everything that decides them: the backend, the device, the toolchain's version, the source,
the defines and the entry points. A submission is never cached. The cache lives in
$LAB_KERNEL_CACHE (or ~/.cache/gpu-teaching-lab/kernels); LAB_KERNEL_CACHE=off turns it off.
A cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_root() -> Path | None:
    configured = os.environ.get("LAB_KERNEL_CACHE", "")
    if configured.lower() in ("off", "0", "none"):
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-teaching-lab" / "kernels"


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


def store(key: str, blob: bytes, meta: dict[str, Any]) -> None:
    root = cache_root()
    if root is None:
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        for name, data in ((f"{key}.bin", blob),
                           (f"{key}.json", json.dumps({**meta, "size": len(blob)}).encode())):
            fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, root / name)
    except OSError:
        pass
