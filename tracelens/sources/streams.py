"""Inputs that can be read only once: a named pipe (FIFO), a character device, a process substitution
(`<(zcat a.log.gz)`, `/dev/fd/N`).

Every reader of a file opens it more than once (the compression and container checks read its first
bytes, the parse reads it in byte ranges, the cache digests its head and tail): on a pipe, the first open
takes the bytes the next one waits for, forever. So a stream is copied once, as it is read, to a spool
file that stands in for it; its lines keep the name the user gave (`Input.name`). The copy goes in
`$TMPDIR/tracelens-spool-UID/`, named after the stream's path, so that the same pipe read again is the
same input to the cache (changed if its bytes changed), and it is removed when tracelens exits.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

_CHUNK = 1 << 20  # a MiB at a time: the copy holds no more than that
_spooled: list[Path] = []


def is_stream(mode: int) -> bool:
    """Whether a file of this `st_mode` can be read only once (anything but a regular file)."""
    return not stat.S_ISREG(mode)


def spool_dir() -> Path:
    folder = Path(tempfile.gettempdir()) / f"tracelens-spool-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def spool(path: Path) -> Path:
    """Copy the stream at ``path`` to its spool file, to its end, and return the copy's path."""
    digest = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    copy = spool_dir() / f"{digest}-{path.name or 'stream'}"
    partial = copy.with_name(copy.name + ".partial")
    with path.open("rb") as src, partial.open("wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK)
    partial.replace(copy)
    if not _spooled:
        atexit.register(_remove_spooled)
    _spooled.append(copy)
    return copy


def _remove_spooled() -> None:
    for copy in _spooled:
        copy.unlink(missing_ok=True)
