"""What a students' copy of the course (lab.release) holds in place of reference source: the
trusted kernels a GPU times a submission against, compiled to PTX, and the normalised digest
of every reference whose source it does not hold (grader.course.checks.normalised_source). It lies in
`release/manifest.json` under the copy's root; an instructor's checkout has none.

Nothing here needs a GPU: choosing which PTX suits a device reads the DeviceInfo only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.backends.base import DeviceInfo
from grader.course.gpu_arch import arch_number

MANIFEST = Path("release") / "manifest.json"
FORMAT = 1


class TrustedUnavailable(Exception):
    """The copy holds no trusted kernel this device can use; the message says why in one line."""


@dataclass(frozen=True)
class TrustedBinary:
    """One trusted kernel compiled to PTX: reference/<stage>/<name><suffix>, built with the
    defines of `spec_stage`'s spec, for `arch` (compute_XY from nvcc; sm_XY from NVIDIA's OpenCL)."""

    stage: str
    name: str  # "solution", or another kernel of reference/<stage>/ (a baseline or a ceiling)
    suffix: str  # ".cu" | ".cl"
    arch: str
    path: str  # relative to the copy's root

    @property
    def source_name(self) -> str:
        return f"reference/{self.stage}/{self.name}{self.suffix}"


@dataclass(frozen=True)
class ReleaseManifest:
    open: tuple[str, ...]
    solutions: tuple[str, ...]
    digests: dict[str, dict[str, str]]  # stage -> suffix -> grader.course.checks.normalised_source digest of its reference
    binaries: tuple[TrustedBinary, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)  # suffix -> why no PTX was made for it
    digest_scheme: str = ""
    # stage -> suffix -> grader.course.checks.normalised_source.token_digest of its reference: another stage's
    # held-back reference handed in unchanged apart from whitespace and comments (grader.course.handouts)
    handout_digests: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data["format"] = FORMAT
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def pick(self, stage: str, name: str, suffix: str, info: DeviceInfo) -> TrustedBinary:
        """The PTX of reference/<stage>/<name><suffix> that this device loads: for CUDA the
        highest compute_XY at or below the GPU's; for OpenCL NVIDIA's own, made for one sm_XY.
        Raises TrustedUnavailable with the reason where there is none."""
        what = f"reference/{stage}/{name}{suffix}"
        found = [b for b in self.binaries if (b.stage, b.name, b.suffix) == (stage, name, suffix)]
        if not found:
            why = self.missing.get(suffix, "the release holds no compiled copy of it")
            raise TrustedUnavailable(f"this copy of the course has no compiled {what}: {why}")
        if info.vendor.upper().find("NVIDIA") < 0 and "NVIDIA" not in info.platform.upper():
            raise TrustedUnavailable(f"this copy times against {what} compiled to PTX for NVIDIA GPUs; "
                                     f"{info.name} ({info.vendor or info.platform}) cannot load PTX")
        major, minor = info.limits.get("cc_major"), info.limits.get("cc_minor")
        if major is None:
            raise TrustedUnavailable(f"{info.name} does not say its compute capability, so no PTX of {what} "
                                     f"can be chosen for it")
        device = 10 * major + (minor or 0)
        usable = [b for b in found if arch_number(b.arch) <= device]
        if not usable:
            have = ", ".join(sorted(b.arch for b in found))
            raise TrustedUnavailable(f"{what} is compiled for {have}, newer than this GPU (sm_{device})")
        return max(usable, key=lambda b: arch_number(b.arch))


def load_manifest(root: Path) -> ReleaseManifest | None:
    """The manifest of the copy at `root`; None for an instructor's checkout (no manifest).
    Raises ValueError for one that cannot be read."""
    path = root / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
        return ReleaseManifest(
            open=tuple(data["open"]), solutions=tuple(data["solutions"]),
            digests={str(k): dict(v) for k, v in data["digests"].items()},
            binaries=tuple(TrustedBinary(**b) for b in data["binaries"]),
            missing=dict(data.get("missing", {})), digest_scheme=str(data.get("digest_scheme", "")),
            handout_digests={str(k): dict(v) for k, v in data.get("handout_digests", {}).items()})
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} cannot be read: {error}") from None
