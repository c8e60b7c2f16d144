"""The live commands, `tracelens tui` and `tracelens follow`, registered on the main `app` by `cli.py`.

Both take the same sources (see `tracelens.live.spec`) and the shared expectation options; `follow`
prints, `tui` draws. Neither reads a line itself: a `LiveSession` parses and analyses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from tracelens.cli.options import (
    DEFAULT_STALL,
    BaselineOpt,
    DraftConfigOpt,
    EmbedCaptureOpt,
    ExpectAuxOpt,
    ExpectFileOpt,
    HiddenSizeOpt,
    StallOpt,
    TargetConfigOpt,
    date_option,
    expectations_from,
)
from tracelens.errors import InputError
from tracelens.live.index import SCROLLBACK_LINES

Sources = Annotated[
    list[str] | None,
    typer.Argument(
        help="What to follow: FILE, HOST:/path, USER@HOST:/path, ssh://USER@HOST:PORT/path, - (stdin), replay:FILE?speed=N. Several are merged by time.",
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
    from tracelens.live.spec import command_spec, parse_spec

    specs = [parse_spec(s) for s in sources or []] + [command_spec(c) for c in cmds or []]
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


def _session(
    specs, expect, baseline, stall_seconds, date, interval, scrollback: int, stdin_fd: int | None = None
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
    baseline: BaselineOpt = None,
    stall_seconds: StallOpt = DEFAULT_STALL,
    interval: IntervalOpt = 1.0,
    scrollback: ScrollbackOpt = SCROLLBACK_LINES,
    date: LiveDateOpt = None,
) -> None:
    """Follow logs as they grow and print new findings, source states and each run's stats (phase,
    accept len, tok/s) as they arrive. Ends when every source has ended (stdin closed, the command
    exited, the replay finished); files and ssh sources are followed until Ctrl-C."""
    from tracelens.cli.printer import FollowPrinter

    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )
    specs = _specs(sources, cmd)
    for spec in specs:
        # A log that is not there yet (the server has not started) is waited for; say so, or the
        # silence looks like a hang.
        if spec.kind == "file" and spec.path and not os.path.exists(spec.path):
            sys.stderr.write(f"tracelens: waiting for {spec.path} to appear (it does not exist yet)\n")
            sys.stderr.flush()
    session = _session(specs, expect, baseline, stall_seconds, date, interval, scrollback, stdin_fd=0)

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
            printer.flush_stats(session.snapshot.runs)
        finally:
            session.stop()


def tui(
    sources: Sources = None,
    cmd: CmdOpt = None,
    draft_config: DraftConfigOpt = None,
    target_config: TargetConfigOpt = None,
    expectations_file: ExpectFileOpt = None,
    expect_aux: ExpectAuxOpt = None,
    hidden_size: HiddenSizeOpt = None,
    embed_capture: EmbedCaptureOpt = None,
    baseline: BaselineOpt = None,
    stall_seconds: StallOpt = DEFAULT_STALL,
    interval: IntervalOpt = 0.75,
    scrollback: ScrollbackOpt = SCROLLBACK_LINES,
    report: Annotated[Path | None, typer.Option("--report", help="Where `r` writes the HTML report.")] = None,
    date: LiveDateOpt = None,
) -> None:
    """The live screen: header (sources, connection, run, server phase, speculative config),
    acceptance and throughput over time, EAGLE-3 capture per debug site, live findings and the log with
    filters and search. Keys: / search, f filter, p pause, e next fault, r HTML report, ? help, q quit."""
    expect = expectations_from(
        draft_config, target_config, expectations_file, expect_aux, hidden_size, embed_capture
    )
    specs = _specs(sources, cmd)
    stdin_fd = _stdin_for_tui() if any(s.kind == "stdin" for s in specs) else None
    session = _session(specs, expect, baseline, stall_seconds, date, interval, scrollback, stdin_fd)
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
