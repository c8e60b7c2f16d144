"""The dataset's manifest (`.tracelens/manifest.json`): what each input looked like when it was read,
which tasks read which byte ranges, what they found and which files hold their rows. A re-run compares
inputs against it to skip unchanged ones and to read only the new bytes of a log that grew.

The manifest and the commit's journal are typed records, checked when read (`load_manifest`,
`load_journal`): one of another dataset format, or one that does not fit its record, is a
`RecordError` the engine reports in one line. Their JSON on disk is the records' fields as they are
(`to_json`), so datasets written before the records existed read as they always did.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tracelens import __version__
from tracelens.engine.plan import SourceResult, TaskResult, Unit
from tracelens.engine.records import RecordError, from_json
from tracelens.sources.inputs import Input

MANIFEST = ".tracelens/manifest.json"
JOURNAL = ".tracelens/journal.json"
UNRECORDED = "before 0.1"  # the writer of a manifest that does not say
# The dataset format: a dataset of another format is refused (exit 2), never rewritten in place.
# 2: every part file holds its table's whole schema (1 left out all-null columns and `lines`' ranks).
# 3: faults, foreign and messages say which process printed a line (process, pid, host).
VERSION = 3
_SAMPLE = 64 << 10

Change = Literal["new", "same", "grown", "changed"]


class IncompatibleVersion(RecordError):
    """A manifest of another dataset format (``version``), written by tracelens ``written_by``."""

    def __init__(self, version: object, written_by: object) -> None:
        super().__init__(f"dataset format {version} (tracelens {written_by})")
        self.version = version
        self.written_by = written_by


@dataclass(frozen=True)
class InputRecord:
    """An input as it was when it was read: with the size and time, the fingerprint tells an unchanged
    file, or one that only grew (`change_of`)."""

    container: str
    compression: str | None
    size: int
    mtime: float
    head: str  # blake2b of the first 64 KiB
    tail: str  # ... and of the last 64 KiB


@dataclass(frozen=True)
class UnitRecord:
    """A `plan.Unit` by its input's path."""

    input: str
    start: int
    end: int | None
    first_line: int
    run_offset: int
    base_date: str | None


@dataclass(frozen=True)
class TaskRecord:
    """What one task read (``units``), learnt (``sources``) and wrote: table -> files, table -> rows
    (tables include `store.FAULTS_PRE`)."""

    units: list[UnitRecord]
    sources: list[SourceResult]
    files: dict[str, list[str]]
    rows: dict[str, int]


@dataclass(frozen=True)
class SourceSummary:
    """One source over all tasks: its input's size, time and fingerprint, its lines (by kind) and the
    errors that stopped its reading."""

    input: str
    size: int
    mtime: float
    head: str
    tail: str
    lines: int
    lines_by_kind: dict[str, int]
    errors: list[str]


@dataclass(frozen=True)
class Manifest:
    version: int
    # the version that wrote it; manifests of the same format written before it was recorded lack it
    tracelens: str = UNRECORDED
    inputs: dict[str, InputRecord] = field(default_factory=dict)  # by path
    tasks: dict[str, TaskRecord] = field(default_factory=dict)  # by task id
    faults: dict[str, str] = field(default_factory=dict)  # source -> its `faults` file
    sources: dict[str, SourceSummary] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows in the dataset
    # part file -> its bytes when committed: a read checks each with one stat (`engine.check_parts`);
    # manifests written before it was recorded lack it, and their files are checked for being there
    sizes: dict[str, int] = field(default_factory=dict)
    # part file -> its content hash when committed (`store.Store.digest`): checked only on request
    # (`parse --verify`, `cache --verify`: `engine.integrity`); manifests written before it lack it
    digests: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Journal:
    """A commit written before it is carried out (`engine._apply`), so that a run stopped half way is
    finished by the next: files to move (staged, final), files to delete, the manifest to write."""

    moves: list[tuple[str, str]]
    deletes: list[str]
    manifest: Manifest


RUNS_FILE = "runs/runs.parquet"  # every commit writes it


def part_files(manifest: Manifest) -> list[str]:
    """Every part file a committed dataset reads (its tasks', its faults', its runs)."""
    files = [f for task in manifest.tasks.values() for fs in task.files.values() for f in fs]
    files += manifest.faults.values()
    return [*files, RUNS_FILE] if manifest.tasks else files


def empty() -> Manifest:
    """The manifest of a new dataset."""
    return Manifest(version=VERSION, tracelens=__version__)


def to_json(record: Manifest | Journal) -> dict[str, Any]:
    return asdict(record)


def load_manifest(data: object, where: str = "manifest") -> Manifest:
    """The manifest read from JSON; an `IncompatibleVersion` for another dataset format, a `RecordError`
    for one that does not fit."""
    if not isinstance(data, dict):
        raise RecordError(f"{where} should be an object")
    if data.get("version") != VERSION:
        raise IncompatibleVersion(data.get("version"), data.get("tracelens", UNRECORDED))
    return from_json(Manifest, data, where)


def load_journal(data: object) -> Journal:
    if not isinstance(data, dict):
        raise RecordError("journal should be an object")
    load_manifest(data.get("manifest"), "journal.manifest")  # its format first: one message for it
    return from_json(Journal, data, "journal")


def _digest(path: str, start: int, size: int) -> str:
    with open(path, "rb") as fh:
        fh.seek(start)
        return hashlib.blake2b(fh.read(size), digest_size=16).hexdigest()


def input_record(item: Input) -> InputRecord:
    """A content fingerprint that costs two small reads: hashes of the first and the last 64 KiB."""
    head = min(_SAMPLE, item.size)
    return InputRecord(
        container=item.container,
        compression=item.compression,
        size=item.size,
        mtime=item.mtime,
        head=_digest(item.path, 0, head),
        tail=_digest(item.path, item.size - head, head),
    )


def change_of(item: Input, old: InputRecord | None) -> Change:
    """`new`, `same`, `grown` (a plain file whose old bytes are still there: only the rest is read) or
    `changed`."""
    if old is None:
        return "new"
    if item.container != old.container or item.compression != old.compression:
        return "changed"
    if item.size == old.size and item.mtime == old.mtime:
        head = min(_SAMPLE, item.size)
        return "same" if _digest(item.path, 0, head) == old.head else "changed"
    if item.splittable and item.size > old.size:
        head = min(_SAMPLE, old.size)
        same_head = _digest(item.path, 0, head) == old.head
        same_tail = _digest(item.path, old.size - head, head) == old.tail
        if same_head and same_tail:
            return "grown"
    return "changed"


def unit_record(unit: Unit) -> UnitRecord:
    return UnitRecord(unit.input.path, unit.start, unit.end, unit.first_line, unit.run_offset, unit.base_date)


def task_record(units: tuple[Unit, ...], result: TaskResult, files: dict[str, list[str]]) -> TaskRecord:
    """A task's record once its ``files`` (staged by the task) are moved to their final places."""
    return TaskRecord([unit_record(u) for u in units], list(result.sources), files, result.rows)
