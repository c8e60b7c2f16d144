"""Follow a local file like `tail -F`: plain reads at a byte cursor (no mmap on a live file), across
rename rotation (the old file is read to its end, then the new one from its start) and copytruncate
(the file shrinks under the cursor, or is truncated and written past the cursor again between two
looks: reading resumes from its start).

A large existing file is first previewed (its last lines, so the screen has something at once), then
read from its start in big blocks with progress, then followed. A file whose start was read another way
(the batch engine's dataset, `live.seed`) is followed from a given byte of a given open file instead
(``start``): no preview, no backfill.
"""

from __future__ import annotations

import glob
import os
import threading

from tracelens.sizes import FOLLOW_READ_BYTES
from tracelens.sources.events import (
    BackfillProgressed,
    FileRotated,
    FileTruncated,
    LinesAppended,
    SourceConnected,
    TailPreviewed,
)
from tracelens.sources.generation import FileGeneration
from tracelens.sources.lines import LineCutter
from tracelens.sources.protocol import Emit

# A new line waits for the next look at the file: half this on average (a look that finds nothing is
# three system calls).
POLL_SECONDS = 0.01
PREVIEW_THRESHOLD = 8 << 20
PREVIEW_BYTES = 256 << 10
# After the preview, the backfill waits this long: reading and parsing a large file takes every core,
# and the screen should paint the tail before that starts.
PREVIEW_GRACE = 0.3
# Before reading bytes that arrived after an idle look, the last bytes read are read again: if they
# changed, the file was truncated and rewritten past the cursor between two looks (a copytruncate that
# the size alone does not show). One short read per idle-to-busy change, not per block.
ANCHOR_BYTES = 4096
# What a copytruncate's copy may hold past our cursor (a few polls of writing): a larger rest means the
# candidate is another file that happens to share the bytes.
ROTATED_REST_BYTES = 64 << 20


class FileFollower:
    def __init__(
        self,
        path: str | os.PathLike[str],
        label: str,
        *,
        poll: float = POLL_SECONDS,
        block_bytes: int = FOLLOW_READ_BYTES,
        preview_threshold: int = PREVIEW_THRESHOLD,
        preview_bytes: int = PREVIEW_BYTES,
        preview_grace: float = PREVIEW_GRACE,
        start: tuple[int, FileGeneration] | None = None,
    ) -> None:
        self.path = str(path)
        self.label = label
        self.poll = poll
        self.block_bytes = block_bytes
        self.preview_threshold = preview_threshold
        self.preview_bytes = preview_bytes
        self.preview_grace = preview_grace
        self.start = start  # (byte, the open file): where reading begins, its bytes before read already

    def close(self) -> None:
        """Nothing to end: `run` closes its files when its stop event is set."""

    def _open(self, stop: threading.Event) -> int | None:
        while not stop.is_set():
            try:
                return os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                stop.wait(self.poll * 5)
        return None

    def run(self, emit: Emit, stop: threading.Event) -> None:
        fd = os.dup(self.start[1].fd) if self.start is not None else self._open(stop)
        if fd is None:
            return
        self._fds = [fd]
        try:
            self._follow(fd, emit, stop)
        finally:
            for open_fd in self._fds:
                os.close(open_fd)

    def _preview(self, fd: int, generation: FileGeneration, size: int, emit: Emit) -> None:
        start = max(0, size - self.preview_bytes)
        data = os.pread(fd, size - start, start)
        if start > 0:  # begin at a line start
            first = data.find(b"\n") + 1
            data, start = data[first:], start + first
        data = data[: data.rfind(b"\n") + 1]
        if data:
            emit(TailPreviewed(self.label, data, generation, start))

    def _follow(self, fd: int, emit: Emit, stop: threading.Event) -> None:
        cursor = 0  # next byte to read from the current file
        anchor = b""  # the last bytes read, up to the cursor
        idle = False  # the last look found nothing new
        if self.start is not None:
            # the bytes before `cursor` were read elsewhere: the first new bytes are checked against
            # the last of them, as after an idle look (a truncation rewritten past the cursor)
            cursor, generation = self.start
            anchor = os.pread(fd, min(ANCHOR_BYTES, cursor), cursor - min(ANCHOR_BYTES, cursor))
            idle, backfill = True, 0
        else:
            generation = FileGeneration.of(self.path, fd)
            size = os.fstat(fd).st_size
            backfill = size if size > self.preview_threshold else 0
            if backfill:
                self._preview(fd, generation, size, emit)
                stop.wait(self.preview_grace)
        emit(SourceConnected(self.label, self.path))
        cutter = LineCutter(cut=False)  # its lines are read back from the file by their offsets
        while not stop.is_set():
            data = os.pread(fd, self.block_bytes, cursor)
            if data and idle and anchor and os.pread(fd, len(anchor), cursor - len(anchor)) != anchor:
                copy = self._read_rotated_rest(cursor, anchor, cutter, emit)
                generation = self._truncated(fd, generation, cutter, emit, copy)
                cursor, anchor = 0, b""
                continue
            idle = not data
            if data:
                anchor = (anchor + data)[-ANCHOR_BYTES:]
                line_start = cursor - len(cutter.pending)
                cursor += len(data)
                complete = cutter.feed(data)
                if complete:
                    emit(LinesAppended(self.label, complete, generation, line_start))
                if backfill:
                    emit(BackfillProgressed(self.label, min(cursor, backfill), backfill))
                    if cursor >= backfill:
                        backfill = 0
                continue
            if backfill:  # the file shrank before we reached its old end
                emit(BackfillProgressed(self.label, backfill, backfill))
                backfill = 0
            fst = os.fstat(fd)
            if fst.st_size < cursor:  # copytruncate
                copy = self._read_rotated_rest(cursor, anchor, cutter, emit)
                generation = self._truncated(fd, generation, cutter, emit, copy)
                cursor, anchor = 0, b""
                continue
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev):
                # Renamed away and replaced: read what the writer added to the old file meanwhile.
                data = os.pread(fd, self.block_bytes, cursor)
                if data:
                    continue
                tail = cutter.flush()
                if tail:
                    emit(LinesAppended(self.label, tail))
                new_fd = self._open(stop)
                if new_fd is None:
                    return
                os.close(fd)
                self._fds = [new_fd]
                fd = new_fd
                generation = FileGeneration.of(self.path, fd)
                cursor, anchor = 0, b""
                emit(FileRotated(self.label, f"{self.path} was replaced by a new file"))
                continue
            stop.wait(self.poll)

    def _read_rotated_rest(self, cursor: int, anchor: bytes, cutter: LineCutter, emit: Emit) -> int | None:
        """A copytruncate copies the file, then truncates it: what the writer added after our last read
        and before the copy is only in the copy. Find the copy as the ssh follower does (among `PATH.*`
        and `PATH-*`, the plain file whose bytes before ``cursor`` are the last ones read) and pass on
        its rest, before the truncated file is read from its start. Returns the copy, open (its bytes
        before ``cursor`` are those read from the file: `_truncated` reads them back from it), or None."""
        if not anchor:
            return None
        for candidate in sorted(
            glob.glob(glob.escape(self.path) + ".*") + glob.glob(glob.escape(self.path) + "-*")
        ):
            try:
                copy = os.open(candidate, os.O_RDONLY)
            except OSError:  # gone meanwhile, unreadable
                continue
            try:
                size = os.fstat(copy).st_size
                if not size >= cursor or size - cursor > ROTATED_REST_BYTES:
                    os.close(copy)
                    continue
                if os.pread(copy, len(anchor), cursor - len(anchor)) != anchor:
                    os.close(copy)
                    continue
                rest = os.pread(copy, size - cursor, cursor)
            except OSError:  # a folder
                os.close(copy)
                continue
            complete = cutter.feed(rest)
            if complete:
                emit(LinesAppended(self.label, complete))  # not read back from the copy: spooled
            return copy
        return None

    def _truncated(
        self, fd: int, generation: FileGeneration, cutter: LineCutter, emit: Emit, copy: int | None = None
    ) -> FileGeneration:
        """The file was truncated under the cursor: the partial last line goes out as it is, and reading
        starts again from its start. The bytes read so far are no longer in the file: with the ``copy``
        a copytruncate made, the generation's descriptor becomes the copy's (the same bytes at the same
        offsets: the log view reads those lines' text back from it), else they are gone."""
        tail = cutter.flush()
        if tail:
            emit(LinesAppended(self.label, tail))
        if copy is not None:
            if generation.fd >= 0:
                os.dup2(copy, generation.fd)  # in one step: a reader's pread never sees a closed fd
            os.close(copy)
        else:
            generation.gone = True
        emit(FileTruncated(self.label, os.fstat(fd).st_size))
        return FileGeneration.of(self.path, fd)
