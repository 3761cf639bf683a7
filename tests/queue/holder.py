"""A process in a device's queue, for tests/queue: `python -m tests.queue.holder ROOT DEVICE
HOLD_S LOG` joins ROOT's queue for DEVICE, says `joined <number>` on stdout, waits for its turn
(beating), holds the device HOLD_S seconds (a negative HOLD_S: until killed), appends
`<number> <taken> <released>` to LOG and leaves."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from grader import device_queue


def main() -> int:
    root, device, hold_s, log = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
    ticket = device_queue.join(device, root)
    print(f"joined {ticket.number}", flush=True)
    while not ticket.try_take():
        ticket.beat()
        time.sleep(0.01)
    taken = time.time()
    print("took", flush=True)
    end = time.monotonic() + hold_s
    while hold_s < 0 or time.monotonic() < end:
        ticket.beat()
        time.sleep(0.01)
    released = time.time()
    with log.open("a") as out:
        out.write(f"{ticket.number} {taken} {released}\n")
    ticket.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main())
