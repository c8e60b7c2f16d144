"""The dataset's manifest (`.tracelens/manifest.json`): what each input looked like when it was read,
which tasks read which byte ranges, what they found and which files hold their rows. A re-run compares
inputs against it to skip unchanged ones and to read only the new bytes of a log that grew."""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import Any

from tracelens import __version__
from tracelens.engine.plan import Unit
from tracelens.engine.task import SourceResult, TaskResult
from tracelens.sources.inputs import Input

MANIFEST = ".tracelens/manifest.json"
JOURNAL = ".tracelens/journal.json"
# The dataset format: a dataset of another format is refused (exit 2), never rewritten in place.
VERSION = 1
_SAMPLE = 64 << 10


def _digest(path: str, start: int, size: int) -> str:
    with open(path, "rb") as fh:
        fh.seek(start)
        return hashlib.blake2b(fh.read(size), digest_size=16).hexdigest()


def fingerprint(item: Input) -> dict[str, str]:
    """A content fingerprint that costs two small reads: hashes of the first and the last 64 KiB. With
    the size and modification time it tells an unchanged file; with the old size, a file that only grew."""
    head = min(_SAMPLE, item.size)
    return {
        "head": _digest(item.path, 0, head),
        "tail": _digest(item.path, item.size - head, head),
    }


def input_record(item: Input) -> dict[str, Any]:
    return {
        "container": item.container,
        "compression": item.compression,
        "size": item.size,
        "mtime": item.mtime,
        **fingerprint(item),
    }


def change_of(item: Input, old: dict[str, Any] | None) -> str:
    """`new`, `same`, `grown` (a plain file whose old bytes are still there: only the rest is read) or
    `changed`."""
    if old is None:
        return "new"
    if item.container != old["container"] or item.compression != old["compression"]:
        return "changed"
    if item.size == old["size"] and item.mtime == old["mtime"]:
        head = min(_SAMPLE, item.size)
        return "same" if _digest(item.path, 0, head) == old["head"] else "changed"
    if item.splittable and item.size > old["size"]:
        head = min(_SAMPLE, old["size"])
        same_head = _digest(item.path, 0, head) == old["head"]
        same_tail = _digest(item.path, old["size"] - head, head) == old["tail"]
        if same_head and same_tail:
            return "grown"
    return "changed"


def unit_record(unit: Unit) -> dict[str, Any]:
    return {
        "input": unit.input.path,
        "start": unit.start,
        "end": unit.end,
        "first_line": unit.first_line,
        "run_offset": unit.run_offset,
        "base_date": unit.base_date,
    }


def task_record(units: tuple[Unit, ...], result: TaskResult) -> dict[str, Any]:
    return {
        "units": [unit_record(u) for u in units],
        "sources": [asdict(s) for s in result.sources],
        "files": result.files,
        "rows": result.rows,
    }


def sources_of(task: dict[str, Any]) -> list[SourceResult]:
    return [SourceResult(**s) for s in task["sources"]]


def empty() -> dict[str, Any]:
    return {
        "version": VERSION,
        "tracelens": __version__,
        "inputs": {},
        "tasks": {},
        "faults": {},
        "sources": {},
    }
