"""The course server under a class's load: acknowledgement latency, nothing lost, the drain rate.

Starts `lab serve` on 127.0.0.1 (a free port, a fresh SQLite file or --database URL), issues
--students tokens, then each student sends --each different versions of a kernel (the stage's
reference, or --kernel, with a distinct comment), --clients at a time, spread over --spread
seconds. It reports the acknowledgement latency (upload to the server's 202: stored and
queued) p50/p99/max, then waits for the queue to drain and reports the grading rate, and checks
that every acknowledged submission was graded, exactly once (its gradings started: 1, none
failed). With --kill-after N the server is killed (kill -9) after the Nth acknowledgement and
started again: then a submission being graded at the kill may be graded twice (its first grading
never finished), none may be lost.

Here on PoCL (bounded: 60 gradings, about a minute on two cores):

    python3 benchmarks/server_load.py --students 30 --each 2 --clients 8 --spread 10

On the GPU machine, the issue's load (300 students, 2 each, in 10 minutes), a kill in the middle:

    python3 benchmarks/server_load.py --students 300 --each 2 --spread 600 --kill-after 300 --device 0

--workers N grades in N `lab work` processes instead of the server (lab serve --no-local), and
--kill-worker-after K kills the first of them (kill -9 of its process group, its grading with it)
after the Kth acknowledgement and starts it again: its submission is queued again when --lease
ends and graded by a worker, never lost.

Each upload is a kernel of the benchmark's own making (`own_kernel`: the kernel with a statement
of its own in its body, which the compiler drops): a new source that is not the reference as the
source check sees it (a comment or a `#define` line alone would be the reference, and refused). --gpus / --cpu-lanes are lab serve's
lanes; --batch-compare then grades the same number of such files with `lab batch` on the same
devices (--gpus, --cpu-lanes as --jobs) and prints both rates and their ratio. --follow has each
student follow each of its acknowledged submissions as `lab submit` does (long polls), and
prints how long after a grading's end its follower saw it, and how many polls that took.
--counters on|off
makes both read the hardware counters, or neither (by default the server reads them where no
other grading waits or runs, and lab batch does not: under load the two then grade alike).

Progress goes to stderr, the figures to stdout (--json FILE: as JSON too). Needs the server extra.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))



FOLLOW_WAIT_S = 20  # a follower's long poll, as lab submit's


def own_kernel(source: bytes, mark: int) -> bytes:
    """`source` with `int lab_load_mark = MARK; (void)lab_load_mark;` at the start of its first
    function body: the same kernel to the compiler (the statement is dropped), another program to
    the source check, so it is graded rather than refused as the reference or deduplicated."""
    text = source.decode("utf-8")
    body = text.index("{", text.index("(")) + 1
    return (text[:body] + f" int lab_load_mark = {mark}; (void)lab_load_mark;" + text[body:]).encode("utf-8")

def with_root(environ: os._Environ[str] | dict[str, str]) -> dict[str, str]:
    """The environment with this checkout first on PYTHONPATH (what was there kept after it)."""
    kept = environ.get("PYTHONPATH", "")
    return {**environ, "PYTHONPATH": str(ROOT) + (os.pathsep + kept if kept else "")}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, database: str, log: Path, devices: list[str], lanes: list[str] | None = None):
        self.database, self.log, self.devices = database, log, devices
        self.lanes = lanes or []  # lab serve's lane options (--gpus N, --cpu-lanes N)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        import httpx

        env = with_root(os.environ)
        command = [sys.executable, "-m", "lab", "serve", "--database", self.database, "--port", str(self.port)]
        for device in self.devices:
            command += ["--device", device]
        command += self.lanes
        with open(self.log, "ab") as sink:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        for _ in range(600):
            if self.process.poll() is not None:
                raise SystemExit(f"lab serve ended ({self.process.returncode}); see {self.log}")
            try:
                if httpx.get(f"{self.url}/api/whoami", timeout=2).status_code == 401:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"lab serve did not answer in 60 s; see {self.log}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # a grading worker a killed server left behind
        except ProcessLookupError:
            pass


def batch_rate(args: argparse.Namespace, source: bytes, count: int, folder: Path) -> dict:
    """`lab batch` of the same submissions (one student folder each) on the same devices: its
    gradings per minute between the first grading's end and the last one's (graded_at, to the
    second), and over its whole wall time."""
    from datetime import datetime

    classroom, out = folder / "class", folder / "batch-out"
    suffix = (args.kernel.suffix if args.kernel else ".cl")
    for n in range(count):
        student = classroom / f"student{n:04d}"
        student.mkdir(parents=True)
        (student / f"{args.stage}{suffix}").write_bytes(own_kernel(source, 1_000_000 + n))
    command = [sys.executable, "-m", "lab", "batch", "run", str(classroom), "--out", str(out)]
    command += (["--gpus", args.gpus] if args.gpus else []) + (["--jobs", str(args.cpu_lanes)] if args.cpu_lanes else [])
    command += ["--counters"] if args.counters == "on" else []  # as the server reads them (its default)
    print(f"lab batch of {count} submissions: {' '.join(command[3:])}", file=sys.stderr)
    begun = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=with_root(os.environ), capture_output=True,
                          text=True)
    wall = time.monotonic() - begun
    finished = sorted(datetime.fromisoformat((json.loads(r.read_text()).get("batch") or {})["graded_at"])
                      for r in out.glob("*/*/result.json"))
    graded = len(finished)
    seconds = (finished[-1] - finished[0]).total_seconds() if graded > 1 else 0.0
    rate = 60 * (graded - 1) / seconds if seconds > 0 else None  # between the first grading's end and the last's
    return {"batch_exit": done.returncode, "batch_graded": graded, "batch_wall_s": wall,
            "batch_gradings_per_minute": rate, "batch_gradings_per_minute_wall": 60 * graded / wall}


class Worker:
    """One `lab work` process taking the server's submissions over HTTP."""

    def __init__(self, url: str, token: str, log: Path, lanes: list[str]):
        self.url, self.token, self.log, self.lanes = url, token, log, lanes
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "lab", "work", self.url, "--token", self.token, *self.lanes]
        with open(self.log, "ab") as sink:
            self.process = subprocess.Popen(command, cwd=ROOT, env=with_root(os.environ),
                                            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        """kill -9 of the worker and the grading it runs (its process group)."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--each", type=int, default=2, help="submissions per student")
    parser.add_argument("--clients", type=int, default=8, help="uploads at a time")
    parser.add_argument("--spread", type=float, default=10.0, help="seconds the uploads are spread over")
    parser.add_argument("--stage", default="transpose_coalesced")
    parser.add_argument("--kernel", type=Path, help="the kernel sent (default: the stage's reference .cl)")
    parser.add_argument("--database", help="a database URL (default: a fresh SQLite file)")
    parser.add_argument("--device", action="append", default=[], help="a grading lane's device (repeatable)")
    parser.add_argument("--gpus", help="lab serve --gpus (and lab batch run --gpus for --batch-compare): a count or indices")
    parser.add_argument("--cpu-lanes", type=int, help="lab serve --cpu-lanes (lab batch run --jobs for --batch-compare)")
    parser.add_argument("--batch-compare", action="store_true",
                        help="then grade the same submissions with lab batch on the same devices and compare the rates")
    parser.add_argument("--kill-after", type=int, default=0, help="kill -9 the server after this many acks")
    parser.add_argument("--workers", type=int, default=0,
                        help="grade in this many `lab work` processes (lab serve --no-local), each with the lanes above")
    parser.add_argument("--kill-worker-after", type=int, default=0,
                        help="kill -9 the first worker (and its grading) after this many acks, then start it again")
    parser.add_argument("--lease", type=float, default=20.0,
                        help="lab serve --lease: seconds before a dead worker's submission is queued again")
    parser.add_argument("--drain-limit", type=float, default=3600.0, help="seconds to wait for the queue")
    parser.add_argument("--json", type=Path, help="write the figures to this file too")
    parser.add_argument("--follow", action="store_true",
                        help="each student follows each acknowledged submission as lab submit does (long polls): "
                        "the delay from its grading's end to its follower seeing it, and the polls it took")
    parser.add_argument("--counters", choices=("on", "off", "as-default"), default="as-default",
                        help="the hardware counters in both the server's and --batch-compare's gradings: on (the "
                        "batch with --counters, the server with --busy-counters), off (LAB_COUNTERS=off for both), "
                        "as-default (each as it is by default: the server reads them where no other grading waits, "
                        "lab batch does not)")
    args = parser.parse_args()
    if args.counters == "off":
        os.environ["LAB_COUNTERS"] = "off"  # the server's and the batch's environments are this one's

    import httpx

    from lab.server.database import Store, sqlite_url
    from lab.server.states import Role

    kernel = args.kernel or ROOT / "reference" / args.stage / "solution.cl"
    source = kernel.read_bytes()
    folder = Path(tempfile.mkdtemp(prefix="lab-server-load-"))
    database = args.database or sqlite_url(folder / "lab.db")
    store = Store(database)
    tokens = [store.issue_token(f"student{n:04d}") for n in range(args.students)]
    teacher = store.issue_token("benchmark-instructor", role=Role.INSTRUCTOR)
    worker_tokens = [store.issue_token(f"benchmark-worker{n}", role=Role.WORKER) for n in range(args.workers)]
    store.close()
    lanes = (["--gpus", args.gpus] if args.gpus else []) + (["--cpu-lanes", str(args.cpu_lanes)] if args.cpu_lanes else [])
    # on: every server grading reads them, with others waiting too (lab serve --busy-counters)
    busy = ["--busy-counters"] if args.counters == "on" else []
    server = Server(database, folder / "server.log", args.device,
                    lanes + busy + (["--no-local", "--lease", str(args.lease)] if args.workers else []))
    server.start()
    workers = [Worker(server.url, token, folder / f"worker{n}.log", lanes) for n, token in enumerate(worker_tokens)]
    for worker in workers:
        worker.start()
    worker_killed = threading.Event()
    print(f"lab serve at {server.url}, database {database}", file=sys.stderr)

    jobs = [(n, k) for k in range(args.each) for n in range(args.students)]
    gap = args.spread / max(1, len(jobs))
    latencies: list[float] = []
    acknowledged: list[int] = []
    refused: list[str] = []
    lock = threading.Lock()
    killed = threading.Event()
    begun = time.monotonic()

    followers: list[threading.Thread] = []
    followed: dict[int, tuple[datetime, int]] = {}  # --follow: id -> (when its follower saw it end, its GETs)

    def follow(submission_id: int, token: str) -> None:
        """As `lab submit` follows its grading: long polls until it is done or failed."""
        polls = 0
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"},
                          timeout=60 + FOLLOW_WAIT_S) as http:
            while time.monotonic() < begun + args.drain_limit:
                try:
                    shown = http.get(f"/api/submissions/{submission_id}", params={"wait": FOLLOW_WAIT_S}).json()
                except (httpx.HTTPError, ValueError):
                    time.sleep(0.5)  # the server is down (a kill): ask again
                    continue
                polls += 1
                if shown.get("state") in ("done", "failed"):
                    with lock:
                        followed[submission_id] = (datetime.now(UTC), polls)
                    return

    def send(index: int, job: tuple[int, int]) -> None:
        delay = begun + index * gap - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        student, version = job
        body = own_kernel(source, student * 1000 + version)  # a new source, graded anew
        for _ in range(200):  # while the server is down after a kill: send again
            try:
                started = time.perf_counter()
                answer = httpx.post(f"{server.url}/api/submissions", data={"stage": args.stage},
                                    files={"file": ("kernel.cl", body, "text/plain")},
                                    headers={"Authorization": f"Bearer {tokens[student]}"}, timeout=60)
                took = time.perf_counter() - started
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            with lock:
                refused.append(f"student {student} version {version}: the server never answered")
            return
        with lock:
            if answer.status_code == 202:
                latencies.append(took)
                acknowledged.append(answer.json()["id"])
                if args.follow:  # as lab submit: from its acknowledgement on
                    follower = threading.Thread(target=follow, args=(answer.json()["id"], tokens[student]), daemon=True)
                    follower.start()
                    followers.append(follower)
                if args.kill_after and len(acknowledged) == args.kill_after and not killed.is_set():
                    killed.set()
                    server.kill()
                    print(f"kill -9 after {len(acknowledged)} acknowledgements", file=sys.stderr)
                    server.start()
                if args.kill_worker_after and len(acknowledged) == args.kill_worker_after and workers \
                        and not worker_killed.is_set():
                    worker_killed.set()
                    workers[0].kill()
                    print(f"kill -9 of a worker after {len(acknowledged)} acknowledgements", file=sys.stderr)
                    workers[0].start()
            else:
                refused.append(f"{answer.status_code} {answer.text[:200]}")

    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(lambda item: send(*item), enumerate(jobs)))
    sent_s = time.monotonic() - begun
    print(f"{len(acknowledged)} acknowledged in {sent_s:.1f} s; waiting for the queue", file=sys.stderr)

    auth = {"Authorization": f"Bearer {teacher}"}
    deadline = time.monotonic() + args.drain_limit
    while time.monotonic() < deadline:
        shown = httpx.get(f"{server.url}/api/submissions", headers=auth, timeout=60).json()
        left = sum(s["state"] in ("queued", "grading") for s in shown)
        if not left:
            break
        print(f"  {left} still queued or grading", file=sys.stderr)
        time.sleep(5)
    drained_s = time.monotonic() - begun
    for thread in followers:
        thread.join(max(0.0, begun + args.drain_limit - time.monotonic()) + 1)
    for worker in workers:
        worker.kill()
    server.stop()

    store = Store(database)
    stored = {s.id: s for s in store.submissions()}
    store.close()
    graded = [stored[i] for i in acknowledged if i in stored and stored[i].state == "done"]
    first, last = (min(s.started_at for s in graded), max(s.finished_at for s in graded)) if graded else (None, None)
    figures = {
        "submissions": len(jobs), "acknowledged": len(acknowledged), "refused": refused,
        "ack_p50_s": statistics.median(latencies) if latencies else None,
        "ack_p99_s": percentile(latencies, 0.99) if latencies else None,
        "ack_max_s": max(latencies) if latencies else None,
        "lost": sorted(set(acknowledged) - set(stored)),
        "not_graded": sorted(i for i in acknowledged if i in stored and stored[i].state != "done"),
        "graded_more_than_once": sorted(i for i in acknowledged if i in stored and stored[i].attempts > 1),
        "sent_s": sent_s, "drained_s": drained_s,
        "gradings_per_minute": (60 * len(graded) / (last - first).total_seconds()) if graded else None,
        "killed": killed.is_set(), "worker_killed": worker_killed.is_set(), "workers": args.workers, "lanes": " ".join(lanes) or f"--device x{len(args.device)}" if args.device else "planned",
    }
    if args.follow:
        delays = [(seen - stored[i].finished_at).total_seconds() for i, (seen, _) in followed.items()
                  if i in stored and stored[i].finished_at is not None]
        polls = [count for _, count in followed.values()]
        figures.update({"followed": len(followed), "follow_delay_p50_s": statistics.median(delays) if delays else None,
                        "follow_delay_p99_s": percentile(delays, 0.99) if delays else None,
                        "follow_polls_p50": statistics.median(polls) if polls else None,
                        "follow_polls_max": max(polls) if polls else None})
    if args.batch_compare:
        figures.update(batch_rate(args, source, len(jobs), folder))
        if figures["gradings_per_minute"] and figures.get("batch_gradings_per_minute"):
            figures["server_over_batch"] = figures["gradings_per_minute"] / figures["batch_gradings_per_minute"]
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(f"{key:24} {shown}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    ok = not figures["lost"] and not figures["not_graded"] and not refused and (
        args.kill_after or args.kill_worker_after or not figures["graded_more_than_once"])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
