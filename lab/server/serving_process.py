"""Who a `lab serve` process is, as the database records the gradings its own lanes hold.

Several servers may share one database (PostgreSQL). Each process has an identity,
`HOST/PID/NONCE`: its claims carry it, so that it renews only its own leases, and so that a
server starting on the same host can tell a claim of a process that is gone (its pid no longer
runs, or is now another process: the nonce differs) and queue it again at once, without waiting
for the lease to end."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class ServingProcess:
    host: str
    pid: int
    nonce: str

    @classmethod
    def this_one(cls) -> ServingProcess:
        return cls(socket.gethostname(), os.getpid(), secrets.token_hex(6))

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.nonce}"

    @classmethod
    def parse(cls, text: str) -> ServingProcess | None:
        """The identity a claim carries; None for text of another form."""
        host, _, rest = text.rpartition("/")
        host, _, pid = host.rpartition("/")
        if not host or not pid.isdigit() or not rest:
            return None
        return cls(host, int(pid), rest)

    def knows_gone(self, other: ServingProcess) -> bool:
        """Whether `other`, a process on this same host, has certainly ended: its pid is not
        running, or is this process (so not `other`). False for another host's process."""
        if other.host != self.host or other == self:
            return False
        if other.pid == self.pid:
            return True
        try:
            os.kill(other.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # a process of another user runs there now: not a lab serve of ours
            return False
        return False
