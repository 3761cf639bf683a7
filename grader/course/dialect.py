"""The course's hints in the submission's own language.

The course writes its hints ([feedback] in each assignment.toml) in CUDA's words, with asides
for the other language: `__syncthreads() (OpenCL: barrier(CLK_LOCAL_MEM_FENCE))`, or whole
sections: `CUDA: ... OpenCL: ...`. A student who wrote OpenCL reads get_local_id(0), barrier
and __local, and only the section for their language; a CUDA student reads no OpenCL asides.
Each backend's words are in its row of the backend table (grader.backends.registry).
"""

from __future__ import annotations

import re

from grader.backends.registry import KernelSyntax, backends

_ASIDE = r"\s*\((?:{labels}):(?:[^()]|\([^()]*\))*\)"
_SECTION = r"(?:^|(?<=[.;:]\s))({labels}):\s+"


def in_dialect(text: str, syntax: KernelSyntax) -> str:
    """`text`, written in CUDA's words, as a student of `syntax`'s language reads it."""
    labels = "|".join(re.escape(k.syntax.label) for k in backends() if k.syntax.label)
    if not labels:
        return text
    text = _own_sections(text, syntax.label, re.compile(_SECTION.format(labels=labels)))
    text = re.sub(_ASIDE.format(labels=labels), "", text)
    for cuda, own in syntax.terms:
        text = re.sub(rf"(?<![\w.]){re.escape(cuda)}(?![\w(])" if cuda[-1].isalnum() or cuda[-1] == "_"
                      else rf"(?<![\w.]){re.escape(cuda)}", own, text)
    return text


def _own_sections(text: str, label: str, section: re.Pattern[str]) -> str:
    """Text split into `CUDA: ...` and `OpenCL: ...` sections keeps what comes before the first
    section and the sections of `label`; text with no sections is kept whole."""
    marks = list(section.finditer(text))
    if not marks:
        return text
    kept = [text[:marks[0].start()].rstrip()]
    for n, mark in enumerate(marks):
        end = marks[n + 1].start() if n + 1 < len(marks) else len(text)
        if mark.group(1) == label:
            kept.append(text[mark.end():end].strip())
    joined = " ".join(part for part in kept if part)
    return joined[:1].upper() + joined[1:]
