"""The soak of a live source, shared by tests/test_soak.py (60 s in `make test`) and
bench/soak_follow.py (30 minutes): a writer at a steady rate, rotation every few seconds (rename, then
copytruncate, in turn; or copytruncate only), for an ssh source connections dropped on the client and
the server side; then every line written must have been received exactly once, in order.

Lines are counted as the session indexes them (`Tally`, a listener), not read back at the end: the log
index keeps only each source's newest lines (its scroll-back limit), and the count must not depend on it."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from live_support import ssh_session, wait_for

from tracelens.live import LiveSession
from tracelens.live.events import LinesIndexed
from tracelens.sources import events as src
from tracelens.sources.ssh import Backoff

LINE = "[2026-11-20 10:00:00 TP0] Decode batch, #running-req: 1, accept len: 2.50, soak {:09d}\n"


class Tally:
    """Every soak line's number, counted once per time it reaches the log index (in a fixed array
    allocated before the run: the count adds nothing to the memory measured)."""

    def __init__(self, session: LiveSession, most: int) -> None:
        self.session = session
        self.seen = np.zeros(most, dtype=np.uint8)
        self.seen.fill(0)  # touched now: calloc'd pages would otherwise be committed as the run goes
        self.received = 0
        self.last = -1
        self.in_order = True
        self.malformed = 0  # lines without a soak number, or numbers beyond what can be written

    def __call__(self, event: object) -> None:
        # Called on the session's pump thread right after it indexed these lines: they are the
        # source's newest, held whatever its scroll-back limit (a batch is far below it).
        if not isinstance(event, LinesIndexed) or not event.count:
            return
        lines = self.session.index.lines[0]
        first = lines.held - event.count
        start = int(lines.offset.data[first])
        end = int(lines.offset.data[lines.held - 1] + lines.length.data[lines.held - 1])
        block = lines.store.read(start, end - start)
        numbers = np.array([int(n) for n in re.findall(rb" soak (\d{9})(?:\n|$)", block)], dtype=np.int64)
        self.malformed += event.count - len(numbers)
        good = numbers[numbers < len(self.seen)]
        self.malformed += len(numbers) - len(good)
        if len(good):
            self.in_order &= bool(good[0] > self.last) and bool((np.diff(good) > 0).all())
            self.last = int(good[-1])
            np.add.at(self.seen, good, 1)
        self.received += len(numbers)

    def result(self, written: int) -> dict:
        distinct = int((self.seen > 0).sum())
        return {
            "received": self.received,
            "lost": int((self.seen[:written] == 0).sum()),
            "repeated": self.received - distinct,
            "in_order": self.in_order,
            "malformed": self.malformed,
        }


# Where the memory is: this process (the session and the harness), the live worker, the rest (ssh, sshd).
ROLES = ("session and harness", "live worker", "ssh, sshd and the rest")


def _rss_by_role(process: psutil.Process) -> tuple[float, float, float]:
    """RSS in MiB of a process, of its live worker and of its other descendants (``ROLES``); a child
    that ends while it is read counts as nothing."""
    own, worker, rest = process.memory_info().rss, 0, 0
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            rss = child.memory_info().rss
            if "tracelens.live.worker" in " ".join(child.cmdline()):
                worker += rss
            else:
                rest += rss
    return own / 2**20, worker / 2**20, rest / 2**20


def _slope(times: np.ndarray, mib: np.ndarray) -> float:
    """MiB a minute of a line fitted to the samples."""
    return float(np.polyfit(times, mib, 1)[0] * 60) if len(times) > 1 else 0.0


def _children(pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(pid).children()]


RENAME, COPYTRUNCATE = "rename", "copytruncate"


def _writer(
    log: Path,
    rate: int,
    seconds: float,
    rotate_every: float,
    stop: threading.Event,
    out: dict,
    rotations_by: tuple[str, ...],
) -> None:
    """Write ``rate`` lines a second in 100 slices a second; rotate between writes (so that the writer
    itself loses nothing) by each of ``rotations_by`` in turn: rename to `.N` and start a new file, or
    copy to `.N` and truncate (logrotate's `copytruncate`)."""
    n = 0
    rotations = 0
    started = time.monotonic()
    next_rotation = started + rotate_every
    fh = log.open("a")
    while not stop.is_set():
        now = time.monotonic()
        if now - started >= seconds:
            break
        due = int((now - started) * rate)
        if due > n:
            fh.write("".join(LINE.format(i) for i in range(n, due)))
            fh.flush()
            n = due
        if now >= next_rotation:
            fh.close()
            if rotations_by[rotations % len(rotations_by)] == RENAME:
                os.rename(log, log.with_name(f"{log.name}.{rotations}"))
            else:
                shutil.copy(log, log.with_name(f"{log.name}.{rotations}"))
                with log.open("r+") as trunc:
                    trunc.truncate(0)
            rotations += 1
            fh = log.open("a")
            next_rotation += rotate_every
        time.sleep(0.01)
    fh.close()
    out["written"] = n
    out["rotations"] = rotations


def ssh_soak(
    sshd: dict, folder: Path, seconds: float, rate: int, rotate_every: float, drops: int, scrollback: int
) -> dict:
    """The soak of an ssh source over the test's real sshd: renames and copytruncates in turn, ``drops``
    connections dropped (the client's and the server's side in turn)."""
    log = folder / "soak.log"
    log.write_text("")
    session = ssh_session(sshd, log, 1.0, Backoff(first=0.1, limit=0.5), scrollback=scrollback)
    return soak(session, log, seconds, rate, rotate_every, scrollback, (RENAME, COPYTRUNCATE), drops, sshd)


def soak(
    session: LiveSession,
    log: Path,
    seconds: float,
    rate: int,
    rotate_every: float,
    scrollback: int,
    rotations_by: tuple[str, ...],
    drops: int = 0,
    sshd: dict | None = None,
) -> dict:
    """Write ``log`` (empty, followed by ``session``, not started) for ``seconds`` and count what the
    session indexes; ``sshd`` for the server side of the drops."""
    tally = Tally(session, int(seconds * rate * 1.2) + 10_000)
    session.subscribe(tally)
    session.start()
    stop = threading.Event()
    result: dict = {"seconds": seconds, "rate": rate, "rotate_every": rotate_every, "scrollback": scrollback}
    memory: list[tuple[float, float, float, float]] = []
    try:
        assert wait_for(lambda: session.sources[0].state == src.CONNECTED, timeout=30)
        writer = threading.Thread(
            target=_writer, args=(log, rate, seconds, rotate_every, stop, result, rotations_by)
        )
        started = time.monotonic()
        writer.start()
        follower = session.followers[0]
        dropped = 0
        me = psutil.Process()
        while writer.is_alive():
            elapsed = time.monotonic() - started
            own, worker, rest = _rss_by_role(me)
            memory.append((elapsed, own + worker + rest, own, worker))
            if dropped < drops and elapsed >= seconds * (dropped + 1) / (drops + 1):
                # A process may end between being found and being killed (a connection the
                # follower is already replacing): the drop has happened either way.
                if dropped % 2 and sshd is not None:
                    for pid in _children(sshd["pid"]):  # the server side drops
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                elif getattr(follower, "process", None) is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(follower.process.pid, signal.SIGKILL)  # the client side drops
                dropped += 1
            time.sleep(1.0)
        writer.join()
        written = result["written"]
        wait_for(lambda: session.index.count() >= written, timeout=120)
        time.sleep(1.0)  # nothing more may come
        result.update(
            tally.result(written),
            dropped=dropped,
            reconnects=session.sources[0].reconnects,
            held=session.index.held(),
        )
        times, mib, own, worker = np.array(memory).T if memory else np.zeros((4, 1))
        result["rss_mib_first_last"] = (float(mib[0]), float(mib[-1]))
        result["rss_slope_mib_per_min"] = _slope(times, mib)
        # the second half: once the index holds its scroll-back, memory must stop growing
        late = times >= times[-1] / 2
        result["rss_slope_2nd_half_mib_per_min"] = _slope(times[late], mib[late])
        parts = (own, worker, mib - own - worker)
        result["rss_2nd_half_by_process"] = {
            role: {
                "mib_first_last": (float(part[late][0]), float(part[late][-1])),
                "slope_mib_per_min": _slope(times[late], part[late]),
            }
            for role, part in zip(ROLES, parts, strict=True)
        }
        return result
    finally:
        stop.set()
        session.stop()
