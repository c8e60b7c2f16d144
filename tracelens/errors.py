"""Errors a user can act on: the CLI prints them as one line on stderr and exits 2."""


class InputError(Exception):
    """An input path or option that cannot be used (missing, unreadable, empty directory, bad syntax)."""
