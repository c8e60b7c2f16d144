"""Processes tracelens starts never outlive it, whatever ends it (Ctrl-C, `kill`, a closed terminal,
`kill -9`, the OOM killer): nothing of ours can run at a `kill -9`, so the children watch for it.

- A worker process (the parse pool's) calls `die_with(pid)` as it starts: the kernel sends it SIGKILL
  when its parent dies (`PR_SET_PDEATHSIG`), and a thread waits on a pidfd of the process it works for
  (the pool's workers are children of multiprocessing's fork server, which waits for its children
  before it exits: a dead tracelens left the server and its workers running for good).
- A command run in a session of its own (`follow --cmd`) gets a `GroupGuard`: a small shell that
  holds the read end of a pipe only tracelens writes, and ends the command's process group when it
  reads end of file, which is when tracelens has exited, however it did. The command's own children
  are in that group, so a shell pipeline ends whole (`PR_SET_PDEATHSIG` would end the shell only).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 1.0  # where no pidfd is available (Linux before 5.3): how often the parent is looked at

# Reads until end of file, then TERM to the group, a second to end, KILL. Signals a terminal sends to
# the foreground group (Ctrl-C, a closed terminal) reach the guard too: it ignores them and waits for
# the end of file, so that tracelens (which ends the command itself on those) goes first.
_GUARD = 'trap "" INT TERM HUP QUIT; read -r _; kill -s TERM -- "-$1" 2>/dev/null || exit 0; sleep 1; kill -s KILL -- "-$1" 2>/dev/null; exit 0'


def _set_parent_death_signal(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def die_with(pid: int) -> None:
    """End this process (SIGKILL: it holds nothing to save, its parent is gone) when process ``pid``
    or this process's parent ends. Call it first thing in the child."""
    parent = os.getppid()
    _set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent or not _running(pid):  # died before the watch began
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=_watch, args=(pid,), name="tracelens lifeline", daemon=True).start()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])  # readable when the process has ended
    else:
        while _running(pid):
            time.sleep(_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGKILL)


class GroupGuard:
    """Ends process group ``group`` when this process exits, however it exits; `release()` after the
    group was ended (or has ended) the ordinary way."""

    def __init__(self, group: int) -> None:
        self._lock = threading.Lock()
        read_end, self._write_end = os.pipe()  # both close-on-exec: only the guard gets the read end
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["/bin/sh", "-c", _GUARD, "tracelens-guard", str(group)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:
            self.process = None
        finally:
            os.close(read_end)

    def release(self) -> None:
        """Stop guarding: the guard ends without touching the group. Idempotent, from any thread."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                self.process.wait()
            if self._write_end >= 0:
                os.close(self._write_end)
                self._write_end = -1
