"""The class's similarity check: within each stage, the pairs of submissions that share the most
code of their own, for the instructor to look at.

Each submission is fingerprinted (lab.batch.fingerprint: comments, layout and names do not
count; a CUDA and an OpenCL kernel read alike, so a ported copy is found too). What is no one's
own does not count either, and is taken out of every submission's fingerprints first:

- the stage's skeletons (`assignments/<stage>/skeleton<suffix>`, each backend's), which every student
  starts from;
- the stage's reference kernels (`reference/<stage>/solution<suffix>`): they are the
  lecture's code, shown in class and shipped with the lab, so two students who both wrote the
  lecture's kernel have not copied from each other;
- code that more than a fifth of the stage's submissions share (and at least COMMON_AT_LEAST
  of them): the solution the class converged on, as MOSS leaves out passages found in many files.

A pair's score is the share of the smaller side's own fingerprints that the other side has
too, where a side with fewer than MIN_PRINTS fingerprints of its own counts as MIN_PRINTS (a
near-lecture kernel has little of its own, and two such kernels agreeing on two passages
prove little). Every pair of a stage is scored through an index from fingerprint to
submissions, so a stage of 300 takes well under a second or two.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.course.checks.normalised_source import given_defines, given_names
from grader.course.handouts import is_own_reference
from grader.course.spec import Spec
from lab.batch.beneath import open_beneath, read_bounded
from lab.batch.fingerprint import Fingerprints, K, Token, W, every_kgram, fingerprint, kgram_hashes
from lab.batch.layout import Submission

REPORT_AT = 0.5  # pairs scoring at least this are reported
MAX_PAIRS = 50  # per stage, at most
MIN_PRINTS = 8
COMMON_SHARE = 0.2
COMMON_AT_LEAST = 10
MAX_BYTES = 256 * 1024  # a kernel past this is not compared (none of the course's is past 10 KiB)


class Skip(Enum):
    """Why a submission was not compared, in one line."""

    UNREADABLE = "the file could not be read"
    NOT_TEXT = "not UTF-8 text"
    TOO_LARGE = f"larger than {MAX_BYTES // 1024} KiB"
    TOO_SHORT = f"fewer than {K} tokens of code"


@dataclass(frozen=True)
class Source:
    """One submission's text, as compared."""

    student: str
    file: str  # inside SUBMISSIONS, e.g. "alice/matmul_tiled.cu"
    backend: BackendKind
    text: str


@dataclass(frozen=True)
class Side:
    """One submission of a pair: who, what share of its own code the other has, and where."""

    source: Source
    share: float  # of this side's own fingerprints, those the other side has too
    spans: tuple[tuple[int, int], ...]  # character ranges of text both sides have, in order

    def segments(self) -> list[tuple[str, bool]]:
        """The text cut into (piece, matched) pieces, in order, covering all of it."""
        pieces: list[tuple[str, bool]] = []
        at = 0
        text = self.source.text
        for start, end in self.spans:
            if start > at:
                pieces.append((text[at:start], False))
            pieces.append((text[start:end], True))
            at = end
        if at < len(text):
            pieces.append((text[at:], False))
        return pieces

    def lines(self) -> list[list[tuple[str, bool]]]:
        """segments() cut at line ends: one list of (piece, matched) per line, without the
        newline (a CRLF's CR is dropped too)."""
        lines: list[list[tuple[str, bool]]] = [[]]
        for piece, matched in self.segments():
            for n, part in enumerate(piece.replace("\r\n", "\n").split("\n")):
                if n:
                    lines.append([])
                if part:
                    lines[-1].append((part, matched))
        if len(lines) > 1 and not lines[-1]:
            lines.pop()
        return [_unmark_edges(line) for line in lines]


def _unmark_edges(line: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """A line's indentation and trailing spaces shown unmarked: a match that runs on from the
    line before covers them, but they are no one's code."""
    if line and line[0][1]:
        piece = line[0][0]
        body = piece.lstrip()
        line = ([(piece[:len(piece) - len(body)], False)] if body != piece else []) + \
            ([(body, True)] if body else []) + line[1:]
    if line and line[-1][1]:
        piece = line[-1][0]
        body = piece.rstrip()
        line = line[:-1] + ([(body, True)] if body else []) + \
            ([(piece[len(body):], False)] if body != piece else [])
    return line


@dataclass(frozen=True)
class Pair:
    a: Side
    b: Side
    score: float
    shared: int  # fingerprints in common, each counted once


@dataclass(frozen=True)
class StageSimilarity:
    stage: str
    compared: int  # submissions compared
    pairs: tuple[Pair, ...]  # scoring REPORT_AT or more, best first, at most MAX_PAIRS
    above: int  # pairs scoring REPORT_AT or more, also those past MAX_PAIRS
    skipped: tuple[tuple[str, Skip], ...]  # (file, why) of each submission not compared
    seconds: float
    # Files that are the stage's own reference, at most trivially edited (grader.course.checks.normalised_source):
    # grading refuses them; their code is the lecture's, so they pair with no one here.
    reference_copies: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassSimilarity:
    stages: tuple[StageSimilarity, ...]  # in course order; only stages with a submission
    report_at: float
    k: int
    w: int

    @property
    def pairs(self) -> int:
        return sum(s.above for s in self.stages)


def read_source(submission: Submission) -> Source | Skip:
    """The submission's text, read as grading reads it: never through a link (lab.batch.beneath),
    its size checked on the open file before anything is read, and never more than MAX_BYTES + 1
    bytes read (a sparse giant or a file that grows costs nothing)."""
    try:
        fd = open_beneath(submission.path.parent, (submission.path.name,))
    except OSError:  # NotBeneath among them: a link, a FIFO, a folder
        return Skip.UNREADABLE
    try:
        read = read_bounded(fd, MAX_BYTES)
    except OSError:
        return Skip.UNREADABLE
    finally:
        os.close(fd)
    if read.over(MAX_BYTES):
        return Skip.TOO_LARGE
    data = read.data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Skip.NOT_TEXT
    if "\x00" in text:
        return Skip.NOT_TEXT
    return Source(submission.student, submission.relative, submission.kind, text)


def stage_boilerplate(catalog: Catalog, stage: str) -> set[int]:
    """Every k-gram of the stage's skeletons and reference kernels."""
    paths = [catalog.assignments / stage / f"skeleton{suffix}" for suffix in registry.suffixes()]
    paths += [catalog.reference_file(stage, suffix) for suffix in registry.suffixes()]
    texts = []
    for path in paths:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return every_kgram(texts)


def _spans(text: str, tokens: Sequence[Token], starts: Iterable[int], k: int) -> tuple[tuple[int, int], ...]:
    """The character ranges covered by the k-grams that start at `starts`, merged, in order;
    a comment or #pragma line between two covered tokens is left out (no one's code here), a
    dropped qualifier (`__global`) is not."""
    covered: set[int] = set()
    for first in starts:
        covered.update(range(first, first + k))
    spans: list[tuple[int, int]] = []
    for index in sorted(covered):
        gap = text[tokens[index - 1].end:tokens[index].start] if index else ""
        if spans and index - 1 in covered and not any(mark in gap for mark in ("//", "/*", "#")):
            spans[-1] = (spans[-1][0], tokens[index].end)
        else:
            spans.append((tokens[index].start, tokens[index].end))
    return tuple(spans)


def _shared_spans(one: Source, one_prints: Fingerprints, other: Source, other_prints: Fingerprints,
                  leave_out: set[int]) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """Where two sources have code in common (every k-gram they share, not only the winnowed
    ones, so the highlight shows whole passages), apart from the k-grams in `leave_out`."""
    mine, theirs = kgram_hashes(one_prints.tokens, one_prints.k), kgram_hashes(other_prints.tokens, other_prints.k)
    both = (set(mine) & set(theirs)) - leave_out
    return (_spans(one.text, one_prints.tokens, (i for i, h in enumerate(mine) if h in both), one_prints.k),
            _spans(other.text, other_prints.tokens, (i for i, h in enumerate(theirs) if h in both), other_prints.k))


def compare_stage(stage: str, sources: Sequence[Source], boilerplate: set[int],
                  skipped: Sequence[tuple[str, Skip]] = (), report_at: float = REPORT_AT,
                  max_pairs: int = MAX_PAIRS) -> StageSimilarity:
    """Score every pair of `sources` (one stage's submissions) and keep the best."""
    began = time.perf_counter()
    skipped = list(skipped)
    prints: list[Fingerprints] = []
    kept: list[Source] = []
    for source in sources:
        found = fingerprint(source.text)
        if not found.tokens or len(found.tokens) < K:
            skipped.append((source.file, Skip.TOO_SHORT))
            continue
        prints.append(found)
        kept.append(source)

    own = [found.hashes - boilerplate for found in prints]
    holders: dict[int, list[int]] = {}
    for index, hashes in enumerate(own):
        for h in hashes:
            holders.setdefault(h, []).append(index)
    common_at = max(COMMON_AT_LEAST, COMMON_SHARE * len(kept))
    common = {h for h, who in holders.items() if len(who) > common_at}
    if common:
        own = [hashes - common for hashes in own]
    shared: Counter[tuple[int, int]] = Counter()
    for h, who in holders.items():
        if h in common or len(who) < 2:
            continue
        for x in range(len(who)):
            for y in range(x + 1, len(who)):
                shared[(who[x], who[y])] += 1

    scored = []
    for (x, y), count in shared.items():
        score = count / max(min(len(own[x]), len(own[y])), MIN_PRINTS)
        if score >= report_at:
            scored.append((score, count, x, y))
    scored.sort(key=lambda item: (-item[0], -item[1], kept[item[2]].file, kept[item[3]].file))
    pairs = []
    leave_out = boilerplate | common
    for score, count, x, y in scored[:max_pairs]:
        spans_x, spans_y = _shared_spans(kept[x], prints[x], kept[y], prints[y], leave_out)
        pairs.append(Pair(a=Side(kept[x], count / len(own[x]), spans_x),
                          b=Side(kept[y], count / len(own[y]), spans_y), score=score, shared=count))
    return StageSimilarity(stage, len(kept), tuple(pairs), len(scored), tuple(skipped),
                           time.perf_counter() - began)


def reference_copies(catalog: Catalog, spec: Spec, sources: Sequence[Source]) -> tuple[str, ...]:
    """The files of `sources` that are the stage's own reference, unchanged apart from
    whitespace, comments and names (as grading refuses them), in order."""
    shipped = catalog.release.digests if catalog.release is not None else None
    found = []
    for source in sources:
        suffix = source.backend.suffix
        if is_own_reference(source.text, catalog.reference_file(spec.id, suffix), shipped, spec.id, suffix,
                            given_names(spec), given_defines(spec)):
            found.append(source.file)
    return tuple(found)


def compare_class(catalog: Catalog, submissions: Sequence[Submission], report_at: float = REPORT_AT,
                  max_pairs: int = MAX_PAIRS) -> ClassSimilarity:
    """The similarity check over a class, stage by stage in course order."""
    by_stage: dict[str, list[Submission]] = {}
    for submission in submissions:
        by_stage.setdefault(submission.stage, []).append(submission)
    stages = []
    for spec in catalog.stages:
        if spec.id not in by_stage:
            continue
        sources: list[Source] = []
        skipped: list[tuple[str, Skip]] = []
        for submission in by_stage[spec.id]:
            read = read_source(submission)
            if isinstance(read, Skip):
                skipped.append((submission.relative, read))
            else:
                sources.append(read)
        compared = compare_stage(spec.id, sources, stage_boilerplate(catalog, spec.id), skipped,
                                 report_at, max_pairs)
        stages.append(replace(compared, reference_copies=reference_copies(catalog, spec, sources)))
    return ClassSimilarity(tuple(stages), report_at, K, W)
