"""One queue per device, shared by every grading process of every user on the machine: the
timed phases of gradings on one device take turns, first come first served.

The queue is a folder (`LAB_DEVICE_QUEUE`, default `/tmp/lab-device-queue`; `off` turns it
off) with one subfolder per device, both sticky and world-writable (mode 1777, like /tmp), so
that every user's processes share them and none can remove another's entries. A process that
wants the device takes a **ticket**: a file `ticket-<number>-<pid>` whose number is one more
than the highest there (taken under an flock on the folder's `lock` file, so numbers only
grow), held under an exclusive flock for as long as the ticket lives. Its turn comes when no
live ticket with a smaller number is left and none holds the device; then, under the same
lock, it is renamed `holder-<number>-<pid>` for the turn. "N ahead" counts the holder and the
smaller numbers.

- **A killed holder** releases at once: the kernel drops an flock with its process, and a
  ticket file nobody holds is dead (ignored, and removed by whoever may).
- **A stopped or hung holder** (Ctrl-Z, SIGSTOP, a wedged process) keeps its flock, so every
  live ticket also beats: its owner touches it at least once a second while it waits or
  holds, and a ticket whose last beat is older than `STALE_S` is passed over. A ticket that
  has stood first in line for longer than `SKIP_HEAD_AFTER_S` (a grader holds the device
  `HOLD_LIMIT_S` at most: grader.pipeline then kills its worker) is passed over too.
- The parent process of a grading (grader.pipeline) holds the ticket, never the sandboxed
  worker that runs the student's code: the worker asks for its turn over the pipe.

Nothing here trusts what a ticket file says: liveness is the flock, staleness its mtime as the
kernel keeps it, order its name. It keeps the lab's own processes from timing on top of each
other; a user with a shell on the machine can still use the GPU outside it.

Standard library only (the parent of `lab grade` loads it).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import settings

QUEUE_ENV = settings.DEVICE_QUEUE.name
SHARED_MODE = 0o1777  # sticky, world-writable: everyone adds, only the owner removes
STALE_S = 30.0  # a ticket not touched for this long belongs to a stopped or hung process
HOLD_LIMIT_S = 300.0  # the longest a grading holds its device (grader.pipeline kills its worker then)
SKIP_HEAD_AFTER_S = HOLD_LIMIT_S + 60.0  # a ticket first in line this long is passed over
LOCK_WAIT_S = 5.0  # the longest the numbering lock is waited for
TAKE_LOCK_WAIT_S = 0.5  # ... and by a ticket whose turn has come (it tries again at its next look)
_TICKET = re.compile(r"^(ticket|holder)-(\d{12})-(\d+)(-shared)?$")
SHARED_SUFFIX = "-shared"


class QueueUnavailable(RuntimeError):
    """The queue folder cannot be used (permissions, a file in its place, ...): one line why."""


def queue_root() -> Path | None:
    """The queue folder from LAB_DEVICE_QUEUE; None where it is turned off."""
    return settings.value(settings.DEVICE_QUEUE)


def device_folder_name(device_id: str) -> str:
    """A folder name for a device id: readable, safe as a path, and unique (a hash of the id)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", device_id).strip("-.")[:48] or "device"
    return f"{slug}-{hashlib.sha256(device_id.encode()).hexdigest()[:12]}"


def _shared_folder(path: Path) -> None:
    """Make `path` (mode 1777) or check one that exists: a real folder, not a link, and either
    sticky (nobody removes another's tickets) or writable by its owner alone."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise QueueUnavailable(f"cannot make the device queue folder {path}: {error.strerror}") from None
    else:
        try:
            os.chmod(path, SHARED_MODE)  # (mkdir's mode goes through the umask)
        except OSError as error:
            raise QueueUnavailable(f"cannot share the device queue folder {path}: {error.strerror}") from None
    try:
        info = os.lstat(path)
    except OSError as error:
        raise QueueUnavailable(f"the device queue folder {path}: {error.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise QueueUnavailable(f"the device queue {path} is not a folder")
    others_write = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if others_write and not info.st_mode & stat.S_ISVTX:
        raise QueueUnavailable(f"the device queue folder {path} is writable by others but not sticky "
                               f"(anyone could remove anyone's place): chmod 1777 it, or set {QUEUE_ENV}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise QueueUnavailable(f"the device queue folder {path} is not writable for this user "
                               f"(chmod 1777 it, or set {QUEUE_ENV})")


def _open_entry(path: Path) -> int | None:
    """A descriptor of a queue entry for reading (never following a link, never blocking on a
    FIFO someone put there); None where it is gone or not a plain file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    return fd


@dataclass(frozen=True)
class Entry:
    """A live ticket in a device's queue."""

    number: int
    name: str
    beat_age_s: float  # since its owner last touched it
    holding: bool  # `holder-...`: its turn is under way
    shared: bool = False  # `...-shared`: a turn others' shared turns may run beside


def _live(folder: Path, own: str = "") -> list[Entry]:
    """The live tickets in `folder` but `own`, the holder first, then by number; dead ones
    (nobody holds their flock) are removed where this user may."""
    found: list[Entry] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    now = time.time()
    for name in names:
        match = _TICKET.match(name)
        if not match or name == own:
            continue
        number = int(match.group(2))
        path = folder / name
        fd = _open_entry(path)
        if fd is None:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    continue
                found.append(Entry(number, name, max(0.0, now - os.fstat(fd).st_mtime), match.group(1) == "holder",
                                   bool(match.group(4))))
            else:  # nobody holds it: its process has ended
                try:
                    os.unlink(path)
                except OSError:
                    pass  # another user's (the sticky folder): ignored by everyone
        finally:
            os.close(fd)
    found.sort(key=lambda e: (not e.holding, e.number))
    return found


def _next_number(folder: Path) -> int:
    highest = 0
    for name in os.listdir(folder):
        match = _TICKET.match(name)
        if match:
            highest = max(highest, int(match.group(2)))
    return highest + 1


@dataclass
class Ticket:
    """This process's place in one device's queue (grader.device_turn holds it for a grading)."""

    folder: Path
    device_id: str
    number: int
    name: str
    fd: int
    holding: bool = False
    shared: bool = False  # a shared turn: beside other shared ones, never beside an exclusive one
    last_ahead: int = 0  # what the last try_take found ahead
    _head_since: dict[str, float] = field(default_factory=dict)  # when each ticket ahead was first seen first
    _beaten: float = 0.0

    @property
    def path(self) -> Path:
        return self.folder / self.name

    def ahead(self) -> int:
        """How many live tickets come before this one: the holders', and those with smaller
        numbers (stopped ones, and one that has stood first for too long, not counted). A shared
        ticket waits only for exclusive ones: shared turns run side by side."""
        now = time.monotonic()
        waiting = [e for e in _live(self.folder, self.name)
                   if (e.holding or e.number < self.number) and e.beat_age_s < STALE_S
                   and not (self.shared and e.shared)]
        for name in list(self._head_since):
            if name not in {e.name for e in waiting}:
                del self._head_since[name]
        while waiting:
            first = self._head_since.setdefault(waiting[0].name, now)
            if now - first <= SKIP_HEAD_AFTER_S:
                break
            waiting.pop(0)
        return len(waiting)

    def try_take(self) -> bool:
        """Take the device if this ticket's turn has come."""
        if self.holding:
            return True
        self.last_ahead = self.ahead()
        if self.last_ahead:
            return False
        # Taken under the numbering lock, and marked by renaming the ticket `holder-...`: a
        # ticket with a smaller number that was passed over (stopped) and comes back finds the
        # holder's mark, and two tickets never take the device at once.
        try:
            lock = _numbering_lock(self.folder, TAKE_LOCK_WAIT_S)
        except QueueUnavailable:
            return False
        try:
            self.last_ahead = self.ahead()
            if self.last_ahead:
                return False
            name = f"holder-{self.number:012d}-{os.getpid()}{SHARED_SUFFIX if self.shared else ''}"
            try:
                os.rename(self.path, self.folder / name)
            except OSError:
                return False
            self.name = name
            self.holding = True
            _log("take", self)
            return True
        finally:
            os.close(lock)

    def beat(self, every_s: float = 1.0) -> None:
        """Show that the owner is alive (at most once every `every_s`)."""
        now = time.monotonic()
        if now - self._beaten >= every_s:
            self._beaten = now
            try:
                os.utime(self.fd)
            except OSError:
                pass

    def leave(self) -> None:
        """Give the device back, or the place in line: remove the ticket, then drop its lock."""
        if self.fd < 0:
            return
        if self.holding:
            _log("release", self)
            self.holding = False
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1


def join(device_id: str, root: Path | None = None, shared: bool = False) -> Ticket:
    """Take a ticket in `device_id`'s queue under `root` (LAB_DEVICE_QUEUE's folder by default):
    an exclusive one (a timed phase: its turn comes when every ticket before it has had its
    turn, and it runs alone), or a `shared` one (correctness runs: its turn comes when every
    exclusive ticket before it has had its turn, and it runs beside other shared ones, never
    beside an exclusive one). Raises QueueUnavailable where the folder cannot be used."""
    root = root if root is not None else queue_root()
    if root is None:
        raise QueueUnavailable(f"the device queue is off ({QUEUE_ENV}=off)")
    _shared_folder(root)
    folder = root / device_folder_name(device_id)
    _shared_folder(folder)
    lock = _numbering_lock(folder)
    try:
        number = _next_number(folder)
        temp = folder / f".new-{os.getpid()}-{secrets.token_hex(6)}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise QueueUnavailable(f"cannot add to the device queue {folder}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held from before the ticket can be seen
            os.write(fd, json.dumps({"pid": os.getpid(), "uid": os.getuid(), "device": device_id,
                                     "since": time.time()}).encode())
            name = f"ticket-{number:012d}-{os.getpid()}{SHARED_SUFFIX if shared else ''}"
            os.rename(temp, folder / name)  # seen under its number before the next number is given
        except OSError as error:
            os.close(fd)
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise QueueUnavailable(f"cannot add to the device queue {folder}: {error.strerror}") from None
    finally:
        os.close(lock)
    return Ticket(folder, device_id, number, name, fd, shared=shared)


def _numbering_lock(folder: Path, wait_s: float = LOCK_WAIT_S) -> int:
    """The folder's numbering lock, taken (an flock on `lock`: a read-only descriptor will do,
    so the file need not be writable by others)."""
    path = folder / "lock"
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            # O_CREAT only for a new file: on an existing one of another user's, in a sticky
            # folder, Linux refuses it where fs.protected_regular is set.
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                fd = os.open(path, flags)
    except OSError as error:
        raise QueueUnavailable(f"cannot open the device queue's lock {path}: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise QueueUnavailable(f"the device queue's lock {path} is not a plain file")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                os.close(fd)
                raise QueueUnavailable(f"the device queue's lock {path} stayed taken for {wait_s:.1f} s") from None
        time.sleep(0.005)


def _log(event: str, ticket: Ticket) -> None:
    """Tests and benchmarks (LAB_DEVICE_QUEUE_LOG): one JSON line per take and release."""
    record(event, ticket=ticket.number, device=ticket.device_id, shared=ticket.shared)


def record(event: str, **fields: object) -> None:
    """One JSON line in the LAB_DEVICE_QUEUE_LOG file, where one is set: `event`, the time, this
    process, and `fields` (a turn's take and release; what a timing session spent its turn on,
    grader.timing_session). Never raises."""
    path = settings.value(settings.DEVICE_QUEUE_LOG)
    if path is None:
        return
    line = json.dumps({"event": event, "t": time.time(), "pid": os.getpid(), **fields}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


SESSION_EVENT = "session"  # record()'s event for a part of a timing session's turn


def session_parts(log: Path) -> dict[str, float]:
    """From a LAB_DEVICE_QUEUE_LOG file: the seconds timing sessions spent on each part of their
    turns (grader.timing_session.Part), added over every session."""
    spent: dict[str, float] = {}
    for line in log.read_text().splitlines():
        try:
            item = json.loads(line)
            if item.get("event") != SESSION_EVENT:
                continue
            part, seconds = str(item["part"]), float(item["s"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        spent[part] = spent.get(part, 0.0) + seconds
    return spent


def turns(log: Path, shared: bool = False) -> list[tuple[str, int, float, float]]:
    """The exclusive turns (timed phases), or with `shared` the shared ones (correctness runs),
    recorded in a LAB_DEVICE_QUEUE_LOG file: (device, pid, taken, released) each, in the order
    taken; a turn never released ends at infinity."""
    open_turns: dict[tuple[str, int, int], float] = {}
    done: list[tuple[str, int, float, float]] = []
    for line in log.read_text().splitlines():
        try:
            item = json.loads(line)
            key = (str(item["device"]), int(item["pid"]), int(item["ticket"]))
            at = float(item["t"])
        except (ValueError, KeyError, TypeError):
            continue
        if bool(item.get("shared", False)) != shared:
            continue
        if item.get("event") == "take":
            open_turns[key] = at
        elif item.get("event") == "release" and key in open_turns:
            done.append((key[0], key[1], open_turns.pop(key), at))
    done.extend((k[0], k[1], at, float("inf")) for k, at in open_turns.items())
    return sorted(done, key=lambda t: t[2])


def occupancy(log: Path) -> dict[str, tuple[float, float, float]]:
    """By device, from a LAB_DEVICE_QUEUE_LOG file: (busy, exclusive, span) in seconds: how long
    some turn was held (turns that overlap counted once), how long exclusive turns were held
    (timed phases: they never overlap), and from the first turn taken to the last released.
    Turns never released are left out."""
    found: dict[str, tuple[float, float, float]] = {}
    every = [(t, False) for t in turns(log)] + [(t, True) for t in turns(log, shared=True)]
    for device in sorted({t[0] for t, _ in every}):
        spans = sorted((taken, released, shared) for (d, _, taken, released), shared in every
                       if d == device and released != float("inf"))
        if not spans:
            continue
        busy, start, end = 0.0, spans[0][0], spans[0][1]
        for taken, released, _ in spans[1:]:
            if taken > end:
                busy += end - start
                start, end = taken, released
            else:
                end = max(end, released)
        busy += end - start
        exclusive = sum(released - taken for taken, released, shared in spans if not shared)
        found[device] = (busy, exclusive, max(r for _, r, _ in spans) - spans[0][0])
    return found
