"""The dataset's lock: one writer at a time, readers share.

A writer (`parse -o DIR`, or any command that brings its cache dataset up to date) holds the write lock
from before it reads the manifest until its commit is whole; readers (the analysis of a command) hold
the read lock while they read the part files, so they never see a commit half made. The lock is
filelock's `ReadWriteLock` (a SQLite transaction in `.tracelens/lock.db`): the kernel drops it when its
process dies, even by `kill -9`, and the next writer finishes or undoes what the dead one left (the
journal, `engine.recover`).

Who holds the write lock is written beside it (`.tracelens/lock.owner`: pid, host, command, since), so
a writer that gives up can say who it waited for. A dataset on an fsspec URL (s3://...) is not locked:
SQLite needs a local file system.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import ReadWriteLock, Timeout

from tracelens.errors import InputError

LOCK_DB = "lock.db"
OWNER = "lock.owner"
# How long a command waits for a dataset another process writes, unless told (--lock-timeout).
DEFAULT_LOCK_TIMEOUT = 600.0
# The first try is short: a waiting message is printed only when the lock is really taken.
_FIRST_TRY = 0.2

Notify = Callable[[str], None]


def _lock(meta: Path) -> ReadWriteLock:
    meta.mkdir(parents=True, exist_ok=True)
    # Not a singleton: a process may take the write lock and, once it is released, the read lock.
    return ReadWriteLock(meta / LOCK_DB, is_singleton=False)


def holder(meta: Path) -> str:
    """Who holds the write lock, as one phrase (or that readers hold it)."""
    try:
        owner = json.loads((meta / OWNER).read_text())
    except (OSError, ValueError):
        return "another tracelens process (reading it)"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("since", 0)))
    return f"pid {owner.get('pid')} on {owner.get('host')} ({owner.get('command')}, since {since})"


def _acquire(
    lock: ReadWriteLock, mode: str, meta: Path, dataset: str, timeout: float, notify: Notify | None
) -> None:
    take = lock.acquire_write if mode == "write" else lock.acquire_read
    try:
        take(timeout=min(_FIRST_TRY, timeout), blocking=True)
        return
    except Timeout:
        pass
    if timeout <= _FIRST_TRY:
        raise InputError(f"{dataset} is locked by {holder(meta)}; not waiting (--lock-timeout {timeout:g})")
    if notify is not None:
        notify(f"waiting up to {timeout:g} s for {dataset}, locked by {holder(meta)}")
    try:
        take(timeout=timeout - _FIRST_TRY, blocking=True)
    except Timeout:
        raise InputError(
            f"{dataset} is still locked by {holder(meta)} after {timeout:g} s (--lock-timeout)"
        ) from None


def _command() -> str:
    name = Path(sys.argv[0]).name if sys.argv else "python"
    words = [name, *sys.argv[1:3]]
    return " ".join(words)[:80]


@contextmanager
def writing(meta: Path, dataset: str, timeout: float, notify: Notify | None = None) -> Iterator[None]:
    """Hold the write lock of the dataset whose metadata folder is ``meta``; an `InputError` (exit 2)
    naming the holder when it is not free within ``timeout`` seconds."""
    lock = _lock(meta)
    _acquire(lock, "write", meta, dataset, timeout, notify)
    owner = meta / OWNER
    try:
        _write_owner(meta, owner)
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()
        lock.close()


def _write_owner(meta: Path, owner: Path) -> None:
    """Say who holds the lock. Only words for a waiting writer's message: on a full disk the lock is
    held without them (a reader finishing a commit needs no more than renames)."""
    tmp = meta / f".{OWNER}.{os.getpid()}"
    note = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command(), "since": time.time()}
    try:
        tmp.write_text(json.dumps(note))
        tmp.replace(owner)
    except OSError:
        tmp.unlink(missing_ok=True)


@contextmanager
def reading(meta: Path, dataset: str, timeout: float, notify: Notify | None = None) -> Iterator[None]:
    """Hold the read lock: no commit starts or ends while it is held. A dataset this user cannot write
    (another user's, a read-only mount) is read without it: taking it would need to write its lock."""
    if meta.is_dir() and not os.access(meta, os.W_OK):
        yield
        return
    lock = _lock(meta)
    _acquire(lock, "read", meta, dataset, timeout, notify)
    try:
        yield
    finally:
        lock.release()
        lock.close()
