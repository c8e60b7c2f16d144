"""A dataset's part files against its manifest, which records each file's bytes and content hash at
its commit (`Manifest.sizes`, `Manifest.digests`).

- Every read checks each part file with one stat (`check_parts`): a file deleted or cut short would
  otherwise be read as rows that never were. A missing one, or one of another size, is an `InputError`
  naming it (exit 2).
- On request (`tracelens parse --verify`, `tracelens cache --verify`) every part file is read whole and
  hashed (`verify`): a file changed in place at the same size is found too. A manifest written before
  hashes were recorded has none; its files are decoded whole instead, which finds a damaged one but not
  rows changed into other valid rows.
- A read that fails on a part file's bytes (`damaged_read`) names the file, in one line, instead of the
  Parquet reader's message about a struct field.

A parse mends what it finds (`damaged_inputs`): the inputs whose part files are bad are read again.
"""

from __future__ import annotations

from collections.abc import Iterator

from tracelens.engine import manifest as mf
from tracelens.engine.manifest import Manifest
from tracelens.engine.store import Store
from tracelens.errors import InputError

MEND = (
    "parse its logs again (`tracelens parse --verify LOGS -o DATASET`; the cache: `tracelens cache --verify`)"
)


def _stat_problem(store: Store, manifest: Manifest, rel: str) -> str | None:
    """What one stat says is wrong with part file ``rel``, or None."""
    try:
        size = store.size(rel)
    except FileNotFoundError:
        return f"its part file {rel} is missing"
    expected = manifest.sizes.get(rel)
    if expected is not None and size != expected:
        return f"its part file {rel} is damaged ({size:,} bytes, committed with {expected:,})"
    return None


def _content_problem(store: Store, manifest: Manifest, rel: str) -> str | None:
    """What reading part file ``rel`` whole says is wrong with it (its hash, or without one its
    decoding), or None."""
    expected = manifest.digests.get(rel)
    try:
        if expected is not None:
            if store.digest(rel) != expected:
                return f"its part file {rel} is damaged (its bytes differ from those committed)"
            return None
        why = _undecodable(store, rel)
    except FileNotFoundError:
        return f"its part file {rel} is missing"
    return None if why is None else f"its part file {rel} is damaged (it cannot be read: {why})"


def _undecodable(store: Store, rel: str) -> str | None:
    """Why part file ``rel`` cannot be decoded as Parquet, or None when it can."""
    import pyarrow.parquet as pq

    try:
        with store.fs.open(store.path(rel), "rb") as fh:
            pq.ParquetFile(fh).read()
    except FileNotFoundError:
        raise
    except Exception as exc:  # pyarrow raises OSError, ArrowInvalid, ... for damaged bytes
        return " ".join(str(exc).split())[:120] or type(exc).__name__
    return None


def problems(store: Store, manifest: Manifest, verify: bool = False) -> Iterator[str]:
    """Each part file's problem: by one stat each, and with ``verify`` by its content too."""
    for rel in mf.part_files(manifest):
        problem = _stat_problem(store, manifest, rel)
        if problem is None and verify:
            problem = _content_problem(store, manifest, rel)
        if problem is not None:
            yield problem


def check_parts(store: Store, manifest: Manifest, path: str) -> None:
    """Every part file the manifest names is there, of the size it was committed with (one stat
    each); an `InputError` naming the first that is not."""
    for problem in problems(store, manifest):
        raise InputError(f"{path}: {problem}; {MEND}")


def damaged_inputs(store: Store, manifest: Manifest, verify: bool) -> tuple[frozenset[str], list[str]]:
    """The inputs of tasks whose part files are bad (by a stat; with ``verify`` by their content too),
    which a parse reads again so that the dataset mends, and the problems found."""
    damaged: set[str] = set()
    found: list[str] = []
    for task in manifest.tasks.values():
        for rel in (f for files in task.files.values() for f in files):
            problem = _stat_problem(store, manifest, rel)
            if problem is None and verify:
                problem = _content_problem(store, manifest, rel)
            if problem is not None:
                damaged.update(u.input for u in task.units)
                found.append(problem)
                break
    if verify:
        # A source's faults file is made again by a commit that reads one of its inputs again; the runs
        # file by every commit, so reading any one input again mends it.
        for source, rel in manifest.faults.items():
            problem = _stat_problem(store, manifest, rel) or _content_problem(store, manifest, rel)
            if problem is not None:
                found.append(problem)
                damaged.update(u.input for t in manifest.tasks.values() for u in t.units if _has(t, source))
        if manifest.tasks and (
            problem := _stat_problem(store, manifest, mf.RUNS_FILE)
            or _content_problem(store, manifest, mf.RUNS_FILE)
        ):
            found.append(problem)
            if not damaged:
                task = next(iter(manifest.tasks.values()))
                damaged.add(task.units[0].input)
    return frozenset(damaged), found


def _has(task: mf.TaskRecord, source: str) -> bool:
    return any(s.source == source for s in task.sources)


def damaged_read(store: Store, manifest: Manifest, path: str, exc: BaseException) -> InputError | None:
    """For a read of the dataset that failed in the table libraries (polars, pyarrow: a part file's
    bytes that do not decode), as it is or inside an `InputError` (`sql` says its engine's error): an
    `InputError` naming the first bad part file, found by reading each whole; else None."""
    if not any(_from_table_library(e) for e in (exc, exc.__cause__) if e is not None):
        return None
    for rel in mf.part_files(manifest):
        problem = _stat_problem(store, manifest, rel) or _content_problem(store, manifest, rel)
        if problem is not None:
            return InputError(f"{path}: {problem}; {MEND}")
    return None


def _from_table_library(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("polars", "pyarrow")
