"""How the commands that take log paths get their dataset: one pipeline for all of them.

Log paths are parsed by the batch engine (`tracelens.engine`) into a dataset (the cache's, one named by
`--dataset`, or a temporary one with `--no-cache`), which is then analysed under its read lock. The
output of `tracelens parse -o DIR`, given as the only path, is read as it is. An input that could not be
read to its end is kept up to where it broke, named on stderr, and makes the command exit 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tracelens.cli.progress import engine_progress
from tracelens.engine import Report
from tracelens.engine.cache import (
    CACHE_LIMIT_VAR,
    DEFAULT_CACHE_LIMIT,
    cache_limit,
    clear,
    entries,
    evict,
    mark_used,
    resolve_args,
    verify,
)
from tracelens.engine.lock import DEFAULT_LOCK_TIMEOUT
from tracelens.engine.logs import opened_logs
from tracelens.errors import InputError
from tracelens.formatting import megabytes

_PANEL = "Dataset and cache"

DatasetOpt = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        help="Parse the logs into this dataset folder (created, or brought up to date: unchanged logs are skipped) and keep it, instead of the cache.",
        rich_help_panel=_PANEL,
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Parse into a temporary dataset deleted at the end: nothing is read from or written to the cache.",
        rich_help_panel=_PANEL,
    ),
]
LockTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--lock-timeout",
        min=0,
        help="Seconds to wait for a dataset another tracelens process is writing (a message says who); then exit 2. 0: do not wait.",
        rich_help_panel=_PANEL,
    ),
]


def typed_paths(paths: list[Path]) -> list[tuple[str, str]]:
    """(as typed, resolved) of each command-line path, for `sources.naming.as_typed`: a glob pattern by
    its part before the first wildcard (`logs/*/server.log` by `logs`)."""
    out = []
    for path in paths:
        parts = path.parts
        fixed = next((i for i, part in enumerate(parts) if any(ch in part for ch in "*?[")), len(parts))
        head = str(Path(*parts[:fixed])) if fixed else "."
        out.append((head, resolve_args([head])[0]))
    return out


def report_problems(err: Console, report: Report) -> None:
    """Inputs not read at all, or read only in part: one line each, the same in every command."""
    for problem in report.unread:
        err.print(f"tracelens: not read: {problem}", markup=False)
    for problem in report.problems:
        err.print(f"tracelens: read in part: {problem}; the lines before the break are kept", markup=False)


@contextmanager
def logs_dataset(
    paths: list[Path],
    err: Console,
    *,
    base_date=None,
    quiet: bool = False,
    dataset: Path | None = None,
    no_cache: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> Iterator[Path]:
    """Yield the folder of a dataset that holds ``paths`` (up to date), under its read lock
    (`engine.logs.opened_logs`, as `tracelens.analyze` reads them). After the caller is done: the
    inputs read only in part are named, and the exit code is 1."""

    def notify(text: str) -> None:  # waiting for a lock: said even with -q, or a wait would look like a hang
        err.print(f"tracelens: {text}", markup=False)

    cached = dataset is None and not no_cache
    limit = cache_limit() if cached else None  # read first: a bad value costs no parse
    # The bar only on a terminal: piped output (CI, `| jq`) stays what the command prints.
    with opened_logs(
        paths,
        base_date=base_date,
        dataset=dataset,
        no_cache=no_cache,
        cache_limit=limit,
        lock_timeout=lock_timeout,
        progress=lambda: engine_progress(quiet or not sys.stderr.isatty()),
        notify=notify,
    ) as opened:
        said_evicted(err, opened.evicted)
        with _naming(err, opened.report):
            yield opened.path
    _finish(opened.report)


def said_evicted(err: Console, evicted: tuple[int, int]) -> None:
    """Datasets deleted from the cache to keep it under its limit: said even with -q (data the user may
    look for is gone)."""
    deleted, freed = evicted
    if deleted:
        err.print(
            f"tracelens: cache: deleted {deleted} least recently used dataset(s), {megabytes(freed)}, "
            f"to stay under {CACHE_LIMIT_VAR}={os.environ.get(CACHE_LIMIT_VAR, DEFAULT_CACHE_LIMIT)}",
            markup=False,
        )


def cache_used(err: Console, target: Path, limit: int) -> None:
    """A cache dataset was brought up to date: mark it used, and keep the cache under its limit."""
    mark_used(target)
    said_evicted(err, evict(limit, keep=target))


@contextmanager
def _naming(err: Console, report: Report) -> Iterator[None]:
    """Name the inputs not read, or read in part, after the command's own output, whatever its outcome."""
    try:
        yield
    finally:
        report_problems(err, report)


def _finish(report: Report) -> None:
    if report.problems or report.unread:
        raise typer.Exit(1)


def cache(
    clear_all: Annotated[
        bool, typer.Option("--clear", help="Delete every cached dataset (those in use are left).")
    ] = False,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than", min=0, help="With --clear: only the datasets unused for this many days."
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Read every part file of every cached dataset whole and check it against the content hash its commit recorded; a dataset with a bad part is deleted (made again when next used) and named. Exit 2 when one was found.",
        ),
    ] = False,
) -> None:
    """Where the cache of parsed logs lives, what it holds and how big it is; --clear empties it,
    --verify checks its part files' contents."""
    from tracelens.engine.cache import cache_root

    out = Console(highlight=False, soft_wrap=True)
    if older_than is not None and not clear_all:
        raise InputError("--older-than goes with --clear")
    if check:
        if clear_all:
            raise InputError("--verify and --clear exclude each other")
        checked, bad = verify()
        out.print(f"verified {checked} cached dataset(s): {len(bad)} with a bad part file", markup=False)
        for line in bad:
            sys.stderr.write(f"tracelens: cache: {line}\n")
        if bad:
            raise typer.Exit(2)
        return
    if clear_all:
        deleted, freed, left = clear(older_than)
        out.print(f"deleted {deleted} cached dataset(s), {megabytes(freed)} freed", markup=False)
        for message in left:
            out.print(f"left: {message}", markup=False)
        return
    found = entries()
    total = sum(e.bytes for e in found)
    limit = os.environ.get(CACHE_LIMIT_VAR, DEFAULT_CACHE_LIMIT)
    out.print(
        f"{cache_root()}: {len(found)} dataset(s), {megabytes(total)} (limit {limit}, ${CACHE_LIMIT_VAR})",
        markup=False,
    )
    for entry in found:
        first = entry.inputs[0] if entry.inputs else "(empty)"
        more = f" and {len(entry.inputs) - 1} more" if len(entry.inputs) > 1 else ""
        out.print(f"  {entry.folder.name}  {megabytes(entry.bytes, width=8)}  {first}{more}", markup=False)
