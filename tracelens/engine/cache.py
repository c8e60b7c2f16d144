"""The cache of datasets behind the commands that take log paths (`summary`, `check`, `report`, ...).

Each set of command-line paths (resolved: `logs/` from two folders are two keys, the same folder named
two ways is one) and `--date` has its own dataset under `$XDG_CACHE_HOME/tracelens/datasets/<key>`
(`~/.cache/tracelens/...` without the variable). The key holds the paths, not the files found under
them, so a folder that gained a log keeps its dataset and the engine reads only the new file; and a
digest of the code that writes datasets, so a new parser never answers from an old one's dataset (the
old one ages out of the cache by its size limit, or `tracelens cache --clear`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tracelens.engine import manifest as mf
from tracelens.engine.lock import reading, writing
from tracelens.engine.store import META
from tracelens.errors import InputError
from tracelens.sizes import parse_size

_GLOB_CHARS = "*?["
# The cache's size limit, e.g. `50G`; `0` turns eviction off. 20 GiB holds the datasets of 100-200 GiB of
# logs (a dataset is a tenth to a fifth of its logs), and is small beside a GPU host's disk.
CACHE_LIMIT_VAR = "TRACELENS_CACHE_LIMIT"
DEFAULT_CACHE_LIMIT = "20G"
_USED = "used"  # touched in the metadata folder each time a command uses the dataset


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tracelens"


def cache_limit() -> int:
    """The cache's size limit in bytes from $TRACELENS_CACHE_LIMIT (no limit for `0`)."""
    text = os.environ.get(CACHE_LIMIT_VAR, DEFAULT_CACHE_LIMIT)
    if text.strip() == "0":
        return sys.maxsize
    return parse_size(text, CACHE_LIMIT_VAR)


def datasets_root() -> Path:
    return cache_root() / "datasets"


def resolve_args(paths: list[str]) -> list[str]:
    """Absolute paths (symlinks resolved) and absolute glob patterns; a missing path is left as given,
    for `discover` to report."""
    out = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.exists():
            # A pipe's link (`/dev/fd/63` of `<(zcat x)`) resolves to `pipe:[N]`, which is no path.
            resolved = path.resolve()
            out.append(str(resolved if resolved.exists() else os.path.abspath(path)))
        elif any(ch in raw for ch in _GLOB_CHARS):
            out.append(os.path.abspath(path))
        else:
            out.append(raw)
    return out


# The packages whose code decides what a dataset holds: how a log is read, cut into lines, parsed and
# written. A cached dataset is theirs: one another version of them wrote is no answer of this one.
_WRITING_PACKAGES = ("sources", "parsers", "tables", "engine")


@functools.cache
def code_fingerprint() -> str:
    """A digest of the source of the packages that write datasets: an upgrade (or a local edit) that
    changes how a log is parsed gives the cache new keys, so no command answers from a stale parse.
    Hashed from the files themselves (a few ms, once a process), never from a version number someone
    must remember to bump."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=10)
    for package in _WRITING_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def key_of(resolved: list[str], base_date: dt.date | None) -> str:
    text = json.dumps(
        {
            "paths": sorted(set(resolved)),
            "date": base_date.isoformat() if base_date else None,
            "code": code_fingerprint(),
        }
    )
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def dataset_for(resolved: list[str], base_date: dt.date | None) -> Path:
    """The cache dataset of these paths. One of an older dataset format is dropped (a cache can always
    be rebuilt), unlike a dataset the user named, which is refused."""
    folder = datasets_root() / key_of(resolved, base_date)
    try:
        text = (folder / mf.MANIFEST).read_text()
    except OSError:  # none yet; or unreadable, which the engine reports in one line when it opens it
        return folder
    try:
        mf.load_manifest(json.loads(text))
    except ValueError:  # half a manifest, a damaged one (RecordError) or another format: rebuilt
        shutil.rmtree(folder, ignore_errors=True)
    return folder


def mark_used(folder: Path) -> None:
    """For `tracelens cache` (most recently used first) and `cache --clear --older-than DAYS`."""
    (folder / META / _USED).touch()


@dataclass(frozen=True)
class Entry:
    folder: Path
    inputs: list[str]
    bytes: int
    used: float


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _inputs_of(folder: Path) -> list[str]:
    """The inputs a cached dataset holds, as far as its manifest tells (one of another format is listed
    too: it is dropped only when used)."""
    try:
        data = json.loads((folder / mf.MANIFEST).read_text())
        return sorted(mf.load_manifest(data).inputs)
    except mf.IncompatibleVersion:
        inputs = data.get("inputs")
        return sorted(inputs) if isinstance(inputs, dict) else []
    except (OSError, ValueError):  # none, half a manifest or a damaged one
        return []


def entries() -> list[Entry]:
    """The cached datasets, most recently used first."""
    root = datasets_root()
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if not folder.is_dir():
            continue
        used = folder / META / _USED
        out.append(
            Entry(folder, _inputs_of(folder), _size(folder), used.stat().st_mtime if used.exists() else 0.0)
        )
    return sorted(out, key=lambda e: -e.used)


def _remove(entry: Entry) -> None:
    """Delete one cached dataset, unless a running command holds it (InputError names the holder)."""
    with writing(entry.folder / META, str(entry.folder), timeout=0):
        shutil.rmtree(entry.folder)


def clear(older_than_days: float | None = None) -> tuple[int, int, list[str]]:
    """Delete cached datasets (all, or those unused for ``older_than_days``). One that a running command
    holds is left alone. Returns (datasets deleted, bytes freed, messages about those left)."""
    deleted = freed = 0
    left = []
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    for entry in entries():
        if cutoff is not None and entry.used >= cutoff:
            continue
        try:
            _remove(entry)
        except InputError as exc:
            left.append(str(exc))
            continue
        deleted += 1
        freed += entry.bytes
    return deleted, freed, left


def verify() -> tuple[int, list[str]]:
    """Read every part file of every cached dataset whole and check it against its manifest (its
    bytes, its content hash: `integrity`). A dataset with a bad part is deleted (the next command
    that reads its logs makes it again), unless a running command holds it. Returns (datasets
    checked, one line per bad dataset)."""
    from tracelens.engine import integrity
    from tracelens.engine.store import Store

    found = entries()
    bad: list[str] = []
    for entry in found:
        try:
            with reading(entry.folder / META, str(entry.folder), timeout=0):
                manifest = mf.load_manifest(json.loads((entry.folder / mf.MANIFEST).read_text()))
                problem = next(integrity.problems(Store(str(entry.folder)), manifest, verify=True), None)
        except (OSError, ValueError, mf.RecordError):  # no manifest, half a one, another format
            continue  # the next command that reads it parses into it again
        except InputError:  # a command is writing it: it is checked when next read
            continue
        if problem is None:
            continue
        try:
            _remove(entry)
            done = "deleted (the next command that reads its logs makes it again)"
        except InputError:
            done = "left: a running command holds it"
        bad.append(f"{entry.folder}: {problem}; {done}")
    return len(found), bad


def evict(limit: int, keep: Path) -> tuple[int, int]:
    """Delete the least recently used datasets until the cache holds at most ``limit`` bytes. ``keep``
    (the dataset the command is about to read) and datasets other commands hold are never deleted, so the
    cache can stay above the limit. Returns (datasets deleted, bytes freed)."""
    found = entries()
    total = sum(e.bytes for e in found)
    deleted = freed = 0
    for entry in reversed(found):  # least recently used first
        if total <= limit:
            break
        if entry.folder == keep:
            continue
        try:
            _remove(entry)
        except InputError:  # in use: a later command evicts it
            continue
        total -= entry.bytes
        deleted += 1
        freed += entry.bytes
    return deleted, freed
