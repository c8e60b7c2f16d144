"""Cut a byte stream into complete lines: what arrives from a pipe or a file ends anywhere."""

from __future__ import annotations

from tracelens.sources.long_lines import cut_line, max_line_bytes


class LineCutter:
    """Keeps the partial last line until its newline arrives. A line longer than the limit
    (`long_lines.max_line_bytes`) is kept to the limit while the rest of it is counted and dropped, and
    passed on with the marker that records its length. ``cut=False`` keeps every line whole: a local
    file's lines are passed on with the place they are read back from (`LinesAppended.origin`), which
    a cut line would no longer match."""

    def __init__(self, cut: bool = True) -> None:
        self.pending = b""
        self.limit = max_line_bytes() if cut else 1 << 62
        self.dropped = 0  # bytes of the pending line past the limit

    def feed(self, data: bytes) -> bytes:
        """The complete lines that ``data`` finishes (may be empty)."""
        if self.dropped:
            at = data.find(b"\n")
            if at < 0:
                self.dropped += len(data)
                return b""
            line = self._cut(at, newline=True)
            return line + self.feed(data[at + 1 :]) if at + 1 < len(data) else line
        buf = self.pending + data if self.pending else data
        cut = buf.rfind(b"\n") + 1
        self.pending = buf[cut:]
        if len(self.pending) > self.limit:  # the rest of this line is counted, not kept
            self.dropped = len(self.pending) - self.limit
            self.pending = self.pending[: self.limit]
        return buf[:cut]

    def flush(self) -> bytes:
        """The partial line, made complete (at the end of a stream, or before a rotation)."""
        if self.dropped:
            return self._cut(0, newline=True)
        out, self.pending = self.pending, b""
        return out + b"\n" if out else b""

    def _cut(self, more: int, newline: bool) -> bytes:
        total = len(self.pending) + self.dropped + more
        line = cut_line(self.pending, total, self.limit, newline)
        self.pending, self.dropped = b"", 0
        return line
