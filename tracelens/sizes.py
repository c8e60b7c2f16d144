"""Sizes: the bytes the readers and the parsers take at a time, in one place, and how a size a user
types (`4M`, `65536`) is read. It imports only `errors`, so every layer may use it."""

from __future__ import annotations

import re

from tracelens.errors import InputError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, option: str) -> int:
    """`4M` -> 4194304; a clear error (naming ``option``) for anything else."""
    match = _SIZE.match(text)
    if match is None:
        raise InputError(f"{option} wants a size such as 4M or 65536, got {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
    size = int(float(match.group(1)) * scale)
    if size < 1024:
        raise InputError(f"{option} must be at least 1K, got {text!r}")
    return size
