"""Errors a user can act on: the CLI prints them as one line on stderr and exits 2."""


class InputError(Exception):
    """An input path or option that cannot be used (missing, unreadable, empty directory, bad syntax)."""


class SourceReadError(InputError):
    """A source that broke while being read (truncated or corrupt compressed data, a bad archive
    member). What was read before the break is kept; the batch engine reports the source by name and
    exits 1. Elsewhere (a whole-source parse in memory) it is an input error like any other."""

    def __init__(self, source: str, offset: int, reason: str) -> None:
        super().__init__(f"{source}: unreadable after {offset:,} bytes ({reason})")
        self.source = source
        self.offset = offset
        self.reason = reason
