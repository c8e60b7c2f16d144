"""The `tracelens` command line. A view: it reads parsed tables and analysis results and renders them;
it never parses a line itself. Errors a user can fix print one line on stderr and exit 2."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from tracelens import __version__
from tracelens.analysis.defaults import DEFAULT_POSITION_MARGIN
from tracelens.cli import dataset as cli_dataset
from tracelens.cli import live as cli_live
from tracelens.cli import parse as cli_parse
from tracelens.cli.dataset import DatasetOpt, LockTimeoutOpt, NoCacheOpt, logs_dataset
from tracelens.cli.options import (
    DEFAULT_STALL,
    BaselineOpt,
    DraftConfigOpt,
    EmbedCaptureOpt,
    ExpectAuxOpt,
    ExpectFileOpt,
    HiddenSizeOpt,
    NoDiscoverOpt,
    StallOpt,
    TargetConfigOpt,
    TrainingOpt,
    date_option,
    expectations_from,
    training_from,
)
from tracelens.engine.lock import DEFAULT_LOCK_TIMEOUT
from tracelens.errors import InputError
from tracelens.formatting import megabytes, terminal_text

if TYPE_CHECKING:  # the analysis, the parsers and the renderers are imported by the commands that use them
    from tracelens.analysis import Analysis
    from tracelens.analysis.expectations import Expectations
    from tracelens.analysis.training import TrainingInputs
    from tracelens.parsers import ParseOptions

app = typer.Typer(
    name="tracelens",
    help="Turn SGLang (and vLLM) server logs into typed tables and answers about speculative decoding.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
# Piped output is not cut to 80 columns: tables stay one row per run for grep and less.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _sample_logs() -> Path:
    """The sample logs: inside the installed package (a wheel ships them as `tracelens/sample_logs`),
    else in the checkout beside the package."""
    here = Path(__file__).resolve().parent.parent  # the tracelens package
    packaged = here / "sample_logs"
    return packaged if packaged.is_dir() else here.parent / "sample_logs"


SAMPLE_LOGS = _sample_logs()
SAMPLE_TIME_ONLY_DATE = "2024-09-02"

Paths = Annotated[
    list[Path],
    typer.Argument(
        help="Log files, directories (searched recursively) or glob patterns, parsed into the cache (see --dataset); .gz/.zst/.bz2/.xz are read as they are, and each member of a .tar(.gz)/.tgz/.zip archive is a source of its own. Or one dataset written by `tracelens parse -o DIR`.",
        show_default=False,
        # tracelens checks paths itself, to report a bad one in one line.
        readable=False,
    ),
]
DateOpt = Annotated[
    str | None,
    typer.Option(
        "--date",
        help="Date (YYYY-MM-DD) of the first line for logs whose prefix has only a time (SGLang before v0.3.4). Default: each file's modification date.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]


def _options(date: str | None) -> ParseOptions | None:
    from tracelens.parsers import ParseOptions

    base_date = date_option(date)
    return None if base_date is None else ParseOptions(base_date=base_date)


@dataclass(frozen=True)
class _Logs:
    """Where a command's logs are parsed to (see `cli_dataset.logs_dataset`)."""

    date: str | None = None
    quiet: bool = False
    dataset: Path | None = None
    no_cache: bool = False
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT

    def open(self, paths: list[Path]):
        return logs_dataset(
            paths,
            err,
            base_date=date_option(self.date),
            quiet=self.quiet,
            dataset=self.dataset,
            no_cache=self.no_cache,
            lock_timeout=self.lock_timeout,
        )


def _version(value: bool) -> None:
    if value:
        out.print(f"tracelens {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Turn SGLang (and vLLM) server logs into typed tables and answers about speculative decoding."""


@app.command()
def parse(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Log files, directories (searched recursively) or glob patterns; .gz/.zst/.bz2/.xz are read as they are, and each member of a .tar(.gz/.bz2/.xz/.zst)/.tgz/.zip archive is a source of its own.",
            show_default=False,
        ),
    ],
    output: cli_parse.OutputOpt,
    jobs: cli_parse.JobsOpt = None,
    executor: cli_parse.ExecutorOpt = cli_parse.DEFAULTS["executor"],
    scheduler: cli_parse.SchedulerOpt = None,
    block_size: cli_parse.BlockOpt = cli_parse.DEFAULTS["block"],
    range_size: cli_parse.RangeOpt = cli_parse.DEFAULTS["range"],
    max_memory: cli_parse.MaxMemoryOpt = cli_parse.DEFAULTS["max_memory"],
    date: DateOpt = None,
    quiet: QuietOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
    verify: cli_parse.VerifyOpt = False,
) -> None:
    """Parse logs into a Parquet dataset (a folder per table in OUTPUT), on all cores or a Dask cluster,
    reading again only what changed. Exit code 1 when an input could not be read to its end. One writer
    at a time: a second one waits for the first (see --lock-timeout)."""
    options = cli_parse.engine_options(
        jobs, executor, scheduler, block_size, range_size, date_option(date), lock_timeout, max_memory, verify
    )
    raise typer.Exit(cli_parse.run_parse(paths, output, options, quiet, out, err))


@app.command()
def summary(
    paths: Paths,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the stable JSON layout (see docs/json.md).")
    ] = False,
    date: DateOpt = None,
    quiet: QuietOpt = False,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Per source and run: time span, lines by kind, speculative config, accept len and throughput, faults."""
    from tracelens.analysis.summary import summarize
    from tracelens.cli.render import render_summary

    def show(analysis: Analysis) -> None:
        result = summarize(analysis)
        if as_json:
            sys.stdout.write(json.dumps(result, indent=2) + "\n")
        else:
            render_summary(out, result)

    _analyse(paths, _Logs(date, quiet or as_json, dataset, no_cache, lock_timeout), show)


@app.command()
def explain(
    where: Annotated[
        str | None,
        typer.Argument(help="PATH:LINE of the line to explain (LINE is 1-based).", show_default=False),
    ] = None,
    line: Annotated[
        str | None, typer.Option("--line", help="Explain this text instead of a line of a file.")
    ] = None,
    date: DateOpt = None,
) -> None:
    """Show how one line is read: wrappers and prefix, kind, parsed fields; for an unread line, the closest
    kind and where the line stopped matching it."""
    from tracelens.cli.render import render_explanation
    from tracelens.engine.ingest import explain_file_line, explain_text

    if (where is None) == (line is None):
        raise InputError("give either PATH:LINE or --line TEXT")
    if line is not None:
        result = explain_text(line, _options(date))
    else:
        path_text, _, number = (where or "").rpartition(":")
        if not path_text or not number.isdigit() or int(number) < 1:
            raise InputError(f"expected PATH:LINE with LINE a number from 1, got {where!r}")
        result = explain_file_line(Path(path_text), int(number), _options(date))
    render_explanation(out, result)


def _analyse(
    paths: list[Path],
    logs: _Logs,
    show: Callable[[Analysis], None],
    expectations: Expectations | None = None,
    baseline: str | None = None,
    stall_seconds: float = DEFAULT_STALL,
    position_margin: float = DEFAULT_POSITION_MARGIN,
    training: TrainingInputs | None = None,
) -> None:
    """Parse ``paths`` into their dataset, analyse it and ``show`` the result, under the dataset's read lock.
    Exit 2 when no input is a server log (`_refuse_non_logs`), whatever the command."""
    from tracelens.analysis import analyze_tables
    from tracelens.sources.naming import as_typed
    from tracelens.tables.frames import Tables
    from tracelens.tables.schema import C, T

    with logs.open(paths) as folder:
        tables = Tables.read_dataset(folder)
        # a cited line is shown under the path the user typed, not the cache's resolved one
        typed = as_typed(tables[T.RUNS].get_column(C.SOURCE).unique(), cli_dataset.typed_paths(paths))
        analysis = analyze_tables(
            tables,
            expectations,
            baseline=baseline,
            stall_seconds=stall_seconds,
            typed=typed,
            training=training,
            position_margin=position_margin,
        )
        _refuse_non_logs(analysis)
        show(analysis)


def _refuse_non_logs(result: Analysis) -> None:
    """A gate aimed at the wrong file must not pass: exit 2 when no input holds a line of any known
    kind; name the inputs that are no server log among others."""
    if not result.not_logs:
        return
    if len(result.not_logs) >= result.source_count:
        raise InputError(f"not a server log: {result.not_logs[0]}")
    for source in result.not_logs:
        sys.stderr.write(f"tracelens: not a server log: {source} (no verdict)\n")


@app.command()
def check(
    paths: Paths,
    draft_config: DraftConfigOpt = None,
    target_config: TargetConfigOpt = None,
    expectations_file: ExpectFileOpt = None,
    expect_aux: ExpectAuxOpt = None,
    hidden_size: HiddenSizeOpt = None,
    embed_capture: EmbedCaptureOpt = None,
    training: TrainingOpt = None,
    no_discover: NoDiscoverOpt = False,
    baseline: BaselineOpt = None,
    stall_seconds: StallOpt = DEFAULT_STALL,
    position_margin: Annotated[
        float,
        typer.Option(
            "--position-margin",
            min=0.0,
            max=1.0,
            help="With --baseline: an error (exit 1) when a run's acceptance at a draft position is below the "
            "baseline's by more than this, in rate points (docs/acceptance.md).",
        ),
    ] = DEFAULT_POSITION_MARGIN,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    date: DateOpt = None,
    quiet: QuietOpt = False,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Print findings grouped by run, the most severe first. Exit 1 when any error-level finding exists
    (a draft position below the --baseline run's by more than --position-margin is one) or an input could
    not be read to its end, 0 otherwise (2 on bad usage): made to gate CI."""
    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )

    from tracelens.cli.render import render_findings
    from tracelens.cli.render_acceptance import render_acceptance

    def show(result: Analysis) -> None:
        if as_json:
            from tracelens.analysis.acceptance_table import acceptance_table

            payload = {
                "errors": len(result.errors),
                "verdicts": [v.to_json() for v in result.verdicts],
                "findings": [f.to_json() for f in result.findings],
                "acceptance": acceptance_table(result),
            }
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            render_findings(out, result)
            render_acceptance(out, result)
        if result.errors:
            raise typer.Exit(1)

    logs = _Logs(date, quiet or as_json, dataset, no_cache, lock_timeout)
    trained = training_from(training, no_discover, draft_config, target_config)
    _analyse(paths, logs, show, expect, baseline, stall_seconds, position_margin, trained)


@app.command()
def compare(
    paths: Paths,
    baseline: BaselineOpt = None,
    date: DateOpt = None,
    quiet: QuietOpt = False,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """The run comparison: acceptance, throughput and speedup over the baseline (95% interval) at matched
    batch sizes, with what changed in the server args."""
    from tracelens.cli.render import render_comparison

    logs = _Logs(date, quiet, dataset, no_cache, lock_timeout)
    _analyse(paths, logs, lambda analysis: render_comparison(out, analysis), baseline=baseline)


def _write_report(analysis: Analysis, output: Path, title: str | None) -> None:
    from tracelens.report import write_report

    try:
        written = write_report(analysis, output, title)
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from exc
    out.print(
        f"report written to {written.path.resolve()} ({megabytes(written.bytes)}; {written.runs} run(s), "
        f"{written.findings} finding(s), {len(written.plots)} plot(s)): open it in any browser, no network needed",
        markup=False,
    )


@app.command()
def report(
    paths: Paths,
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    title: Annotated[
        str | None, typer.Option("--title", help="The report's title. Default: the sources' names.")
    ] = None,
    draft_config: DraftConfigOpt = None,
    target_config: TargetConfigOpt = None,
    expectations_file: ExpectFileOpt = None,
    expect_aux: ExpectAuxOpt = None,
    hidden_size: HiddenSizeOpt = None,
    embed_capture: EmbedCaptureOpt = None,
    training: TrainingOpt = None,
    no_discover: NoDiscoverOpt = False,
    baseline: BaselineOpt = None,
    stall_seconds: StallOpt = DEFAULT_STALL,
    date: DateOpt = None,
    quiet: QuietOpt = False,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Write one self-contained HTML report (Plotly inside, opens offline): run cards, acceptance and
    throughput over time, the run comparison with its server-args diff, findings with their log lines,
    the start-up timeline and faults. Exit 1 when an input could not be read to its end."""
    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )
    logs = _Logs(date, quiet, dataset, no_cache, lock_timeout)
    trained = training_from(training, no_discover, draft_config, target_config)
    _analyse(
        paths,
        logs,
        lambda analysis: _write_report(analysis, output, title),
        expect,
        baseline,
        stall_seconds,
        training=trained,
    )


@app.command()
def sql(
    query: Annotated[
        str,
        typer.Argument(
            help="A SQL query over the tables (lines, batches, debug, lifecycle, server_args, runs, http, faults, spec_metrics, benchmarks, foreign, messages, unparsed).",
            show_default=False,
        ),
    ],
    paths: Paths,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    date: DateOpt = None,
    quiet: QuietOpt = False,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Run SQL (polars SQL) over every table of the parsed logs."""
    from tracelens.analysis.query import run_sql
    from tracelens.cli.render import render_frame
    from tracelens.tables.frames import Tables

    with _Logs(date, quiet or csv, dataset, no_cache, lock_timeout).open(paths) as folder:
        frame = run_sql(Tables.read_dataset(folder), query)
        if csv:
            # CSV keeps the log's bytes for a file or a pipe; on a terminal it is log text on screen.
            text = frame.write_csv()
            sys.stdout.write(terminal_text(text) if sys.stdout.isatty() else text)
        else:
            render_frame(out, frame)


@app.command()
def demo(
    logs: Annotated[Path, typer.Option(help="Folder of logs to use.")] = SAMPLE_LOGS,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where to write the HTML report of the logs.")
    ] = Path("report.html"),
    quiet: QuietOpt = False,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Parse the bundled sample logs (an EAGLE-3 tuning story), print their summary and each run's verdict,
    write their HTML report and say what to run next."""
    from tracelens.analysis.summary import summarize
    from tracelens.cli.render import render_next_steps, render_summary, render_verdicts

    if not logs.is_dir():
        raise InputError(f"sample logs not found at {logs}")
    # The one time-only sample (era_2024_timeonly.log) was recorded from 2 Sep 2024; without a date it
    # would take the checkout's file time and land in today's report axis.
    date = SAMPLE_TIME_ONLY_DATE if logs == SAMPLE_LOGS else None

    def show(analysis: Analysis) -> None:
        render_summary(out, summarize(analysis))
        out.print()
        render_verdicts(out, analysis)
        out.print()
        _write_report(analysis, output, None)
        render_next_steps(out, analysis, _demo_check(logs, date))

    _analyse([logs], _Logs(date, quiet, None, no_cache, lock_timeout), show)


def _demo_check(logs: Path, date: str | None) -> str:
    """The `check` command of the demo's logs, to paste: the path as short as it can be from here."""
    import shlex

    try:
        shown = str(logs.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        shown = str(logs)
    return shlex.join(["tracelens", "check", shown, *(["--date", date] if date else [])])


cli_live.register(app)  # tui and follow
app.command()(cli_dataset.cache)


def main() -> None:
    """Entry point: one clear line and exit 2 for input errors; 130 on Ctrl-C; never a traceback. (Exit 1
    for inputs read in part or not at all is the commands' own: `cli_dataset.logs_dataset`.)"""
    # No command does linear algebra, yet numpy's OpenBLAS starts a thread per core as it loads, which
    # spins for a while: 0.1 CPU-s in every process that imports numpy (this one, the fork server, the
    # live worker). Set before anything imports numpy; the user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from typer import Abort
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    try:
        # Not standalone: a usage error comes here, to be told in one line as every other error is
        # (typer prints the usage, a hint and the error on four).
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UsageError as exc:
        where = f"; see {exc.ctx.command_path} --help" if exc.ctx is not None else ""
        err.print(f"tracelens: error: {terminal_text(exc.format_message().rstrip('.'))}{where}", markup=False)
        sys.exit(2)
    except ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Abort:
        err.print("tracelens: interrupted", markup=False)
        sys.exit(130)
    except InputError as exc:
        # The message may quote log text (a bad line, a file name): no escape sequence reaches the terminal.
        err.print(f"tracelens: error: {terminal_text(str(exc))}", markup=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("tracelens: interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("TRACELENS_DEBUG"):
            raise
        err.print(
            f"tracelens: internal error: {type(exc).__name__}: {exc} (set TRACELENS_DEBUG=1 for the traceback)",
            markup=False,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
