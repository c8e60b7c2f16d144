"""`tracelens parse -o DIR`: logs in, a Parquet dataset out, in bounded memory, on all cores or a Dask
cluster, reading again only what changed.

The steps: find the inputs; compare them with the manifest (skip the unchanged, read only the new
bytes of a log that grew); cut the rest into tasks (`ranges.py`, `plan.py`); run the tasks, which
write part files into a staging folder; check that byte ranges agreed on their run numbers (else read
that file again in one piece); commit: move the new files into place, rebuild `faults` of the touched
sources and `runs`, write the manifest. The commit goes through a journal, so a run stopped at any
point leaves the old dataset or the new one, and the next run finishes an interrupted commit.

A run that finds nothing changed ends after that comparison, with the manifest's row counts. What reads
logs, parses them and writes tables (`ranges`, `task`, the table-building half of `commit`) is imported
by the steps that use it, so that this second look loads neither polars nor pyarrow nor a parser.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import BrokenExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from tracelens.engine import integrity
from tracelens.engine import manifest as mf
from tracelens.engine.commit import STAGING, commit_run, load_table_libraries, recover
from tracelens.engine.executors import LOCAL, Executor, TaskFailed, make_executor
from tracelens.engine.lock import DEFAULT_LOCK_TIMEOUT, Notify, reading, writing
from tracelens.engine.manifest import Manifest, TaskRecord, UnitRecord
from tracelens.engine.plan import (
    ScanResult,
    SourceResult,
    TaskResult,
    TaskSpec,
    Unit,
)
from tracelens.engine.records import RecordError
from tracelens.engine.sizing import DEFAULT_MAX_MEMORY, TASKS_PER_WORKER, size_run
from tracelens.engine.store import META, Store
from tracelens.errors import InputError
from tracelens.sizes import DEFAULT_BLOCK_BYTES, DEFAULT_RANGE_BYTES
from tracelens.sources.inputs import Input, discover

# Called with (bytes done, bytes in total) as tasks finish.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class EngineOptions:
    jobs: int | None = None  # worker processes; None: one per core
    executor: str = LOCAL
    scheduler: str | None = None
    block_bytes: int = DEFAULT_BLOCK_BYTES
    range_bytes: int = DEFAULT_RANGE_BYTES
    base_date: dt.date | None = None  # for time-only prefixes; None: each file's modification date
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT  # seconds to wait for a dataset another process writes
    # Bytes the process tree may hold (the local executor): bounds the workers, blocks and tasks (`sizing`)
    max_memory: int = DEFAULT_MAX_MEMORY
    # Read every part file of the dataset whole and check it against its content hash first; the
    # inputs of a bad one are read again (`integrity.damaged_inputs`)
    verify: bool = False


@dataclass
class Report:
    """What a run did: for the CLI's summary and exit code."""

    inputs: int = 0
    unchanged: int = 0
    grown: int = 0
    read: int = 0  # inputs (fully or partly) read in this run
    bytes_read: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # sources read only up to a break
    unread: list[str] = field(default_factory=list)  # files and folders found but not readable at all
    mended: list[str] = field(default_factory=list)  # bad part files found, whose inputs were read again
    seconds: float = 0.0


def _task_id() -> str:
    return uuid.uuid4().hex[:12]


# --------------------------------------------------------------------------------------------- planning


@dataclass
class _Work:
    """Inputs to (re)read: ``start`` is where reading resumes (0, or the last range of a grown log)."""

    item: Input
    start: int = 0
    first_line: int = 1
    run_offset: int = 0


def _plan_inputs(
    inputs: list[Input], old: Manifest, report: Report, damaged: frozenset[str] = frozenset()
) -> tuple[dict[str, TaskRecord], list[_Work], list[Unit]]:
    """Decide per input: keep, read from where it grew, or read whole. Returns the kept tasks, the work
    to plan, and units of unchanged inputs to read again because they shared a task with a changed one.
    A ``damaged`` input (a part file of it missing or cut) is read again as a changed one."""
    given = {i.path: i for i in inputs}
    changes: dict[str, mf.Change] = {
        i.path: "changed" if i.path in damaged else mf.change_of(i, old.inputs.get(i.path)) for i in inputs
    }
    last_unit: dict[str, UnitRecord] = {}
    counted: set[tuple[str, int]] = set()  # (input, start) of the pieces that saw metrics counters
    for task in old.tasks.values():
        for unit in task.units:
            if unit.input not in last_unit or unit.start > last_unit[unit.input].start:
                last_unit[unit.input] = unit
        counted.update((result.input, result.start) for result in task.sources if result.counters)
    # A counter going back is a restart only beside the pages before it (`parsers/restarts.py`): a
    # grown log whose kept ranges saw counters is read again whole, as a split one is (`_ranges_agree`).
    for path, change in changes.items():
        if change == "grown" and any(p == path and s < last_unit[path].start for p, s in counted):
            changes[path] = "changed"
    kept: dict[str, TaskRecord] = {}
    redo: list[Unit] = []
    for task_id, task in old.tasks.items():
        paths = [u.input for u in task.units]
        gone = [p for p in paths if p not in given]
        touched = [
            p
            for p, u in zip(paths, task.units, strict=True)
            if p in given and (changes[p] == "changed" or (changes[p] == "grown" and u is last_unit[p]))
        ]
        if not gone and not touched:
            kept[task_id] = task
            continue
        for p, u in zip(paths, task.units, strict=True):
            if p in given and changes[p] == "same":
                redo.append(_unit_from_record(given[p], u))
    work: list[_Work] = []
    for item in inputs:
        change = changes[item.path]
        if change == "same":
            report.unchanged += 1
        elif change == "grown":
            report.grown += 1
            last = last_unit[item.path]
            work.append(_Work(item, last.start, last.first_line, last.run_offset))
        else:
            work.append(_Work(item))
    report.read = len(work) + len({u.input.path for u in redo})
    return kept, work, redo


def _unit_from_record(item: Input, record: UnitRecord) -> Unit:
    return Unit(item, record.start, record.end, record.first_line, record.run_offset, record.base_date)


def _split(
    work: list[_Work], options: EngineOptions, executor: Executor
) -> tuple[list[Unit], dict[str, list[Unit]]]:
    """Units for the work: whole inputs, or byte ranges of big plain files with their first line and
    predicted run numbers. Returns the whole units and, per split input, its ranges in order.

    Planning reads a few lines around each cut with the parsers, so it runs on the executor's workers,
    like the scans: this process then imports no table library before the commit, when the workers are
    gone (with polars, pyarrow and the parsers it held 87 MiB PSS through a parse of 1 GiB, now 29)."""
    base_date = options.base_date.isoformat() if options.base_date else None
    to_plan = [
        (w.item, options.range_bytes, w.start)
        for w in work
        if w.item.splittable and w.item.size - w.start > options.range_bytes
    ]
    planned = dict(executor.run(_plan, to_plan)) if to_plan else {}
    whole: list[Unit] = []
    split: dict[str, list[Unit]] = {}
    scans: list[tuple[str, int, int, int]] = []  # (path, index, start, end)
    bounds_of: dict[str, list[tuple[int, int | None]]] = {}
    for w in work:
        item = w.item
        bounds = planned.get((item, options.range_bytes, w.start))
        if bounds is None or len(bounds) == 1:
            whole.append(Unit(item, w.start, None, w.first_line, w.run_offset, base_date))
            continue
        bounds_of[item.path] = bounds
        for i, (a, b) in enumerate(bounds[:-1]):
            scans.append((item.path, i, a, b if b is not None else item.size))
    results = dict(executor.run(_scan, scans)) if scans else {}
    scanned_of: dict[str, list[ScanResult]] = {}
    for key in scans:  # each file's ranges in order
        scanned_of.setdefault(key[0], []).append(results[key])
    # The lines that may start a run, read on a worker: one item per file, its ranges' lines in order.
    to_count = [(path, [scan.candidates for scan in scanned]) for path, scanned in scanned_of.items()]
    heads_of = {path: heads for (path, _), heads in executor.run(_heads, to_count)} if to_count else {}
    for w in work:
        ranges = bounds_of.get(w.item.path)
        if ranges is None:
            continue
        scanned = scanned_of[w.item.path]
        heads = heads_of[w.item.path]
        units = []
        line, run = w.first_line, w.run_offset
        for i, (a, b) in enumerate(ranges):
            units.append(Unit(w.item, a, b, line, run, base_date))
            if i < len(ranges) - 1:
                line += scanned[i].newlines
                run += heads[i]
        split[w.item.path] = units
    return whole, split


# What the workers run, named here: the modules that hold the work import polars, which this process
# imports only to commit (a function is sent by its module's name, and unpickling imports that module).


def _plan(key: tuple[Input, int, int]) -> list[tuple[int, int | None]]:
    from tracelens.engine.ranges import plan_ranges

    item, range_bytes, start = key
    return plan_ranges(item, range_bytes, start)


def _scan(key: tuple[str, int, int, int]) -> ScanResult:
    from tracelens.engine.ranges import scan_range

    path, _, start, end = key
    return scan_range(path, start, end)


def _heads(item: tuple[str, list[list[bytes]]]) -> list[int]:
    from tracelens.engine.ranges import server_args_heads

    return server_args_heads(item[1])


def _run_task(spec: TaskSpec) -> TaskResult:
    from tracelens.engine.task import run_task

    return run_task(spec)


# A source costs its task a fixed part whatever its size (its blocks' parser calls, about a hundred per
# block, and its own state and records): a 14 KB log took about 45 ms on one core, what some 3 MiB of a
# big log take. So files are grouped into tasks by that cost, not by their bytes alone: 2,000 such logs
# (28 MB) made one task, and one core parsed them all for 100-112 s while the other waited.
SOURCE_COST_BYTES = 3 << 20


def _cost(unit: Unit) -> int:
    """What parsing ``unit`` costs, in bytes of a big log."""
    return max(unit.size, SOURCE_COST_BYTES)


def _tasks(
    whole: list[Unit],
    split: dict[str, list[Unit]],
    root: str,
    staging: str,
    options: EngineOptions,
    workers: int = 1,
) -> list[TaskSpec]:
    """One task per range of a split file; whole files grouped by their cost (`_cost`) into a few groups
    per worker (`TASKS_PER_WORKER`): bigger groups when they are many keep part files few (each task writes
    its own), smaller ones when they are few keep every worker busy."""

    def make(units: list[Unit]) -> TaskSpec:
        return TaskSpec(_task_id(), tuple(units), root, staging, options.block_bytes)

    tasks = [make([u]) for units in split.values() for u in units]
    grouped: list[Unit] = []
    for unit in whole:
        if not unit.input.splittable or unit.input.size >= options.range_bytes:
            tasks.append(make([unit]))
        else:
            grouped.append(unit)
    grouped.sort(key=lambda u: -u.input.size)
    budget = max(SOURCE_COST_BYTES, sum(map(_cost, grouped)) // (workers * TASKS_PER_WORKER))
    group: list[Unit] = []
    cost = 0
    for unit in grouped:
        group.append(unit)
        cost += _cost(unit)
        if cost >= budget:
            tasks.append(make(group))
            group, cost = [], 0
    if group:
        tasks.append(make(group))
    # Dearest first, so that the last task to finish is a cheap one.
    return sorted(tasks, key=lambda t: -sum(map(_cost, t.units)))


# --------------------------------------------------------------------------------------------- checking


def _ranges_agree(units: list[Unit], results: dict[int, SourceResult]) -> bool:
    """Whether the ranges of a split file got the line and run numbers the whole file would give them."""
    for i, after in enumerate(units[1:]):
        got = results[i]
        if got.error or got.first_line + got.lines != after.first_line:
            return False
        if got.run_offset + got.server_args != after.run_offset:
            return False
        if results[i + 1].time_only:  # its day roll-over needs the clock of the lines before it
            return False
        if results[i + 1].counters:  # a counter going back is a restart only beside the pages before it
            return False
    return True


# --------------------------------------------------------------------------------------------- the run


def parse_to_dataset(
    paths: list[str],
    out: str,
    options: EngineOptions | None = None,
    progress: Progress | None = None,
    notify: Notify | None = None,
) -> Report:
    """Parse ``paths`` into the dataset at ``out`` (a folder or an fsspec URL), holding its write lock;
    ``notify`` is told when the run waits for the lock. An output that cannot be written (a file, a
    read-only folder, a full disk, removed during the run) and a worker that dies are an InputError of
    one line; the dataset is then as it was before the run."""
    options = options or EngineOptions()
    started = time.perf_counter()
    report = Report()
    inputs = discover([*paths], report.unread)
    report.inputs = len(inputs)
    store = Store(out)
    _check_folder(store, out)
    try:
        with _locked(store, out, "write", options.lock_timeout, notify):
            store.check_writable()
            _parse_locked(inputs, store, out, options, progress, report)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise InputError(f"cannot write the dataset to {out}: {exc.strerror or exc}{where}") from exc
    except BrokenExecutor as exc:
        raise InputError(
            f"a worker process died before its task was done ({exc}); the dataset at {out} is as it was, run again"
        ) from exc
    except TaskFailed as exc:
        raise InputError(f"{exc}; the dataset at {out} is as it was") from exc
    report.seconds = time.perf_counter() - started
    return report


def _check_folder(store: Store, out: str) -> None:
    """A dataset path that is a file, or a folder of another tracelens dataset format: one line, exit 2,
    and nothing in it touched."""
    try:
        _check_folder_usable(store, out)
    except OSError as exc:  # e.g. a parent folder this user cannot enter
        raise InputError(f"cannot use the dataset folder {out}: {exc.strerror or exc}") from exc


def _check_folder_usable(store: Store, out: str) -> None:
    if store.local and Path(store.root).exists() and not Path(store.root).is_dir():
        raise InputError(f"{out} is a file, not a dataset folder: name a folder (new or a dataset)")
    if store.local:
        try:
            Path(store.root).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the dataset folder {out}: {exc.strerror or exc}") from exc
        if not os.access(store.root, os.W_OK):
            read_only = bool(os.statvfs(store.root).f_flag & os.ST_RDONLY)
            why = "it is on a read-only file system" if read_only else "permission denied"
            raise InputError(f"cannot write to the dataset folder {out}: {why}")
    read_manifest(store, out)


def read_manifest(store: Store, out: str) -> Manifest:
    """The manifest, or an empty one for a new dataset; an `InputError` for one this version cannot use."""
    try:
        data = store.read_json(mf.MANIFEST)
    except ValueError as exc:
        raise InputError(f"{out}: its manifest ({mf.MANIFEST}) is not valid JSON ({exc})") from exc
    if data is None:
        return mf.empty()
    try:
        return mf.load_manifest(data)
    except mf.IncompatibleVersion as exc:
        raise InputError(
            f"{out} was written by tracelens {exc.written_by} in dataset format "
            f"{exc.version}, and this tracelens reads format {mf.VERSION}: "
            "parse into a new folder, or delete this one to parse it again"
        ) from exc
    except RecordError as exc:
        raise InputError(
            f"{out}: its manifest ({mf.MANIFEST}) is damaged ({exc}): "
            "parse into a new folder, or delete this one to parse it again"
        ) from exc


def _locked(store: Store, out: str, mode: str, timeout: float, notify: Notify | None):
    if not store.local:  # SQLite locks need a local file system; see lock.py
        return nullcontext()
    meta = Path(store.path(META))
    return (writing if mode == "write" else reading)(meta, out, timeout, notify)


@contextmanager
def reading_dataset(
    path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, notify: Notify | None = None
) -> Iterator[Manifest]:
    """Hold the read lock of a dataset while its tables are read, after finishing a commit a killed writer
    left half done. Yields its manifest."""
    store = Store(path)
    manifest = read_manifest(store, path)
    # Unlocked datasets (fsspec URLs) and ones this user cannot write are left as they are.
    writable = store.local and os.access(store.path(META), os.W_OK)
    if writable and (store.exists(mf.JOURNAL) or store.listdir(STAGING)):
        with _locked(store, path, "write", timeout, notify):
            recover(store)
    with _locked(store, path, "read", timeout, notify):
        current = read_manifest(store, path) if store.exists(mf.MANIFEST) else manifest
        integrity.check_parts(store, current, path)
        try:
            yield current
        except Exception as exc:  # a part file damaged in place (same size) fails where it is read
            named = integrity.damaged_read(store, current, path, exc)
            if named is None:
                raise
            raise named from exc


def _parse_locked(
    inputs: list[Input],
    store: Store,
    out: str,
    options: EngineOptions,
    progress: Progress | None,
    report: Report,
) -> Report:
    recover(store)
    old = read_manifest(store, out)
    damaged, report.mended = integrity.damaged_inputs(store, old, options.verify)
    kept, work, redo = _plan_inputs(inputs, old, report, damaged)
    if not work and not redo and set(old.inputs) == {i.path for i in inputs} and old.tasks:
        report.rows = old.rows
        report.problems = [e for s in old.sources.values() for e in s.errors]
        return report
    staging = f"{STAGING}/{_task_id()}"
    options, jobs = _sized(options, work, redo)
    executor = make_executor(options.executor, jobs, options.scheduler, store.via_fsspec)
    try:
        whole, split = _split(work, options, executor)
        specs = _tasks(whole + redo, split, out, staging, options, executor.workers)
        new_tasks = _run(executor, specs, progress, load_table_libraries)
        # Ranges of a file whose run or line numbers did not add up are read again in one piece.
        again = []
        for path, units in split.items():
            by_start = {}
            for spec, result in new_tasks.values():
                for unit, src in zip(spec.units, result.sources, strict=False):
                    if unit.input.path == path:
                        by_start[unit.start] = src
            if not _ranges_agree(units, {i: by_start[u.start] for i, u in enumerate(units)}):
                for task_id in [k for k, (s, _) in new_tasks.items() if s.units[0].input.path == path]:
                    spec, result = new_tasks.pop(task_id)
                    for files in result.files.values():
                        for f in files:
                            store.delete(f)
                first = units[0]
                again.append(
                    Unit(first.input, first.start, None, first.first_line, first.run_offset, first.base_date)
                )
        if again:
            new_tasks.update(_run(executor, _tasks(again, {}, out, staging, options, executor.workers), None))
    except BaseException:
        executor.close()
        store.delete(STAGING)  # this run's, the only one under the write lock (recover cleared the rest)
        raise
    executor.close()
    report.bytes_read = sum(r.bytes_read for _, r in new_tasks.values())
    try:
        manifest = commit_run(store, staging, old, kept, new_tasks, inputs)
    except BaseException:
        if not store.exists(mf.JOURNAL):  # stopped before its journal (a full disk): as it was
            store.delete(STAGING)
        raise
    report.rows = manifest.rows
    report.problems = [e for s in manifest.sources.values() for e in s.errors]
    return report


# Up to this many sources of less than a range in all are read here (the sample logs are 12): past it,
# their fixed cost per source (`SOURCE_COST_BYTES`) is worth the workers' start.
_INLINE_SOURCES = 16
# Whatever --jobs asks, work of at most this many blocks is read here: the fork server and a worker
# cost more to start (about 0.25 CPU-s and a second of wall for a 1 MB log) than such work takes.
_INLINE_BLOCKS = 2


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _sized(options: EngineOptions, work: list[_Work], redo: list[Unit]) -> tuple[EngineOptions, int | None]:
    """The options with the block and task sizes, and the workers, that keep the local executor's process
    tree under ``options.max_memory`` (`sizing.size_run`). Less than one range of work in a few sources
    (a few small logs, or a log that grew a little) is read here without --jobs, and a couple of blocks
    whatever it asks: starting worker processes would cost more than the work (1.9 s against 1.5 s for
    the sample logs)."""
    if options.executor != LOCAL:
        return options, options.jobs
    todo = sum(w.item.size - w.start for w in work) + sum(u.size for u in redo)
    few = len(work) + len(redo) <= _INLINE_SOURCES
    # More workers than cores only take turns on them, each with its own start and heap.
    jobs = min(options.jobs or _cores(), _cores())
    if few and todo <= min(options.range_bytes, _INLINE_BLOCKS * options.block_bytes):
        jobs = 1
    if options.jobs is None and todo <= options.range_bytes and few:
        jobs = 1
    sizing = size_run(jobs, todo, options.max_memory, options.block_bytes, options.range_bytes)
    sized = replace(options, block_bytes=sizing.block_bytes, range_bytes=sizing.task_bytes)
    return sized, sizing.workers


def _run(
    executor: Executor,
    specs: list[TaskSpec],
    progress: Progress | None,
    when_idle: Callable[[], None] | None = None,
) -> dict[str, tuple[TaskSpec, TaskResult]]:
    """Run the tasks; ``when_idle`` is called once fewer tasks are left than there are workers, so that
    a worker (and a core) waits: what the commit needs next can load meanwhile."""
    total = sum(s.size for s in specs)
    done = 0
    out: dict[str, tuple[TaskSpec, TaskResult]] = {}
    if progress is not None:
        progress(0, total)
    for spec, result in executor.run(_run_task, specs):
        out[spec.task_id] = (spec, result)
        done += spec.size
        if progress is not None:
            progress(done, total)
        if when_idle is not None and executor.workers > 1 and len(specs) - len(out) < executor.workers:
            when_idle()
            when_idle = None
    return out
