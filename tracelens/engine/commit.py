"""The commit of a parse run: move the staged part files into place, rebuild `faults` of the touched
sources and `runs`, write the manifest. Every step goes through a journal first, so a run stopped at
any point leaves the old dataset or the new one, and `recover` finishes an interrupted commit.

Every run calls `recover` first, and so does every reader of a dataset, also when nothing changed: this
module imports polars, the parsers and the tables' types only in the functions that build tables."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING

from tracelens import __version__
from tracelens.engine import manifest as mf
from tracelens.engine.manifest import Journal, Manifest, SourceSummary, TaskRecord
from tracelens.engine.plan import SourceResult, TaskResult, TaskSpec
from tracelens.engine.records import RecordError
from tracelens.engine.store import FAULTS_PRE, META, Store
from tracelens.errors import InputError
from tracelens.sources.inputs import Input
from tracelens.tables.names import TABLES, C, Kind, T

if TYPE_CHECKING:
    import polars as pl

STAGING = f"{META}/staging"
FAULTS_PRE_DIR = f"{META}/faults_pre"


def load_table_libraries() -> None:
    """Import what the commit builds tables with: polars, pyarrow, the schema and the parsers it reads
    with (0.24 s in all). The engine calls it once the workers hold the last tasks, so that the import
    overlaps them instead of delaying the commit, and this process holds none of it while they parse."""
    import tracelens.parsers.faults
    import tracelens.parsers.finalize
    import tracelens.tables.schema  # noqa: F401


def _source_key(source: str) -> str:
    return hashlib.blake2b(source.encode(), digest_size=8).hexdigest()


def _final_path(staged: str, staging: str) -> str:
    rel = posixpath.relpath(staged, staging)
    table, name = rel.split("/", 1)
    return f"{FAULTS_PRE_DIR}/{name}" if table == FAULTS_PRE else f"{table}/{name}"


def _faults_of(store: Store, files: list[str], source: str) -> pl.DataFrame:
    import polars as pl

    from tracelens.tables.schema import conform_parts

    frames = [store.read_parquet(f).filter(pl.col(C.SOURCE) == source) for f in files]
    return conform_parts(T.FAULTS, [f for f in frames if f.height]).sort(C.FIRST_LINE)


def _runs(store: Store, tasks: dict[str, TaskRecord], locate: Callable[[str], str]) -> pl.DataFrame:
    import polars as pl

    from tracelens.parsers.finalize import RUN_ARGS, runs_from_spans
    from tracelens.tables.schema import conform_parts

    spans = [[s.source, *span] for task in tasks.values() for s in task.sources for span in s.spans]
    schema = {
        C.SOURCE: pl.String,
        C.RUN: pl.Int32,
        C.START_LINE: pl.Int64,
        C.START_TS: pl.Int64,
        C.END_TS: pl.Int64,
        C.LINE_COUNT: pl.Int64,
    }
    frame = pl.DataFrame(spans, schema=schema, orient="row").with_columns(
        pl.col(C.START_TS).cast(pl.Datetime("us")), pl.col(C.END_TS).cast(pl.Datetime("us"))
    )
    merged = frame.group_by(C.SOURCE, C.RUN, maintain_order=True).agg(
        pl.col(C.START_LINE).min(),
        pl.col(C.START_TS).min(),
        pl.col(C.END_TS).max(),
        pl.col(C.LINE_COUNT).sum(),
    )
    args_files = [locate(f) for task in tasks.values() for f in task.files.get(T.SERVER_ARGS, [])]
    wanted = pl.col(C.KEY).is_in(list(RUN_ARGS))
    server_args = conform_parts(T.SERVER_ARGS, [store.read_parquet(f).filter(wanted) for f in args_files])
    return runs_from_spans(merged.sort(C.SOURCE, C.RUN), server_args)


def _apply(store: Store, journal: Journal) -> None:
    """Carry out a commit; every step can be repeated, so an interrupted commit is replayed as is."""
    from tracelens.tables.schema import empty

    for src, dst in journal.moves:
        store.move(src, dst)
    for rel in journal.deletes:
        store.delete(rel)
    if not any(dst == mf.MANIFEST for _, dst in journal.moves):  # a journal written before staging it
        store.write_json(mf.MANIFEST, mf.to_json(journal.manifest))
    for table in TABLES:  # a journal written before staging them
        if not [f for f in store.listdir(table) if f.endswith(".parquet")]:
            store.write_parquet(f"{table}/empty.parquet", empty(table))
    store.delete(mf.JOURNAL)
    store.delete(STAGING)


def recover(store: Store) -> None:
    """Finish a commit that was interrupted; drop what an interrupted run left in staging. A journal that
    cannot be read, or of another dataset format, is an `InputError` and nothing is touched."""
    try:
        data = store.read_json(mf.JOURNAL)
    except ValueError as exc:
        raise InputError(f"{store.url}: its commit journal ({mf.JOURNAL}) is not valid JSON ({exc})") from exc
    if data is not None:
        try:
            journal = mf.load_journal(data)
        except RecordError as exc:
            raise InputError(
                f"{store.url}: its commit journal ({mf.JOURNAL}) cannot be used ({exc}): "
                "finish it with the tracelens that wrote it, or parse into a new folder"
            ) from exc
        _apply(store, journal)
    store.delete(STAGING)


def commit_run(
    store: Store,
    staging: str,
    old: Manifest,
    kept: dict[str, TaskRecord],
    new_tasks: dict[str, tuple[TaskSpec, TaskResult]],
    inputs: list[Input],
) -> Manifest:
    """Commit a run: the ``kept`` tasks of the ``old`` manifest and the ``new_tasks`` (their part files
    in ``staging``) become the dataset of ``inputs``; returns the new manifest, written."""
    from tracelens.parsers.faults import share_within_groups
    from tracelens.tables.schema import conform, empty

    input_records = {
        i.path: (
            old.inputs[i.path] if i.path in old.inputs and not _touched(i, new_tasks) else mf.input_record(i)
        )
        for i in inputs
    }
    moves: list[tuple[str, str]] = []
    tasks = dict(kept)
    for task_id, (spec, result) in new_tasks.items():
        final_files: dict[str, list[str]] = {}
        for table, files in result.files.items():
            for f in files:
                dst = _final_path(f, staging)
                moves.append((f, dst))
                final_files.setdefault(table, []).append(dst)
        tasks[task_id] = mf.task_record(spec.units, result, final_files)
    # The journal's moves pass over a file that is not there (a replay finds it moved already), so a part
    # file that is gone before the commit (the dataset's folder removed during the run) would leave a
    # dataset that counts rows it has not: the run fails instead, with nothing committed.
    gone = next((src for src, _ in moves if not store.exists(src)), None)
    if gone is not None:
        raise FileNotFoundError(errno.ENOENT, "a staged part file is gone", store.path(gone))
    dropped = {k: v for k, v in old.tasks.items() if k not in kept}
    deletes = [f for task in dropped.values() for files in task.files.values() for f in files]
    staged = {dst: src for src, dst in moves}

    def locate(rel: str) -> str:
        return staged.get(rel, rel)

    # faults of every source a new or dropped task touched, shared within crash groups once whole
    touched = {s.source for _, r in new_tasks.values() for s in r.sources}
    touched |= {s.source for task in dropped.values() for s in task.sources}
    # Where each source's faults (before crash groups share their exception) are: only in tasks whose
    # piece of the source had fault lines.
    fault_files: dict[str, set[str]] = {}
    for task in tasks.values():
        for s in task.sources:
            if s.lines_by_kind.get(Kind.FAULT):
                fault_files.setdefault(s.source, set()).update(task.files.get(FAULTS_PRE, []))
    faults_of = {k: v for k, v in old.faults.items() if k not in touched}
    for source in sorted(touched):
        if source in old.faults:
            deletes.append(old.faults[source])
        files = sorted(fault_files.get(source, ()))
        faults = (
            share_within_groups(_faults_of(store, [locate(f) for f in files], source))
            if files
            else empty(T.FAULTS)
        )
        if faults.height:
            rel = f"{T.FAULTS}/{_source_key(source)}.parquet"
            store.write_parquet(f"{staging}/{rel}", conform(T.FAULTS, faults))
            moves.append((f"{staging}/{rel}", rel))
            faults_of[source] = rel
            deletes = [d for d in deletes if d != rel]
    runs = _runs(store, tasks, locate)
    store.write_parquet(f"{staging}/{T.RUNS}/runs.parquet", runs)
    moves.append((f"{staging}/{T.RUNS}/runs.parquet", f"{T.RUNS}/runs.parquet"))
    manifest = Manifest(
        version=mf.VERSION,
        tracelens=__version__,
        inputs=input_records,
        tasks=tasks,
        faults=faults_of,
        sources=_source_summaries(tasks, input_records),
        rows=_rows(tasks, runs.height),
    )
    # One stat per new part file (a kept one keeps its size): what a read checks the files against.
    new = {dst: src for src, dst in moves}
    sizes = {
        rel: store.size(new[rel]) if rel in new else old.sizes.get(rel) or store.size(rel)
        for rel in mf.part_files(manifest)
    }
    # Content hashes: a task's files were hashed by its worker as it closed them, the faults and runs
    # files written here are hashed here, a kept file keeps its hash (none when its manifest had none).
    staged_digests = {d: digest for _, result in new_tasks.values() for d, digest in result.digests.items()}
    digests: dict[str, str] = {}
    for rel in mf.part_files(manifest):
        if rel in new:
            digests[rel] = staged_digests.get(new[rel]) or store.digest(new[rel])
        elif rel in old.digests:
            digests[rel] = old.digests[rel]
    manifest = dataclasses.replace(manifest, sizes=sizes, digests=digests)
    staged_rest, placeholders = _stage_the_rest(store, staging, manifest)
    journal = Journal(moves + staged_rest, deletes + placeholders, manifest)
    store.write_json(mf.JOURNAL, mf.to_json(journal))
    _apply(store, journal)
    return manifest


def _stage_the_rest(
    store: Store, staging: str, manifest: Manifest
) -> tuple[list[tuple[str, str]], list[str]]:
    """Write what the commit still has to write (the manifest, an `empty.parquet` for each table left
    without a file) into staging, before the journal: carrying the journal out is then renames and
    deletes only, which a full disk cannot stop. A disk that fills before the journal is whole leaves
    the dataset as it was, and readers read it; one that fills after cannot stop them finishing it."""
    from tracelens.tables.schema import empty

    files = [f for task in manifest.tasks.values() for fs in task.files.values() for f in fs]
    filled = {f.split("/", 1)[0] for f in [*files, *manifest.faults.values()]} | {T.RUNS}
    moves = []
    placeholders = []  # the empty.parquet of a table that has files now: litter once they are there
    for table in TABLES:
        rel = f"{table}/empty.parquet"
        if table not in filled and not store.exists(rel):
            store.write_parquet(f"{staging}/{rel}", empty(table))
            moves.append((f"{staging}/{rel}", rel))
        elif table in filled and store.exists(rel):
            placeholders.append(rel)
    store.write_json(f"{staging}/manifest.json", mf.to_json(manifest))
    moves.append((f"{staging}/manifest.json", mf.MANIFEST))
    return moves, placeholders


def _touched(item: Input, new_tasks: dict[str, tuple[TaskSpec, TaskResult]]) -> bool:
    return any(u.input.path == item.path for spec, _ in new_tasks.values() for u in spec.units)


def _source_summaries(
    tasks: dict[str, TaskRecord], inputs: dict[str, mf.InputRecord]
) -> dict[str, SourceSummary]:
    """Per source: its input's size, time and fingerprint, its lines (by kind) and any read error."""
    pieces: dict[str, list[SourceResult]] = {}
    for task in tasks.values():
        for s in task.sources:
            pieces.setdefault(s.source, []).append(s)
    out: dict[str, SourceSummary] = {}
    for source, results in pieces.items():
        item = inputs[results[0].input]
        by_kind: dict[str, int] = {}
        for s in results:
            for kind, n in s.lines_by_kind.items():
                by_kind[kind] = by_kind.get(kind, 0) + n
        out[source] = SourceSummary(
            input=results[0].input,
            size=item.size,
            mtime=item.mtime,
            head=item.head,
            tail=item.tail,
            lines=sum(s.lines for s in results),
            lines_by_kind=by_kind,
            errors=[s.error for s in results if s.error],
        )
    return out


def _rows(tasks: dict[str, TaskRecord], runs: int) -> dict[str, int]:
    rows = dict.fromkeys(TABLES, 0)
    for task in tasks.values():
        for table, n in task.rows.items():
            if table in rows:
                rows[table] += n
    rows[T.FAULTS] = sum(task.rows.get(FAULTS_PRE, 0) for task in tasks.values())
    rows[T.RUNS] = runs
    return rows
