"""Cut a byte stream into complete lines: what arrives from a pipe or a file ends anywhere."""

from __future__ import annotations


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
