"""One way in: what a user names (log files, folders, glob patterns, compressed files, archives, or the
dataset `tracelens parse -o` wrote) as a dataset that holds it, up to date, under its read lock. Every
command that takes log paths (`cli.dataset.logs_dataset`) and `tracelens.analyze` come through
`opened_logs`, so they find the same files, name the same sources (`archive:member`) and runs, and keep
an input that broke up to its break.

Log paths are parsed by the batch engine into the cache's dataset for those paths (`engine.cache`), a
dataset folder the caller names, or a temporary one deleted at the end.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracelens.engine.cache import dataset_for, evict, mark_used, resolve_args
from tracelens.engine.engine import EngineOptions, Progress, Report, parse_to_dataset, reading_dataset
from tracelens.engine.lock import DEFAULT_LOCK_TIMEOUT, Notify
from tracelens.errors import InputError


@dataclass
class Opened:
    """A dataset that holds the named logs: ``report`` says what was read in part or not at all (for a
    dataset given as it is, what its manifest recorded), ``evicted`` the (datasets, bytes) deleted from
    the cache to keep it under its limit."""

    path: Path
    report: Report
    evicted: tuple[int, int] = (0, 0)


@contextmanager
def opened_logs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    base_date: dt.date | None = None,
    dataset: Path | None = None,
    no_cache: bool = False,
    cache_limit: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    progress: Callable[[], ContextManager[Progress | None]] | None = None,
    notify: Notify | None = None,
) -> Iterator[Opened]:
    """Yield the dataset that holds ``paths``, under its read lock. ``dataset``: parse into this folder
    and keep it; ``no_cache``: into a temporary one; else the cache's, which is then kept under
    ``cache_limit`` bytes (None: no limit). ``progress`` makes the engine's progress callback for the
    parse (a bar, in the CLI); ``notify`` is told when a lock is waited for."""
    from tracelens.tables.frames import Tables  # polars: not for the commands that only list the cache

    given = [Path(p) for p in paths]
    if len(given) == 1 and Tables.is_dataset(given[0]):  # the output of `tracelens parse -o DIR`
        if dataset is not None or no_cache:
            raise InputError(f"{given[0]} is a dataset already: --dataset and --no-cache are for log paths")
        with reading_dataset(str(given[0]), lock_timeout, notify) as manifest:
            yield Opened(given[0], Report(problems=[e for s in manifest.sources.values() for e in s.errors]))
        return
    if dataset is not None and no_cache:
        raise InputError("--dataset and --no-cache exclude each other")
    resolved = resolve_args([str(p) for p in given])
    temporary = Path(tempfile.mkdtemp(prefix="tracelens-")) if no_cache else None
    try:
        cached = temporary is None and dataset is None
        target = temporary or dataset or dataset_for(resolved, base_date)
        options = EngineOptions(base_date=base_date, lock_timeout=lock_timeout)
        bar: ContextManager[Any] = progress() if progress is not None else nullcontext()
        with bar as callback, naming_the_cache(target if cached else None):
            report = parse_to_dataset(resolved, str(target), options, callback, notify)
        evicted = (0, 0)
        if cached:
            mark_used(target)
            if cache_limit is not None:
                evicted = evict(cache_limit, keep=target)
        with reading_dataset(str(target), lock_timeout, notify):
            yield Opened(target, report, evicted)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


@contextmanager
def naming_the_cache(cache: Path | None) -> Iterator[None]:
    """An error about the cache dataset ``cache`` says it is the cache, and how to avoid it."""
    try:
        yield
    except InputError as exc:
        if cache is not None and str(cache) in str(exc):
            raise InputError(f"{exc} (the cache; --no-cache or --dataset DIR avoid it)") from exc
        raise
