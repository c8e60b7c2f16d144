"""The live commands, `tracelens tui` and `tracelens follow`, registered on the main `app` by `cli.py`.

Both take the same sources (see `tracelens.live.spec`) and the shared expectation options; `follow`
prints, `tui` draws. Neither reads a line itself: a `LiveSession` parses and analyses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from tracelens.cli.dataset import (
    DatasetOpt,
    LockTimeoutOpt,
    NoCacheOpt,
    cache_limit,
    cache_used,
    report_problems,
)
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
from tracelens.engine.logs import naming_the_cache
from tracelens.errors import InputError
from tracelens.live.store import SCROLLBACK_LINES

Sources = Annotated[
    list[str] | None,
    typer.Argument(
        help="What to follow: FILE, HOST:/path, USER@HOST:/path, ssh://USER@HOST:PORT/path, - (stdin), replay:FILE?speed=N. A compressed log or an archive (each log in it, as ARCHIVE:MEMBER) is read once to its end. Several are merged by time.",
        show_default=False,
    ),
]
CmdOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--cmd",
        help='Follow a command\'s output (stdout and stderr), e.g. --cmd "kubectl logs -f POD". May be repeated.',
    ),
]
LiveDateOpt = Annotated[
    str | None,
    typer.Option(
        "--date",
        help="Date (YYYY-MM-DD) for logs whose prefix has only a time. Default: a local file's modification date, else today.",
    ),
]
ScrollbackOpt = Annotated[
    int,
    typer.Option(
        "--scrollback",
        min=1000,
        metavar="LINES",
        help="Lines of each source the session keeps for the log view (the oldest are dropped; the analysis keeps every finding).",
    ),
]
IntervalOpt = Annotated[
    float,
    typer.Option("--interval", min=0.1, help="Seconds between two analyses of everything seen (at least)."),
]


def _specs(sources: list[str] | None, cmds: list[str] | None):
    from tracelens.live.spec import command_spec, expand_recorded, parse_spec

    named = [parse_spec(s) for s in sources or []] + [command_spec(c) for c in cmds or []]
    specs = [each for spec in named for each in expand_recorded(spec)]
    if not specs:
        raise InputError("name at least one source (a file, HOST:/path, -, replay:FILE) or --cmd COMMAND")
    if sum(s.kind == "stdin" for s in specs) > 1:
        raise InputError("stdin (-) can be named once")
    labels = [s.label for s in specs]
    for label in labels:
        if labels.count(label) > 1:
            raise InputError(f"the source {label} is named twice")
    return specs


# The signals that end a live command like Ctrl-C does: `kill` (SIGTERM) and a closed terminal or ssh
# session (SIGHUP). Their default action would end the process at once, leaving ssh and command
# sources running in their own process groups and the terminal in the screen's modes.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _ending_signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    old = {sig: signal.getsignal(sig) for sig in ENDING_SIGNALS}
    for sig in ENDING_SIGNALS:
        signal.signal(sig, lambda signum, _frame: on_signal(signum))
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _exit_on(signum: int) -> None:
    """Unwind (the session's `finally` stops its sources) and exit with the shell's code for it."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _loaded(specs, date: str | None, dataset: Path | None, no_cache: bool, lock_timeout: float):
    """Read the large local files among ``specs`` through the batch engine into a dataset first (the
    cache's, as every command that takes log paths does; ``dataset``; or a temporary one with
    ``no_cache``), and yield where the live session takes each over (`live.seed`). With ``dataset``
    every existing local file is read into it, whatever its size. Compressed files and archives are
    not among them: they are read once to their end by their own sources (`live.spec.RECORDED`)."""
    from rich.console import Console

    from tracelens.cli.progress import engine_progress
    from tracelens.engine import EngineOptions
    from tracelens.engine.cache import dataset_for, resolve_args
    from tracelens.live.seed import LOAD_BYTES, load_files

    if dataset is not None and no_cache:
        raise InputError("--dataset and --no-cache exclude each other")
    files: dict[str, str] = {}
    for spec in specs:
        if spec.kind != "file" or not spec.path or not os.path.isfile(spec.path):
            continue
        path = Path(spec.path)
        if dataset is not None or path.stat().st_size > LOAD_BYTES:
            files[spec.label] = spec.path
    if not files:
        yield {}
        return
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    temporary = Path(tempfile.mkdtemp(prefix="tracelens-")) if no_cache else None
    try:
        base_date = date_option(date)
        target = temporary or dataset or dataset_for(resolve_args(list(files.values())), base_date)
        options = EngineOptions(base_date=base_date, lock_timeout=lock_timeout)
        cached = temporary is None and dataset is None
        limit = cache_limit() if cached else 0  # read first: a bad value costs no parse
        # `kill` while the engine reads ends it as Ctrl-C does: its workers stop, its staging is removed
        with (
            _ending_signals(_exit_on),
            engine_progress(not sys.stderr.isatty()) as progress,
            naming_the_cache(target if cached else None),
        ):
            report, cuts = load_files(
                files,
                str(target),
                options,
                progress,
                lambda text: err.print(f"tracelens: {text}", markup=False),
            )
        if cached:
            cache_used(err, target, limit)
        report_problems(err, report)
        yield cuts
    finally:
        if temporary is not None:  # after the session: its full analysis reads the dataset
            shutil.rmtree(temporary, ignore_errors=True)


def _session(
    specs,
    expect,
    baseline,
    stall_seconds,
    date,
    interval,
    scrollback: int,
    stdin_fd: int | None = None,
    cuts=None,
    training=None,
):
    from tracelens.live import LiveSession

    options = {s.label: {"fd": stdin_fd} for s in specs if s.kind == "stdin" and stdin_fd is not None}
    return LiveSession(
        specs,
        expect,
        baseline=baseline,
        stall_seconds=stall_seconds,
        base_date=date_option(date),
        interval=interval,
        scrollback=scrollback,
        follower_options=options,
        cuts=cuts,
        training=training,
    )


def follow(
    sources: Sources = None,
    cmd: CmdOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per line.")] = False,
    stats_every: Annotated[
        float, typer.Option("--stats-every", min=0, help="Seconds between two stats lines of a run.")
    ] = 5.0,
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
    interval: IntervalOpt = 1.0,
    scrollback: ScrollbackOpt = SCROLLBACK_LINES,
    date: LiveDateOpt = None,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Follow logs as they grow and print new findings, source states and each run's stats (phase,
    accept len, tok/s) as they arrive. Ends when every source has ended (stdin closed, the command
    exited, the replay finished, a compressed log or archive was read to its end); files and ssh
    sources are followed until Ctrl-C. A local file over 32 MiB is first read through the engine into
    the cache dataset, as `check` reads it."""
    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )
    trained = training_from(training, no_discover, draft_config, target_config)
    specs = _specs(sources, cmd)
    for spec in specs:
        # A log that is not there yet (the server has not started) is waited for; say so, or the
        # silence looks like a hang.
        if spec.kind == "file" and spec.path and not os.path.exists(spec.path):
            sys.stderr.write(f"tracelens: waiting for {spec.path} to appear (it does not exist yet)\n")
            sys.stderr.flush()
    with _loaded(specs, date, dataset, no_cache, lock_timeout) as cuts:
        session = _session(
            specs,
            expect,
            baseline,
            stall_seconds,
            date,
            interval,
            scrollback,
            stdin_fd=0,
            cuts=cuts,
            training=trained,
        )
        _follow(session, as_json, stats_every)


def _follow(session, as_json: bool, stats_every: float) -> None:
    from tracelens.cli.printer import FollowPrinter

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    printer = FollowPrinter(write, as_json=as_json, stats_every=stats_every)
    session.subscribe(printer)
    with _ending_signals(_exit_on):
        session.start()
        try:
            while not session.all_ended:
                time.sleep(0.1)
            session.wait_idle(timeout=600)
            printer.flush_stats(session.snapshot.every_run)
        finally:
            session.stop()
    _exit_if_read_in_part(session)


def _exit_if_read_in_part(session) -> None:
    """A compressed file or archive member that broke was read in part: named on stderr, exit 1, as
    every command that takes log paths does (the lines before the break were kept and analysed)."""
    from tracelens.live.spec import RECORDED
    from tracelens.sources.events import FAILED

    broken = [s for s in session.sources if s.spec.kind == RECORDED and s.state == FAILED]
    for state in broken:
        sys.stderr.write(f"tracelens: {state.label}: {state.detail}\n")
    if broken:
        raise typer.Exit(1)


def tui(
    sources: Sources = None,
    cmd: CmdOpt = None,
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
    interval: IntervalOpt = 0.75,
    scrollback: ScrollbackOpt = SCROLLBACK_LINES,
    report: Annotated[Path | None, typer.Option("--report", help="Where `r` writes the HTML report.")] = None,
    date: LiveDateOpt = None,
    dataset: DatasetOpt = None,
    no_cache: NoCacheOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """The live screen: header (sources, connection, run, server phase, speculative config),
    acceptance and throughput over time, EAGLE-3 capture per debug site, live findings and the log with
    filters and search. Keys: / search, f filter, p pause, e next fault, r HTML report, ? help, q quit.
    A local file over 32 MiB is first read through the engine into the cache dataset, as `check` reads
    it: a second `tui` on it starts from the engine's second look."""
    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )
    specs = _specs(sources, cmd)
    with _loaded(specs, date, dataset, no_cache, lock_timeout) as cuts:
        stdin_fd = _stdin_for_tui() if any(s.kind == "stdin" for s in specs) else None
        trained = training_from(training, no_discover, draft_config, target_config)
        session = _session(
            specs, expect, baseline, stall_seconds, date, interval, scrollback, stdin_fd, cuts, trained
        )
        _screen(session, report)


def _screen(session, report: Path | None) -> None:
    import asyncio

    from tracelens.tui.app import TraceLensApp

    app = TraceLensApp(session, report_path=report)
    received: list[int] = []

    def quit_screen(signum: int) -> None:
        # The screen ends as on `q` (its terminal modes restored, the session stopped on unmount);
        # asking through the event loop wakes it up from its wait.
        received.append(signum)
        try:
            asyncio.get_running_loop().call_soon_threadsafe(app.exit)
        except RuntimeError:  # not drawing yet or any more
            _exit_on(signum)

    try:
        with _ending_signals(quit_screen):
            app.run()
    finally:
        if not session.stopped:  # the screen stops it on unmount; not if it never mounted
            session.stop()
    if received:
        raise SystemExit(128 + received[0])
    _exit_if_read_in_part(session)


def _stdin_for_tui() -> int:
    """The screen needs the terminal for keys: keep the piped stdin on another descriptor and give
    descriptor 0 back to the terminal."""
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("- reads a pipe: run e.g. `kubectl logs -f POD | tracelens tui -`")
    piped = os.dup(0)
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError as exc:
        raise InputError("tui - needs a terminal to read keys from (/dev/tty)") from exc
    os.dup2(tty, 0)
    os.close(tty)
    return piped


def register(app: typer.Typer) -> None:
    app.command()(tui)
    app.command()(follow)
