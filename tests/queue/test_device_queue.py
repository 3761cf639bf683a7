"""The shared device queue (grader.device_queue) with several processes: tickets in order, "N
ahead", a killed or stopped holder passed over, first come first served, the folder's
permissions, and nothing planted in the folder blocking it. No device needed."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader import device_queue
from grader.device_queue import QueueUnavailable, Ticket, device_folder_name, join

ROOT_DIR = Path(__file__).resolve().parents[2]
DEVICE = "pci:0000:41:00"


def _become(user: tuple[int, int] | None):
    if user is None:
        return None

    def become() -> None:
        os.setgroups([])
        os.setgid(user[1])
        os.setuid(user[0])

    return become


def python_for(user: tuple[int, int]) -> str | None:
    """An interpreter `user` can run that finds the project (grader.device_queue is standard
    library only), or None."""
    for python in dict.fromkeys((sys.executable, "/usr/bin/python3")):
        try:
            done = subprocess.run([python, "-c", "import grader.device_queue"], cwd="/", capture_output=True,
                                  env={"PYTHONPATH": str(ROOT_DIR)}, preexec_fn=_become(user), timeout=30)
        except OSError:
            continue
        if done.returncode == 0:
            return python
    return None


def holder(root: Path, hold_s: float, log: Path, user: tuple[int, int] | None = None,
           python: str = sys.executable) -> subprocess.Popen:
    """A process that joins the queue, waits its turn and holds the device `hold_s` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT_DIR)}
    return subprocess.Popen([python, "-m", "tests.queue.holder", str(root), DEVICE, str(hold_s), str(log)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=str(ROOT_DIR),
                            preexec_fn=_become(user))


def joined(proc: subprocess.Popen) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("joined "), line
    return int(line.split()[1])


def wait_for(check, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def turns(log: Path) -> list[tuple[int, float, float]]:
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return sorted(((int(n), float(a), float(b)) for n, a, b in rows), key=lambda r: r[1])


def test_tickets_number_in_order_and_count_who_is_ahead(tmp_path: Path) -> None:
    log = tmp_path / "turns"
    first = holder(tmp_path / "q", -1, log)  # holds until killed
    try:
        assert joined(first) == 1
        assert first.stdout.readline().strip() == "took"
        mine = join(DEVICE, tmp_path / "q")
        second = holder(tmp_path / "q", 0.0, log)
        assert joined(second) == 3
        assert mine.number == 2
        assert mine.ahead() == 1 and not mine.try_take() and mine.last_ahead == 1
        other = join(DEVICE, tmp_path / "q")
        assert other.number == 4 and other.ahead() == 3  # the holder, this one, the second process
        other.leave()
        first.kill()
        first.wait()
        wait_for(mine.try_take)  # the killed holder's flock went with it
        assert second.poll() is None  # it waits for this one
        mine.leave()
        assert second.wait(timeout=20) == 0
    finally:
        for proc in (first,):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_killed_holder_releases_the_device_at_once(tmp_path: Path) -> None:
    log = tmp_path / "turns"
    stuck = holder(tmp_path / "q", -1, log)
    assert joined(stuck) == 1 and stuck.stdout.readline().strip() == "took"
    mine = join(DEVICE, tmp_path / "q")
    assert not mine.try_take()
    os.kill(stuck.pid, signal.SIGKILL)
    stuck.wait()
    started = time.monotonic()
    wait_for(mine.try_take, timeout=5)
    assert time.monotonic() - started < 2
    folder = tmp_path / "q" / device_folder_name(DEVICE)
    assert [n for n in os.listdir(folder) if n != "lock"] == [mine.name]  # the dead one removed
    mine.leave()
    assert not (folder / mine.name).exists()


def test_a_stopped_holder_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-Z or SIGSTOP keeps the flock: the ticket stops beating, and after STALE_S the others go on."""
    monkeypatch.setattr(device_queue, "STALE_S", 1.0)
    stopped = holder(tmp_path / "q", -1, tmp_path / "turns")
    try:
        assert joined(stopped) == 1 and stopped.stdout.readline().strip() == "took"
        mine = join(DEVICE, tmp_path / "q")
        assert not mine.try_take()
        os.kill(stopped.pid, signal.SIGSTOP)
        started = time.monotonic()
        wait_for(mine.try_take, timeout=10)
        assert time.monotonic() - started >= 0.5
        mine.leave()
    finally:
        stopped.kill()
        stopped.wait()


def test_one_that_stands_first_too_long_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live, beating ticket first in line past SKIP_HEAD_AFTER_S (no grader holds one so long)."""
    monkeypatch.setattr(device_queue, "SKIP_HEAD_AFTER_S", 1.0)
    hog = holder(tmp_path / "q", -1, tmp_path / "turns")
    try:
        assert joined(hog) == 1 and hog.stdout.readline().strip() == "took"
        mine = join(DEVICE, tmp_path / "q")
        assert not mine.try_take()
        started = time.monotonic()
        wait_for(mine.try_take, timeout=10)
        assert time.monotonic() - started >= 0.9
        mine.leave()
    finally:
        hog.kill()
        hog.wait()


def test_first_come_first_served_and_never_two_at_once(tmp_path: Path) -> None:
    log = tmp_path / "turns"
    gate = join(DEVICE, tmp_path / "q")
    assert gate.try_take()  # hold the device while the others line up
    procs = []
    for _ in range(5):
        proc = holder(tmp_path / "q", 0.15, log)
        procs.append((joined(proc), proc))
    gate.leave()
    for _, proc in procs:
        assert proc.wait(timeout=30) == 0
    done = turns(log)
    assert [n for n, _, _ in done] == [n for n, _ in procs]  # in the order they joined
    for (_, _, released), (_, taken, _) in zip(done, done[1:], strict=False):
        assert taken >= released  # one at a time


def test_the_folder_is_shared_sticky_and_checked(tmp_path: Path) -> None:
    root = tmp_path / "q"
    ticket = join(DEVICE, root)
    for folder in (root, root / device_folder_name(DEVICE)):
        mode = os.stat(folder).st_mode
        assert stat.S_IMODE(mode) == 0o1777, oct(mode)
    assert stat.S_IMODE(os.stat(ticket.path).st_mode) == 0o644  # others read it (flock), never write it
    ticket.leave()

    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)  # world-writable, not sticky: anyone could remove anyone's ticket
    with pytest.raises(QueueUnavailable, match="not sticky"):
        join(DEVICE, loose)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(QueueUnavailable, match="not a folder"):
        join(DEVICE, blocked)
    link = tmp_path / "link"
    link.symlink_to(root)
    with pytest.raises(QueueUnavailable, match="not a folder"):
        join(DEVICE, link)


def test_planted_files_do_not_block_or_count(tmp_path: Path) -> None:
    """A FIFO, a link and a folder under ticket names, and a dead ticket, are not "ahead"."""
    root = tmp_path / "q"
    first = join(DEVICE, root)
    first.leave()
    folder = root / device_folder_name(DEVICE)
    os.mkfifo(folder / "ticket-000000000000-1")
    (folder / "ticket-000000000001-2").symlink_to("/etc/passwd")
    (folder / "ticket-000000000002-3").mkdir()
    (folder / "ticket-000000000003-4").write_text("")  # nobody holds it
    (folder / "not-a-ticket").write_text("")
    mine = join(DEVICE, root)
    assert mine.number == 4
    assert mine.ahead() == 0 and mine.try_take()
    mine.leave()


def test_device_ids_make_safe_distinct_folder_names() -> None:
    names = {device_folder_name(d) for d in ("pci:0000:41:00", "pci:0000:42:00", "../../etc", "a/b", "")}
    assert len(names) == 5
    assert all("/" not in n and not n.startswith(".") for n in names)


def test_off_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_DEVICE_QUEUE", "off")
    assert device_queue.queue_root() is None
    with pytest.raises(QueueUnavailable, match="off"):
        join(DEVICE)
    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path))
    assert device_queue.queue_root() == tmp_path


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a second user")
def test_two_users_share_the_queue_and_neither_removes_the_other() -> None:
    """`nobody` uses root's queue folder: waits behind root's ticket, and passes over a dead
    ticket of root's that it may not remove (the sticky bit), which stays until root's next turn."""
    import pwd

    nobody = pwd.getpwnam("nobody")
    user = (nobody.pw_uid, nobody.pw_gid)
    python = python_for(user)
    if python is None:
        pytest.skip("no Python here that `nobody` can run with this project")
    with tempfile.TemporaryDirectory(prefix="lab-queue-test-") as made:  # (pytest's folders are 0700)
        tmp_path = Path(made)
        os.chmod(tmp_path, 0o755)
        _two_users(tmp_path, user, python)


def _two_users(tmp_path: Path, user: tuple[int, int], python: str) -> None:
    root = tmp_path / "q"
    mine = join(DEVICE, root)
    assert mine.try_take()
    log = tmp_path / "turns"
    log.touch()
    os.chmod(log, 0o666)
    other = holder(root, 0.0, log, user=user, python=python)
    assert joined(other) == 2
    mine.leave()
    assert other.wait(timeout=20) == 0
    assert [n for n, _, _ in turns(log)] == [2]
    dead = root / device_folder_name(DEVICE) / "ticket-000000000005-1"
    dead.write_text("")  # root's, and nobody holds it
    other = holder(root, 0.0, log, user=user, python=python)
    assert joined(other) == 6
    assert other.wait(timeout=20) == 0
    assert [n for n, _, _ in turns(log)] == [2, 6]
    assert dead.exists()  # nobody may not remove it, and did not wait for it
    again = join(DEVICE, root)
    assert again.number == 6 and again.ahead() == 0 and not dead.exists()
    again.leave()


def test_a_ticket_left_twice_is_harmless(tmp_path: Path) -> None:
    ticket: Ticket = join(DEVICE, tmp_path)
    assert ticket.try_take()
    ticket.leave()
    ticket.leave()
    assert not ticket.holding


def test_one_passed_over_that_comes_back_waits_for_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stopped ticket is passed over; when it comes back the one that took the device holds
    it (its `holder-` mark), so the two never time at once."""
    monkeypatch.setattr(device_queue, "STALE_S", 0.5)
    early = join(DEVICE, tmp_path)
    late = join(DEVICE, tmp_path)
    assert not late.try_take() and late.last_ahead == 1
    time.sleep(0.7)  # `early` stops beating (as if stopped)
    assert late.try_take() and late.name.startswith("holder-")
    late.beat(every_s=0)
    early.beat(every_s=0)  # it comes back, with the smaller number
    assert not early.try_take() and early.last_ahead == 1
    late.leave()
    assert early.try_take()
    early.leave()
    assert [n for n in os.listdir(tmp_path / device_folder_name(DEVICE)) if n != "lock"] == []


def test_shared_turns_run_side_by_side_and_never_beside_an_exclusive_one(tmp_path: Path) -> None:
    """Correctness runs (shared) overlap each other; a timed phase (exclusive) waits for the
    shared holders before it, and shared tickets after a waiting exclusive one wait for it."""
    queue = tmp_path / "q"
    first, second = join(DEVICE, queue, shared=True), join(DEVICE, queue, shared=True)
    assert first.try_take() and second.try_take()  # both at once
    assert first.name.endswith("-shared") and second.name.startswith("holder-")
    timed = join(DEVICE, queue)
    assert not timed.try_take() and timed.last_ahead == 2  # the two shared holders
    later = join(DEVICE, queue, shared=True)
    assert not later.try_take() and later.last_ahead == 1  # behind the timed one, first come first served
    first.leave()
    second.leave()
    assert timed.try_take()
    assert not later.try_take() and later.last_ahead == 1  # never beside a timed phase
    timed.leave()
    assert later.try_take()
    after = join(DEVICE, queue)
    assert not after.try_take() and after.last_ahead == 1
    later.leave()
    assert after.try_take()
    after.leave()


def test_occupancy_counts_overlapping_turns_once_and_exclusive_ones_apart(tmp_path: Path) -> None:
    """From a queue log: busy (any turn held, overlaps once), exclusive (timed turns), span."""
    log = tmp_path / "log"
    lines = []
    for device, pid, ticket, shared, taken, released in [
            ("gpu0", 1, 1, True, 0.0, 2.0), ("gpu0", 2, 2, True, 1.0, 3.0),  # shared, overlapping: 0..3
            ("gpu0", 1, 3, False, 4.0, 6.0),  # exclusive: 2 s, after a 1 s gap
            ("gpu0", 2, 4, False, 6.5, 7.0),
            ("gpu0", 3, 5, False, 8.0, None),  # never released: left out
            ("gpu1", 4, 1, False, 10.0, 11.0)]:
        lines.append({"event": "take", "t": taken, "pid": pid, "ticket": ticket, "device": device, "shared": shared})
        if released is not None:
            lines.append({"event": "release", "t": released, "pid": pid, "ticket": ticket, "device": device,
                          "shared": shared})
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = device_queue.occupancy(log)
    assert found == {"gpu0": (5.5, 2.5, 7.0), "gpu1": (1.0, 1.0, 1.0)}


def test_session_parts_add_each_part_and_pass_over_other_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """record() appends a line where LAB_DEVICE_QUEUE_LOG is set; session_parts adds the seconds
    of each part over the sessions and passes over turns and lines it cannot read."""
    log = tmp_path / "log"
    monkeypatch.setenv("LAB_DEVICE_QUEUE_LOG", str(log))
    device_queue.record(device_queue.SESSION_EVENT, part="members' windows", s=0.25)
    device_queue.record(device_queue.SESSION_EVENT, part="members' windows", s=0.5)
    device_queue.record(device_queue.SESSION_EVENT, part="members' blocks", s=1.0)
    device_queue.record("take", ticket=1, device="gpu0", shared=False)
    with log.open("a") as out:
        out.write("not json\n" + json.dumps({"event": "session", "part": "x"}) + "\n")
    assert device_queue.session_parts(log) == {"members' windows": 0.75, "members' blocks": 1.0}
    assert len(device_queue.turns(log)) == 1  # the take, never released
    monkeypatch.delenv("LAB_DEVICE_QUEUE_LOG")
    device_queue.record(device_queue.SESSION_EVENT, part="members' blocks", s=1.0)
    assert device_queue.session_parts(log)["members' blocks"] == 1.0
