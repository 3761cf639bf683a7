"""What a request may be, over raw sockets and HTTP against a real `lab serve` on loopback: a
request without a valid token is refused before any byte of its body is read; a body is bounded
by its route (a declared length over it refused at once) and in time (a stalled or trickling one
cut off); an id no submission can have is 404, a JSON body nested too deeply 400, each with one
line, never a traceback."""

from __future__ import annotations

import json
import select
import socket
import time
from dataclasses import dataclass

import pytest

from lab.server.states import Role
from tests.server.running import EXAMPLE, RunningServer, client, needs_server_extra, signin_token, submit

pytestmark = needs_server_extra
BODY_TIMEOUT_S = 1.0  # the server's --body-timeout here
ANSWER_S = 10.0  # an answer that comes at all comes well within this
MIB = 1 << 20


@dataclass(frozen=True)
class Tokens:
    alice: str
    teacher: str
    worker: str


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after it
    seconds: float  # from the request's headers sent to the answer read

    @property
    def detail(self) -> str:
        return json.loads(self.body)["detail"]


@pytest.fixture(scope="module")
def limits_server(tmp_path_factory):
    """A server grading nothing itself (--no-local), with a short body timeout."""
    from lab.server.database import Store, sqlite_url

    folder = tmp_path_factory.mktemp("limits")
    store = Store(sqlite_url(folder / "lab.db"))
    try:
        tokens = Tokens(store.issue_token("alice"), store.issue_token("teacher", role=Role.INSTRUCTOR),
                        store.issue_token("gpu-host", role=Role.WORKER))
    finally:
        store.close()
    server = RunningServer(folder / "lab.db", folder / "server.log", "--no-local", "--body-timeout",
                           str(BODY_TIMEOUT_S)).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def connect(server: RunningServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_S)


def head(method: str, path: str, length: int | None, token: str | None = None,
         content_type: str = "application/json") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket, started: float) -> Answer:
    """The server's answer: read to its end, then whether the connection closed after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed with no answer: {data!r}"
        data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    while len(rest) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside the answer"
        rest += chunk
    seconds = time.monotonic() - started
    sock.settimeout(ANSWER_S)
    try:
        closed = sock.recv(1) == b""
    except ConnectionResetError:
        closed = True
    except TimeoutError:
        closed = False
    return Answer(int(status_line.split()[1]), headers, rest, closed, seconds)


def send_head_only(server: RunningServer, request: bytes) -> Answer:
    """Send a request's headers and none of its body; the answer."""
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(request)
        return read_answer(sock, started)


def one_line(answer: Answer) -> str:
    detail = answer.detail
    assert detail and "\n" not in detail and "Traceback" not in detail, detail
    return detail


def detail_of(answer) -> str:
    """An httpx answer's one-line reason."""
    return one_line(Answer(answer.status_code, {}, answer.content, False, 0))


@pytest.mark.parametrize(("path", "declared"), [
    ("/api/worker/1/result", 31 * MIB),  # the worker's report: the widest limit
    ("/api/worker/claim", 60 * 1024),
    ("/api/submissions", 300 * 1024),
    ("/api/leaderboard/opt-in", 60 * 1024),
])
@pytest.mark.parametrize("token", [None, "lab_not-a-token"], ids=["no-token", "bad-token"])
def test_a_request_without_a_valid_token_is_refused_before_its_body_is_sent(limits_server, path, declared, token):
    """Issue 35: 30 such connections, each stalling 31 MiB in, held 1.1 GB of the server's memory."""
    server, _ = limits_server
    answer = send_head_only(server, head("POST", path, declared, token))
    assert answer.status == 401, answer  # not 408: the server never waited for the body
    assert "token" in one_line(answer)
    assert answer.headers.get("connection") == "close" and answer.closed  # the body is never read


def test_a_token_of_the_wrong_role_is_refused_before_the_body_too(limits_server):
    server, tokens = limits_server
    for path, token in (("/api/worker/1/result", tokens.alice), ("/api/submissions", tokens.worker),
                        ("/api/submissions/1/mark", tokens.alice)):
        answer = send_head_only(server, head("POST", path, 60 * 1024, token))
        assert answer.status == 403 and answer.closed, (path, answer)


def test_many_unauthenticated_bodies_cost_the_server_no_memory(limits_server):
    """30 connections each send 2 MiB of a declared 31 MiB worker's report, without a token."""
    server, _ = limits_server
    assert server.process is not None

    def rss_kib() -> int:
        status = open(f"/proc/{server.process.pid}/status").read()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))

    before = rss_kib()
    sockets = [connect(server) for _ in range(30)]
    try:
        for sock in sockets:
            sock.sendall(head("POST", "/api/worker/1/result", 31 * MIB))
            sock.settimeout(0.5)
            try:
                for _ in range(32):
                    sock.sendall(b"[" * 65536)
            except OSError:
                pass  # the server answered 401 and closed: it takes no more
        for sock in sockets:
            sock.settimeout(ANSWER_S)
            assert read_answer(sock, time.monotonic()).status == 401
    finally:
        for sock in sockets:
            sock.close()
    assert rss_kib() - before < 32 * 1024, f"the server grew by {(rss_kib() - before) >> 10} MiB"


@pytest.mark.parametrize(("path", "declared", "who"), [
    ("/api/submissions", 1 * MIB, "alice"),  # over the upload's limit
    ("/api/submissions", 1 << 30, None),  # without a token, too: refused for its size at once
    ("/api/leaderboard/opt-in", 1 * MIB, "alice"),  # a JSON route takes a small body
    ("/api/submissions/1/mark", 1 * MIB, "teacher"),
    ("/api/worker/claim", 1 * MIB, "worker"),
    ("/api/worker/1/result", 33 * MIB, "worker"),  # over even a report's limit
    ("/signin", 1 * MIB, None),
])
def test_a_declared_length_over_the_routes_limit_is_refused_at_once(limits_server, path, declared, who):
    server, tokens = limits_server
    answer = send_head_only(server, head("POST", path, declared, getattr(tokens, who) if who else None))
    assert answer.status == 413, answer  # not 408: the server never waited for the body
    assert "limit" in one_line(answer)
    assert answer.closed


def test_a_body_that_stalls_is_cut_off_within_the_timeout(limits_server):
    server, tokens = limits_server
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(head("POST", "/api/submissions", 5000, tokens.alice, "multipart/form-data; boundary=b"))
        sock.sendall(b"--b\r\nContent-Disposition: form-data; name=\"stage\"\r\n\r\n")  # then nothing
        answer = read_answer(sock, started)
    assert answer.status == 408, answer
    assert f"within {BODY_TIMEOUT_S:g} s" in one_line(answer)
    assert BODY_TIMEOUT_S * 0.9 <= answer.seconds < BODY_TIMEOUT_S + 5, answer.seconds
    assert answer.closed
    with client(server, tokens.alice) as http:  # the server goes on as before
        assert submit(http, EXAMPLE.read_bytes()).status_code == 202


def test_a_body_that_trickles_in_is_cut_off_within_the_timeout_all_the_same(limits_server):
    """A byte every 0.1 s: never idle, but the whole body is late."""
    server, tokens = limits_server
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(head("POST", "/api/worker/claim", 200, tokens.worker))
        for _ in range(int(BODY_TIMEOUT_S * 30)):
            if select.select([sock], [], [], 0.1)[0]:
                break  # the answer is here
            sock.sendall(b" ")
        answer = read_answer(sock, started)
    assert answer.status == 408, answer
    assert answer.seconds < BODY_TIMEOUT_S + 5, answer.seconds


HUGE = [1 << 63, (1 << 64) + 5, -(1 << 63) - 1, 10 ** 30]


@pytest.mark.parametrize("number", HUGE)
def test_an_id_no_submission_can_have_is_not_found(limits_server, number):
    server, tokens = limits_server
    with client(server, tokens.teacher) as http:
        for answer in (http.get(f"/api/submissions/{number}"), http.get(f"/api/submissions/{number}/feedback"),
                       http.post(f"/api/submissions/{number}/regrade"),
                       http.post(f"/api/submissions/{number}/mark", json={"mark": "held"})):
            assert answer.status_code == 404, answer.text
            assert str(number) in detail_of(answer)
    with client(server, tokens.worker) as http:
        for verb in ("renew", "result", "fail"):
            answer = http.post(f"/api/worker/{number}/{verb}", json={"attempt": 1, "reason": "r"})
            assert answer.status_code == 404, (verb, answer.text)
    with client(server, None) as http:  # the browser's page of it
        answer = http.post("/signin", data={"token": tokens.alice, "csrf": signin_token(http)}, follow_redirects=True)
        assert answer.status_code == 200 and "Submit a kernel" in answer.text
        page = http.get(f"/submissions/{number}")
        assert page.status_code == 404 and "no submission" in page.text


def test_an_attempt_or_id_of_any_size_is_answered_in_one_line(limits_server):
    server, tokens = limits_server
    with client(server, tokens.alice) as http:
        assert submit(http, EXAMPLE.read_bytes() + b"\n// to claim\n").status_code in (200, 202)
        word = http.get("/api/submissions/first")
        assert word.status_code == 422 and "submission_id" in detail_of(word)
    with client(server, tokens.worker) as http:
        claimed = http.post("/api/worker/claim")
        assert claimed.status_code == 200, claimed.text
        number = claimed.json()["id"]
        wrong = http.post(f"/api/worker/{number}/renew", json={"attempt": 1 << 80})
        assert wrong.status_code == 409 and "no longer yours" in detail_of(wrong)
        assert http.post(f"/api/worker/{number}/fail", json={"attempt": claimed.json()["attempt"],
                                                             "reason": "handed back"}).status_code == 200
        long = http.post(f"/api/worker/{'9' * 5000}/renew", json={"attempt": 1})
        assert long.status_code in (404, 422), long.text
        detail_of(long)


@pytest.mark.parametrize(("path", "who", "levels"), [
    ("/api/worker/1/result", "worker", 100_000),  # the one route whose limit takes 200 KB of brackets
    ("/api/worker/claim", "worker", 30_000),
    ("/api/submissions/1/mark", "teacher", 30_000),
    ("/api/leaderboard/opt-in", "alice", 30_000),
    ("/api/worker/1/renew", "worker", 100),  # deep enough to refuse, shallow enough to parse
])
def test_a_deeply_nested_json_body_is_refused_in_one_line(limits_server, path, who, levels):
    server, tokens = limits_server
    with client(server, getattr(tokens, who)) as http:
        answer = http.post(path, content=b"[" * levels + b"]" * levels, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "deeper than" in detail_of(answer)


def test_a_json_body_as_deep_as_a_report_is_taken(limits_server):
    server, tokens = limits_server
    nested: object = {"shown": True}
    with client(server, tokens.alice) as http:
        for _ in range(10):
            nested = {"shown": True, "more": [nested]}
        answer = http.post("/api/leaderboard/opt-in", json=nested)
    assert answer.status_code == 200, answer.text
