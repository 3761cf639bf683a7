"""What a submission may be: one UTF-8 text file of kernel code, checked before compiling.

Each problem found gets a one-line reason a student can act on.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.checks.file_reads import find_file_read
from grader.course.spec import KernelSpec, Param, SpecError, parse_params
from grader.text_limits import clip_line

MAX_BYTES = 256 * 1024


class SubmissionError(ValueError):
    """The file cannot be graded as a kernel submission; the message says why in one line.

    `usage` marks a wrong path or suffix (the command was wrong) rather than a bad submission.
    """

    def __init__(self, message: str, usage: bool = False):
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class Submission:
    """A submitted file, read and decoded (read_submission)."""

    path: Path
    source: str
    backend: BackendKind  # its suffix's row


class SubmissionTooBig(SubmissionError):
    """Over MAX_BYTES: refused whatever its bytes are (so they are never read)."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


# A barrier every thread of a block (work-group) waits at: CUDA's __syncthreads family, a
# cooperative-groups sync (`cg::sync(block)`, `block.sync()`, `this_thread_block().sync()`) and
# OpenCL's barrier / work_group_barrier. Group 1 is what was called.
BLOCK_BARRIER = re.compile(r"(\b__syncthreads(?:_count|_and|_or)?|\bwork_group_barrier|\bbarrier"
                           r"|\b(?:cooperative_groups|cg)\s*::\s*sync|\b[A-Za-z_]\w*(?:\s*\(\s*\))?\s*\.\s*sync)\s*\(")


def read_submission(path: Path) -> Submission:
    """Read a submitted file, refusing what cannot be a kernel source."""
    data = read_submission_bytes(path)
    kind = registry.by_suffix(path.suffix)
    if kind is None:
        raise SubmissionError(f"{path}: a submission is a {registry.suffix_list()} file", usage=True)
    return Submission(path, decode_source(data, str(path)), kind)


_NOT_REGULAR = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path, mode: int) -> SubmissionError:
    if stat.S_ISDIR(mode):
        return SubmissionError(f"{path}: is a folder, not a kernel file", usage=True)
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a plain file")
    return SubmissionError(f"{path}: is {what}, not a regular file; a submission is a kernel source file",
                           usage=True)


def read_submission_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a submitted file, at most `limit`: never blocks, never reads without end.

    The file is opened without waiting (a FIFO would wait for a writer), links followed, and
    must be a regular file (not a FIFO, a device like /dev/zero, a folder); its size is checked
    on the open file before anything is read, and no more than `limit` + 1 bytes are read (a
    file may grow, or say size 0 and have no end). Raises SubmissionError: usage=True for a
    missing or unreadable path, a folder, anything not a regular file; SubmissionTooBig for a
    file over `limit`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file", usage=True) from None
    except OSError as error:
        try:  # opening a socket fails (ENXIO): say what it is
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode) from None
        raise SubmissionError(f"{path}: cannot be read ({error.strerror or error})", usage=True) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        if info.st_size > limit:
            raise SubmissionTooBig(_too_big(path, f"{info.st_size} bytes", limit), info.st_size)
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            try:
                chunk = os.read(fd, limit + 1 - got)
            except OSError as error:
                raise SubmissionError(f"{path}: cannot be read ({error.strerror or error})", usage=True) from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:  # it grew while being read
            raise SubmissionTooBig(_too_big(path, f"more than {limit} bytes", limit), got)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_big(path: Path, size: str, limit: int) -> str:
    return f"{path}: {size} is over the {limit // 1024} KiB limit for a kernel file"


def decode_source(data: bytes, name: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, as some Windows editors write
        data = data[3:]
    if not data.strip():
        raise SubmissionError(f"{name}: the file is empty")
    if b"\x00" in data:
        raise SubmissionError(f"{name}: is a binary file, not kernel source text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise SubmissionError(
            f"{name}:{line}:{column}: is not UTF-8 text (byte {error.start}, 0x{data[error.start]:02x}, "
            f"cannot be decoded): save the file as UTF-8 (an accented letter in a comment is the usual cause)"
        ) from error
    # Line ends as the compilers read them: CRLF (Windows) and a lone CR (old Mac editors) are
    # both a newline, so the checks here see the lines the compiler sees (a `//` comment ends).
    return text.replace("\r\n", "\n").replace("\r", "\n")


def strip_comments(source: str) -> str:
    """Blank out comments, keeping every newline (so line numbers hold), string literals and
    character constants (a multi-character `'/*'` opens no comment)."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(source[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


_MAIN = re.compile(r"\bint\s+main\s*\(")
_HOST_CALLS = r"malloc|free|fopen|system|printf_host"  # and every backend's host API (KernelSyntax.host_calls)
_LAUNCH = re.compile(r"<<<")


def _host_calls() -> re.Pattern[str]:
    """A call of host code: the C library's, or any backend's host API (a file of one language
    calling another's is host code too)."""
    names = [kind.syntax.host_calls for kind in registry.backends() if kind.syntax.host_calls]
    return re.compile(r"\b(" + "|".join([*names, _HOST_CALLS]) + r")\s*\(")


def check_source(source: str, kind: BackendKind, kernels: tuple[KernelSpec, ...],
                 allowed_headers: tuple[str, ...] = (), name: str = "submission",
                 dynamic_shared: bool = False) -> None:
    """Refuse includes, host code and missing or mis-declared entry points; and memory sized at
    launch (`extern __shared__`) unless the stage launches with some (`dynamic_shared`)."""
    code = strip_comments(source)
    read = find_file_read(source, frozenset(allowed_headers) | kind.toolkit_headers)
    if read is not None:
        where = f"{name}:{read.line}" if read.line else name
        if read.directive:
            toolkit = (f"; of the {kind.language} toolkit's own headers these are allowed: "
                       f"{', '.join(sorted(kind.toolkit_headers))}" if kind.toolkit_headers else "")
            raise SubmissionError(
                f"{where}: #{read.directive} is not allowed in a submission ({clip_line(read.header, 80)!r}: it "
                f"must be one self-contained kernel file; the grader defines what the stage needs{toolkit})")
        raise SubmissionError(f"{where}: {read.reason}")
    if kind.dynamic_shared is not None and not dynamic_shared:
        dynamic = re.search(r"\b" + r"\s+".join(map(re.escape, kind.dynamic_shared.split())) + r"\b", code)
        if dynamic is not None:
            raise SubmissionError(
                f"{name}:{_line_of(code, dynamic.start())}: `{kind.dynamic_shared}` memory is sized by the "
                f"host at launch, and this stage launches every kernel with none (its launch is "
                f"fixed, see `lab show`): declare the array with a fixed size instead, e.g. "
                f"`__shared__ float sdata[BLOCK_SIZE];` with a size the stage defines"
            )
    if (m := _MAIN.search(code)) is not None:
        raise SubmissionError(
            f"{name}:{_line_of(code, m.start())}: a submission holds kernel code only, not a main function"
        )
    host = [m for m in (_LAUNCH.search(code), _host_calls().search(code)) if m is not None]
    if host:
        m = min(host, key=lambda found: found.start())  # the first host code in the file
        raise SubmissionError(
            f"{name}:{_line_of(code, m.start())}: a submission holds kernel code only: host code "
            f"({m.group(0).strip('(').strip()}) is not allowed; the grader allocates and launches"
        )
    found = {m.group("name"): m for m in kind.syntax.declaration.finditer(code)}
    for kernel in kernels:
        _check_entry(kernel, found, kind.syntax, code, name)


def _check_entry(kernel: KernelSpec, found: dict[str, re.Match], syntax: registry.KernelSyntax, code: str,
                 name: str) -> None:
    word = syntax.entry
    if kernel.name not in found:
        close = difflib.get_close_matches(kernel.name, list(found), n=1, cutoff=0.5)
        if close:
            raise SubmissionError(
                f"{name}: no kernel named `{kernel.name}` (found `{close[0]}`: the entry point must be "
                f"named exactly `{kernel.name}`)"
            )
        listed = ", ".join(f"`{k}`" for k in found) or "none"
        raise SubmissionError(
            f"{name}: no {word} function named `{kernel.name}` (kernels found: {listed})"
        )
    match = found[kernel.name]
    line = _line_of(code, match.start("name"))
    if syntax.exported and not match.group("export"):
        raise SubmissionError(
            f"{name}:{line}: declare the kernel `{syntax.exported} {word} void {kernel.name}(...)` "
            f"so the grader can find it by name"
        )
    try:
        params = parse_params(match.group("params"))
        got = ", ".join(p.shape_text for p in params) or "no parameters"
    except SpecError:
        params = ()
        got = " ".join(match.group("params").split())
    if not _same_types(params, kernel.params):
        expected = kernel.declared(syntax.pointer_space)
        raise SubmissionError(
            f"{name}:{line}: `{kernel.name}` takes ({got}) but the stage needs ({expected})"
        )


def _same_types(got: tuple[Param, ...], want: tuple[Param, ...]) -> bool:
    if len(got) != len(want):
        return False
    return all(g.is_pointer == w.is_pointer and _base(g) == _base(w) for g, w in zip(got, want))


def _base(p: Param) -> str:
    return " ".join(p.base_type.replace("signed int", "int").split())
