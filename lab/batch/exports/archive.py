"""An LMS export read without trusting it: a zip file, or the folder it was unpacked into.

Nothing in an export is ever unpacked under its own name. The batch lists the export's
entries, decides from their names which are kernel files of which student and stage, and
copies only those, each into a path it builds itself (lab.batch.exports.materialize), so
no entry name can reach a path outside the batch's work folder (zip slip). An entry whose
name is absolute or climbs with `..`, a link, an encrypted or duplicated entry is listed as
not graded, with its reason, and never read.

Zip bombs: at most MAX_ENTRIES entries; a kernel file is read up to the grader's own limit
for one (grader.course.checks.source_checks.MAX_BYTES) and one byte more, measured on the data as it is
inflated, never on the size its headers declare (a header may lie either way), so a file past
the limit gets the grader's "over the limit" verdict without being unpacked; and at most
MAX_TOTAL_BYTES in all. Other entries are never decompressed, except the metadata
file a Gradescope export names its students in (at most MAX_METADATA_BYTES).
"""

from __future__ import annotations

import os
import re
import stat
import struct
import zipfile
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from lab.batch.beneath import open_beneath, read_bounded
from lab.batch.layout import (
    HIDDEN,
    MACOS_FOLDER,
    MACOS_METADATA,
    NOT_A_FILE,
    SYMLINK,
    LayoutError,
    NotGraded,
)

MAX_ENTRIES = 20_000
MAX_TOTAL_BYTES = 1 << 30
MAX_METADATA_BYTES = 64 << 20

# Generic reasons (the class summary shows them with their counts).
UNSAFE_PATH = "a path that would leave the export's folder (absolute, or climbing with ..)"
ENCRYPTED = "an encrypted zip entry"
DUPLICATE = "a second zip entry of the same name"
UNREADABLE_ENTRY = "an entry of the export that cannot be read"

FILE, DIR, LINK, OTHER = "file", "dir", "symlink", "other"

_DRIVE = re.compile(r"^[A-Za-z]:")
# A zip's local file header (APPNOTE 4.3.7): signature, version, flags, method, time, date, CRC,
# sizes, then the lengths of the name and the extra field that come before the data.
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


class ExportError(LayoutError):
    """The export as a whole cannot be read; the message says why in one line."""


class EntryError(Exception):
    """One entry cannot be read; str() says why."""


@dataclass(frozen=True)
class Entry:
    path: str  # inside the export, forward slashes, no trailing slash
    kind: str  # file | dir | symlink | other
    size: int  # bytes (for a zip, as its entry declares)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def shown(self) -> str:
        """Its path as the not-graded lists show it: a folder ends in "/"."""
        return self.path + "/" if self.kind == DIR else self.path


class Export(ABC):
    """The entries of an export, and reading one of them with a bound."""

    def __init__(self, source: Path):
        self.source = source  # the zip file or the folder, as given
        self.entries: tuple[Entry, ...] = ()
        self.refused: list[NotGraded] = []  # entries that are never offered, with their reasons
        self.read_bytes = 0  # what read() returned so far, in all

    @abstractmethod
    def _read(self, entry: Entry, limit: int) -> bytes:
        """At most limit + 1 bytes of the entry. Raises EntryError."""

    def read(self, entry: Entry, limit: int) -> bytes:
        """At most limit + 1 bytes of a file entry (one more than allowed says "too big").
        Raises EntryError; ExportError past MAX_TOTAL_BYTES read in all."""
        if entry.kind != FILE:
            raise EntryError(f"{entry.path}: not a regular file")
        data = self._read(entry, limit)
        self.read_bytes += len(data)
        if self.read_bytes > MAX_TOTAL_BYTES:
            raise ExportError(f"{self.source}: more than {MAX_TOTAL_BYTES >> 20} MiB of kernel files to unpack; "
                              "is this an export of one class?")
        return data

    def close(self) -> None:
        pass

    def children(self, folder: str) -> list[Entry]:
        """The entries directly inside `folder` ("" for the top)."""
        depth = 0 if not folder else folder.count("/") + 1
        prefix = folder + "/" if folder else ""
        return [e for e in self.entries if e.path.startswith(prefix) and e.path.count("/") == depth]

    def under(self, folder: str) -> list[Entry]:
        """Every entry inside `folder`, at any depth."""
        prefix = folder + "/"
        return [e for e in self.entries if e.path.startswith(prefix)]


def _unsafe(name: str) -> bool:
    parts = name.split("/")
    return (name.startswith("/") or bool(_DRIVE.match(name)) or "\x00" in name
            or any(p in ("", ".", "..") for p in parts))


class ZipExport(Export):
    """A zip file. Opening it reads only its central directory."""

    def __init__(self, source: Path):
        super().__init__(source)
        try:
            self._zip = zipfile.ZipFile(source)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
            raise ExportError(f"{source}: not a zip file that can be read ({error})") from error
        if len(infos) > MAX_ENTRIES:
            self._zip.close()
            raise ExportError(f"{source}: {len(infos)} entries, more than the {MAX_ENTRIES} a class export may hold")
        self._infos: dict[str, zipfile.ZipInfo] = {}
        entries: dict[str, Entry] = {}
        for info in infos:
            name = info.filename.replace("\\", "/")
            is_dir = name.endswith("/")
            name = name.rstrip("/")
            kind_bits = stat.S_IFMT(info.external_attr >> 16)  # 0 where the zip says no file type
            if _unsafe(name):
                self.refused.append(NotGraded(name or "/", UNSAFE_PATH, f"{name!r}: an unsafe path, not unpacked"))
                continue
            if name in entries and not (is_dir and entries[name].kind == DIR):
                self.refused.append(NotGraded(name, DUPLICATE, f"{name}: the zip holds it twice; the first is read"))
                continue
            if kind_bits == stat.S_IFLNK:
                kind = LINK
            elif is_dir or kind_bits == stat.S_IFDIR:
                kind = DIR
            elif info.flag_bits & 0x1:
                self.refused.append(NotGraded(name, ENCRYPTED, f"{name}: encrypted, so it cannot be read"))
                continue
            elif kind_bits and kind_bits != stat.S_IFREG:
                kind = OTHER
            else:
                kind = FILE
            entries[name] = Entry(name, kind, info.file_size)
            self._infos[name] = info
            parts = name.split("/")
            for depth in range(1, len(parts)):  # zips need not list their folders
                folder = "/".join(parts[:depth])
                entries.setdefault(folder, Entry(folder, DIR, 0))
        self.entries = tuple(sorted(entries.values(), key=lambda e: e.path))

    def _read(self, entry: Entry, limit: int) -> bytes:
        info = self._infos.get(entry.path)
        if info is None:
            raise EntryError(f"{entry.path}: not in the zip")
        try:
            if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                return self._stream(info, limit)
            with self._zip.open(info) as handle:  # bzip2, lzma: zipfile's reader, still bounded
                return handle.read(limit + 1)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, zlib.error, OSError, EOFError,
                ValueError, struct.error) as error:
            raise EntryError(f"{entry.path}: cannot be unpacked ({error})") from error

    def _stream(self, info: zipfile.ZipInfo, limit: int) -> bytes:
        """At most limit + 1 bytes of a stored or deflated entry, measured on the data itself:
        the sizes its headers declare are not trusted. A deflate stream ends where its own end
        marker is (so an entry declaring 100 bytes and holding 4 GiB yields limit + 1 bytes, and
        one declaring 4 GiB and holding 100 yields those 100); a stored entry is as long as its
        compressed size, bounded by the zip file's own length. The CRC is checked on an entry
        read to its end."""
        handle = self._zip.fp
        if handle is None:
            raise ValueError("the zip is closed")
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile("no local file header where the directory says")
        name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
        handle.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
        left = info.compress_size  # the rest of the zip at most: reads past its end return nothing
        inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        out: list[bytes] = []
        got = 0
        while got <= limit and (left > 0 or (inflate is not None and inflate.unconsumed_tail)):
            if inflate is not None and inflate.unconsumed_tail:
                raw = inflate.unconsumed_tail
            else:
                raw = handle.read(min(left, 1 << 16))
                if not raw:
                    break
                left -= len(raw)
            piece = inflate.decompress(raw, limit + 1 - got) if inflate is not None else raw[:limit + 1 - got]
            out.append(piece)
            got += len(piece)
            if inflate is not None and inflate.eof:
                break
        data = b"".join(out)
        if got > limit:
            return data  # too big: the caller refuses it whatever its CRC
        if inflate is not None and not inflate.eof:
            raise zipfile.BadZipFile("the compressed data ends early")
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for {info.filename!r}")
        return data

    def close(self) -> None:
        self._zip.close()


class FolderExport(Export):
    """A folder (an export unpacked by hand). Links are listed, never followed."""

    def __init__(self, source: Path):
        super().__init__(source)
        entries: list[Entry] = []
        stack = [""]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(source / folder if folder else source) as it:
                    found = list(it)
            except OSError as error:
                if not folder:
                    raise ExportError(f"{source}: cannot be read ({error.strerror or error})") from error
                self.refused.append(NotGraded(folder + "/", UNREADABLE_ENTRY, f"{folder}/: {error.strerror or error}"))
                continue
            for item in found:
                path = f"{folder}/{item.name}" if folder else item.name
                if item.is_symlink():
                    kind, size = LINK, 0
                elif item.is_dir(follow_symlinks=False):
                    kind, size = DIR, 0
                    stack.append(path)
                elif item.is_file(follow_symlinks=False):
                    kind = FILE
                    try:
                        size = item.stat(follow_symlinks=False).st_size
                    except OSError:
                        size = 0
                else:
                    kind, size = OTHER, 0
                entries.append(Entry(path, kind, size))
                if len(entries) > MAX_ENTRIES:
                    raise ExportError(f"{source}: more than the {MAX_ENTRIES} entries a class export may hold")
        self.entries = tuple(sorted(entries, key=lambda e: e.path))

    def _read(self, entry: Entry, limit: int) -> bytes:
        try:
            fd = open_beneath(self.source, entry.parts)  # no step of the path a link
        except OSError as error:
            raise EntryError(f"{entry.path}: cannot be read ({error.strerror or error})") from error
        try:
            read = read_bounded(fd, limit)
            return bytes(limit + 1) if read.over(limit) else read.data  # over: limit + 1 says so
        except OSError as error:
            raise EntryError(f"{entry.path}: cannot be read ({error.strerror or error})") from error
        finally:
            os.close(fd)


def open_export(source: Path) -> Export:
    """A zip file or a folder. Raises ExportError."""
    if not source.exists():
        raise ExportError(f"{source}: no such file or folder")
    if source.is_dir():
        return FolderExport(source)
    if not zipfile.is_zipfile(source):
        raise ExportError(f"{source}: a file, but not a zip; SUBMISSIONS is a folder of student folders, a zip of one, "
                          "or an LMS export (docs/batch.md)")
    return ZipExport(source)


def litter(entry: Entry) -> NotGraded | None:
    """Hidden files and macOS's __MACOSX folder: listed, never read (None for anything else)."""
    if entry.name == MACOS_FOLDER and entry.kind == DIR:
        return NotGraded(entry.shown, MACOS_METADATA, f"{entry.shown}: metadata macOS adds to a zip")
    if entry.name.startswith("."):
        return NotGraded(entry.shown, HIDDEN, f"{entry.shown}: hidden")
    if entry.kind == LINK:
        return NotGraded(entry.path, SYMLINK, f"{entry.path}: a symbolic link, never followed")
    if entry.kind == OTHER:
        return NotGraded(entry.path, NOT_A_FILE, f"{entry.path}: not a regular file")
    return None
