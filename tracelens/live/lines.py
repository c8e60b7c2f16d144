"""Cut a byte stream into complete lines: what arrives from a pipe or a file ends anywhere."""

from __future__ import annotations

import numpy as np


class LineCutter:
    """Keeps the partial last line until its newline arrives."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> bytes:
        """The complete lines that ``data`` finishes (may be empty)."""
        buf = self.pending + data if self.pending else data
        cut = buf.rfind(b"\n") + 1
        self.pending = buf[cut:]
        return buf[:cut]

    def flush(self) -> bytes:
        """The partial line, made complete (at the end of a stream, or before a rotation)."""
        out, self.pending = self.pending, b""
        return out + b"\n" if out else b""


def line_spans(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start offset and byte length (the newline left out) of each line of ``data``: the
    ``byte_offset`` and ``byte_len`` of `sources.block_lines`, in numpy alone. The log view's index
    needs no more, and the pump that feeds it must never wait for polars' thread pool, which the
    screen's other work may hold."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.append(newlines, len(data))
    if not data or data.endswith(b"\n"):  # nothing follows the last newline
        starts, ends = starts[:-1], ends[:-1]
    return starts.astype(np.int64), (ends - starts).astype(np.int32)
