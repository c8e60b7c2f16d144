"""A line longer than a limit is kept up to the limit, with a marker that records its full length: the
parsers' memory per line is bounded, whatever a log holds (a 300 MB line took 24x its length; a .gz
of 1 GiB of NULs, one line, grew past 12 GiB). The limit is 1 MiB, or `TRACELENS_MAX_LINE_BYTES`.

The cut line keeps its place: its line number, and the byte offset of every line after it, are those of
the source (a cut line's `byte_len` is what was kept, the marker says how long it was).
"""

from __future__ import annotations

import os

import numpy as np

from tracelens.errors import InputError

DEFAULT_MAX_LINE_BYTES = 1 << 20
ENV = "TRACELENS_MAX_LINE_BYTES"


def max_line_bytes() -> int:
    """The limit: `TRACELENS_MAX_LINE_BYTES` (at least 1 KiB) or 1 MiB."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_MAX_LINE_BYTES
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"{ENV} must be a number of bytes, got {text!r}") from None
    if value < 1024:
        raise InputError(f"{ENV} must be at least 1024 bytes, got {value}")
    return value


def marker(total: int) -> bytes:
    """What follows the kept part of a cut line (``total``: its bytes, the newline left out)."""
    return f" [tracelens: line cut, {total:,} bytes long]".encode()


def cut_line(head: bytes | bytearray | memoryview, total: int, limit: int, newline: bool) -> bytes:
    """The first ``limit`` bytes of a line of ``total`` bytes, its marker and its newline."""
    return bytes(head[:limit]) + marker(total) + (b"\n" if newline else b"")


def too_long(newlines: np.ndarray, limit: int) -> bool:
    """Whether a line of a block (newline positions ``newlines``) is longer than ``limit``: one pass."""
    if not len(newlines):
        return False
    return bool(newlines[0] > limit or (len(newlines) > 1 and np.diff(newlines).max() > limit + 1))
