"""A file behind a path, held open: what a follower read its bytes from.

A rename rotation or a truncation starts a new generation. The live session keeps each generation's
descriptor (an `os.dup` of the follower's), so lines read before a rotation can still be read back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(eq=False)
class FileGeneration:
    """One open file behind a path: a rotation or a truncation starts a new generation."""

    path: str
    fd: int  # owned: closed by `close`
    dev: int
    ino: int
    gone: bool = False  # truncated after these bytes were read: they are not in the file any more

    @classmethod
    def of(cls, path: str, fd: int) -> FileGeneration:
        st = os.fstat(fd)
        return cls(path, os.dup(fd), st.st_dev, st.st_ino)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
