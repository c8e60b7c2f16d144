"""`tracelens parse`: the options of the batch engine and what it prints. Registered by `cli.py`; the
engine itself (`tracelens.engine`) does the work."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracelens.cli.dataset import report_problems
from tracelens.cli.progress import engine_progress
from tracelens.engine import EngineOptions, Report, parse_to_dataset
from tracelens.engine.executors import EXECUTORS, LOCAL
from tracelens.engine.sizing import DEFAULT_MAX_MEMORY, MIN_MAX_MEMORY
from tracelens.errors import InputError
from tracelens.formatting import megabytes
from tracelens.sizes import DEFAULT_BLOCK_BYTES, DEFAULT_RANGE_BYTES, parse_size
from tracelens.tables.names import TABLES

OutputOpt = Annotated[
    str,
    typer.Option(
        "-o",
        "--output",
        help="Dataset to write: a folder (or an fsspec URL such as s3://bucket/logs) with one folder of Parquet part files per table and a manifest. Re-running skips unchanged inputs and reads only the new bytes of a log that grew.",
        show_default=False,
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        help="Worker processes (Dask: workers of a dask-local cluster). Default: one per core; fewer when there are fewer tasks or --max-memory holds fewer.",
        min=1,
    ),
]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where tasks run: local (worker processes here), dask (an existing cluster, see --scheduler), dask-local (a LocalCluster started here, to try it out).",
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler", help="Address of the Dask scheduler for --executor dask, e.g. tcp://HOST:8786."
    ),
]
BlockOpt = Annotated[
    str,
    typer.Option("--block-size", help="Bytes read and parsed at a time by a worker (K, M, G suffixes)."),
]
MaxMemoryOpt = Annotated[
    str,
    typer.Option(
        "--max-memory",
        help="Memory the whole process tree may use (K, M, G suffixes): fewer workers than --jobs, and smaller blocks and ranges, when they would not fit.",
    ),
]
RangeOpt = Annotated[
    str,
    typer.Option(
        "--range-size",
        help="Bytes of one task: big plain files are split into ranges of about this size, small files grouped up to it (each counted as at least 3 MiB; more per task when there are many).",
    ),
]
VerifyOpt = Annotated[
    bool,
    typer.Option(
        "--verify",
        help="First read every part file of the dataset whole and check it against the content hash its commit recorded; the logs of a part that does not match (or is missing or cut) are read again.",
    ),
]


def run_parse(
    paths: list[str],
    output: str,
    options: EngineOptions,
    quiet: bool,
    out: Console,
    err: Console,
) -> int:
    """Parse, print what was written, and return the exit code (1 when an input was not read to its end,
    or not at all)."""

    def notify(text: str) -> None:
        err.print(f"tracelens: {text}", markup=False)

    with engine_progress(quiet) as progress:
        report = parse_to_dataset(paths, output, options, progress, notify)
    render_dataset_written(out, report, output)
    for problem in report.mended:
        err.print(f"tracelens: {output}: {problem}; its logs were read again", markup=False)
    report_problems(err, report)
    return 1 if report.problems or report.unread else 0


def render_dataset_written(console: Console, report: Report, output: str) -> None:
    """What `parse` read (inputs, bytes, rate) and wrote (rows per table, and the folder)."""
    rate = report.bytes_read / report.seconds / 1e6 if report.seconds else 0.0
    console.print(
        f"{report.inputs} input(s): {report.read} read, {report.unchanged} unchanged, {report.grown} grown; "
        f"{megabytes(report.bytes_read)} in {report.seconds:.2f} s ({rate:,.1f} MB/s)",
        markup=False,
    )
    table = Table(show_header=True, header_style="bold")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("folder")
    for name in TABLES:
        table.add_row(name, f"{report.rows.get(name, 0):,}", Text(f"{output.rstrip('/')}/{name}/"))
    console.print(table)


def engine_options(
    jobs: int | None,
    executor: str,
    scheduler: str | None,
    block: str,
    range_: str,
    base_date,
    lock_timeout: float,
    max_memory: str = "",
    verify: bool = False,
) -> EngineOptions:
    if executor not in EXECUTORS:
        raise InputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    memory = parse_size(max_memory, "--max-memory") if max_memory else DEFAULT_MAX_MEMORY
    if memory < MIN_MAX_MEMORY:
        raise InputError(
            f"--max-memory must be at least {MIN_MAX_MEMORY >> 20}M (the command and one worker), got {max_memory!r}"
        )
    return EngineOptions(
        jobs=jobs,
        executor=executor,
        scheduler=scheduler,
        block_bytes=parse_size(block, "--block-size"),
        range_bytes=parse_size(range_, "--range-size"),
        base_date=base_date,
        lock_timeout=lock_timeout,
        max_memory=memory,
        verify=verify,
    )


DEFAULTS = {
    "executor": LOCAL,
    "block": f"{DEFAULT_BLOCK_BYTES >> 20}M",
    "range": f"{DEFAULT_RANGE_BYTES >> 20}M",
    "max_memory": f"{DEFAULT_MAX_MEMORY >> 20}M",
}
