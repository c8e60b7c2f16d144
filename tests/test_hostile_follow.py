"""`follow FILE` loses nothing at a copytruncate (logrotate's `copytruncate`: the file is copied to
PATH.1, then truncated): what the writer added after the follower's last read is only in the copy, and
the follower reads it from there, as the ssh follower does. A real file, a real writer at 5,000 lines a
second, the copy and the truncation made between two of its writes, so that every line is somewhere."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from tracelens.sources.events import LinesAppended
from tracelens.sources.tail import FileFollower

RATE = 5000  # lines a second
SECONDS = 4.0
ROTATE_EVERY = 0.25


def test_follow_reads_every_line_across_copytruncate(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    received: list[bytes] = []
    lock = threading.Lock()

    def emit(event: object) -> None:
        if isinstance(event, LinesAppended):
            with lock:
                received.extend(event.data.splitlines())

    stop = threading.Event()
    follower = FileFollower(log, "server.log", poll=0.01)
    thread = threading.Thread(target=follower.run, args=(emit, stop), daemon=True)
    thread.start()
    written = 0
    rotations = 0
    started = time.monotonic()
    next_rotation = started + ROTATE_EVERY
    with open(log, "ab", buffering=0) as out:  # O_APPEND: after a truncation writes go to the new end
        while time.monotonic() - started < SECONDS:
            target = int((time.monotonic() - started) * RATE)
            if target > written:
                out.write(b"".join(b"line %09d of the soak\n" % n for n in range(written, target)))
                written = target
            if time.monotonic() >= next_rotation:
                shutil.copyfile(log, tmp_path / "server.log.1")
                os.truncate(log, 0)
                rotations += 1
                next_rotation += ROTATE_EVERY
            time.sleep(0.002)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lock:
            if len(received) >= written:
                break
        time.sleep(0.05)
    time.sleep(0.2)  # a duplicate would arrive now
    stop.set()
    thread.join(timeout=10)
    assert rotations >= 10
    numbers = [int(line.split()[1]) for line in received]
    missing = sorted(set(range(written)) - set(numbers))
    assert not missing, f"{len(missing)} of {written} lines lost over {rotations} copytruncates"
    assert numbers == list(range(written)), "lines repeated or out of order"
