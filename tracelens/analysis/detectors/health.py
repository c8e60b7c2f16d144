"""Detectors of the server's health: slow or stalled starts, crashes and faults."""

from __future__ import annotations

from itertools import pairwise

import polars as pl

from tracelens.analysis.catalog import Weight
from tracelens.analysis.chain import ranks_text
from tracelens.analysis.detectors.context import Context
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.schema import A, C, T

SLOW_START_FACTOR = 1.5
CRASH_KINDS = ("exception", "oom", "nccl", "watchdog", "sigquit")


def startup(ctx: Context) -> list[Finding]:
    """Stalls while loading, hangs while serving, and starts much slower than the model's earlier ones."""
    out = []
    crashes = ctx.incidents.filter(pl.col(C.FAULT_KIND).is_in(list(CRASH_KINDS)))
    for row in _stalls_said(ctx, crashes).to_dicts():
        # A run with no ready line counts as starting; once it has decoded, the silence is mid-serving.
        # Decoding that goes on after the silence: the server was idle, or the log is an excerpt.
        when = "after it had started decoding" if row[_SERVED] else "while the server was starting"
        out.append(
            ctx.finding(
                Severity.INFO if row[_SERVED] and row[_RESUMED] else Severity.WARNING,
                "startup-stall",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"no log line for {row[A.DURATION_S]:.0f} s {when}",
                [row[C.LINE_NO]],
            )
        )
    for row in ctx.hangs.to_dicts():
        if crashes.filter(key_of(row) & (pl.col(A.FIRST_TS) <= row[C.TS])).height:
            continue  # the server was down, not hung: the crash finding says so
        out.append(
            ctx.finding(
                Severity.ERROR,
                "serving-hang",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"server hung while serving: no batch for {_span(row[A.DURATION_S])} with "
                f"{row[A.PENDING_REQS]} request(s) in hand, from {row[C.TS]:%H:%M:%S}",
                [row[C.LINE_NO], row[A.LINE_AFTER]],
            )
        )
    slow = ctx.readiness.filter(
        pl.col(A.TIME_TO_READY_S) > SLOW_START_FACTOR * pl.col(A.EXPECTED_TIME_TO_READY_S)
    )
    for row in slow.to_dicts():
        out.append(
            ctx.finding(
                Severity.WARNING,
                "startup-slow",
                row[C.SOURCE],
                row[C.RUN],
                None,
                f"ready after {row[A.TIME_TO_READY_S]:.0f} s; earlier starts of this model took "
                f"{row[A.EXPECTED_TIME_TO_READY_S]:.0f} s on average",
            )
        )
    return out


_SERVED, _RESUMED, _AT = "_served", "_resumed", "_at"


def _stalls_said(ctx: Context, crashes: pl.DataFrame) -> pl.DataFrame:
    """The stalls to say, in order, with whether their run had decoded before each (SERVED) and decoded
    again after it (RESUMED). Not said: silence after a crash of the run (the server was down, the crash
    finding says it) or inside a hang of the run (the serving-hang finding says it, with the work it left
    waiting: a hang starts at or before the silence and lasts at least as long). Made for all stalls at
    once: a log of many day roll-overs has tens of thousands."""
    stalls = ctx.stalls.with_row_index(_AT)
    if not stalls.height:
        return stalls
    after_crash = stalls.join(crashes.select(*RUN_KEY, A.FIRST_TS), on=RUN_KEY).filter(
        pl.col(A.FIRST_TS) <= pl.col(C.TS)
    )
    hang = ctx.hangs.select(*RUN_KEY, pl.col(C.TS).alias("_from"), pl.col(A.DURATION_S).alias("_for"))
    ends = pl.col("_from") + pl.duration(seconds=pl.col("_for"))
    in_hang = stalls.join(hang, on=RUN_KEY).filter(
        (pl.col("_from") <= pl.col(C.TS)) & (ends >= pl.col(C.TS) + pl.duration(seconds=pl.col(A.DURATION_S)))
    )
    said = stalls.join(after_crash.select(_AT), on=_AT, how="anti").join(
        in_hang.select(_AT), on=_AT, how="anti"
    )
    timed = ctx.series.filter(pl.col(C.TS).is_not_null()).select(*RUN_KEY, C.TS)
    # one split of the decode rows by run, not a filter of them per run (a log of many short runs)
    by_run = timed.partition_by(RUN_KEY, as_dict=True)
    none = timed.get_column(C.TS).clear()
    parts = []
    for key, rows in said.group_by(RUN_KEY, maintain_order=True):
        decoded = by_run[key].get_column(C.TS).sort() if key in by_run else none
        before = decoded.search_sorted(rows.get_column(C.TS).cast(decoded.dtype), side="right")
        parts.append(rows.with_columns((before > 0).alias(_SERVED), (before < decoded.len()).alias(_RESUMED)))
    return pl.concat(parts).sort(_AT) if parts else said


def key_of(row: dict[str, object]) -> pl.Expr:
    """The rows of ``row``'s run."""
    return (pl.col(C.SOURCE) == pl.lit(row[C.SOURCE])) & (pl.col(C.RUN) == pl.lit(row[C.RUN]))


def _span(seconds: float) -> str:
    """`45 s`, `12 min`, `3.2 h`: a silence in the unit a user reads it in."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def faults(ctx: Context) -> list[Finding]:
    """One finding per incident; a run restarted without a clean shutdown."""
    out = []
    lifecycle = ctx.tables[T.LIFECYCLE]
    stops = lifecycle.filter(pl.col(C.EVENT) == "shutdown").group_by(RUN_KEY).agg(pl.col(C.LINE_NO).min())
    stopped = {(s, r): n for s, r, n in stops.iter_rows()}
    for row in ctx.incidents.to_dicts():
        kind = row[C.FAULT_KIND]
        ranks = row[A.RANKS] or []
        who = f"{len(ranks)} rank(s) ({', '.join(f'TP{r}' for r in ranks)})" if ranks else "the server"
        what = row[C.EXCEPTION_TYPE] or kind
        text = row[C.MESSAGE] if str(row[C.MESSAGE]).startswith(what) else f"{what}: {row[C.MESSAGE]}"
        where = f" in {row[C.COMPONENT]}" if row[C.COMPONENT] else ""
        severity = Severity.ERROR if kind in CRASH_KINDS else Severity.WARNING
        message = f"{who}{where}: {text}" if ranks else text
        stop = stopped.get((row[C.SOURCE], row[C.RUN]))
        # Processes torn down by a graceful shutdown (or SIGTERM) often print errors on the way out, and
        # monitor threads fail once the processes they watch are gone (the failure chain tells).
        linked = ctx.chains.get((row[C.SOURCE], row[C.RUN]))
        if (
            (stop is not None and row[C.FIRST_LINE] > stop)
            or "SIGTERM" in str(row[C.MESSAGE]).upper()
            or (linked is not None and linked.is_noise(row[C.FIRST_LINE]))
        ):
            severity = Severity.INFO
            message = f"after a graceful shutdown: {message}"
        if (
            severity == Severity.ERROR
            and linked is not None
            and linked.went_on
            and linked.line is not None
            and row[C.FIRST_LINE] <= linked.line <= row[C.LAST_LINE]
        ):
            severity = Severity.WARNING  # the run served on after it: it stopped nothing
        out.append(
            ctx.finding(
                severity,
                f"fault-{kind}",
                row[C.SOURCE],
                row[C.RUN],
                row[A.FIRST_TS],
                message,
                [row[C.FIRST_LINE], row[C.LAST_LINE]],
            )
        )
    # sets of keys, not a filter per run: a log of thousands of server starts
    crashes = ctx.incidents.filter(pl.col(C.FAULT_KIND).is_in(list(CRASH_KINDS)))
    ended = set(stopped) | set(crashes.select(RUN_KEY).iter_rows())
    runs = ctx.runs.sort(C.SOURCE, C.RUN).to_dicts()
    for run, nxt in pairwise(runs):
        if run[C.SOURCE] != nxt[C.SOURCE] or run[C.RUN] == 0:
            continue
        if (run[C.SOURCE], run[C.RUN]) not in ended:
            out.append(
                ctx.finding(
                    Severity.INFO,
                    "restart-without-shutdown",
                    run[C.SOURCE],
                    run[C.RUN],
                    run[C.END_TS],
                    f"the server was started again ({nxt[A.LABEL]}) with no shutdown line",
                    [nxt[C.START_LINE]],
                )
            )
    return out


def failures(ctx: Context) -> list[Finding]:
    """The cause of each run's failure chain (`chain`) as a finding: an error when it stopped a process
    (so that `check` fails on a crash whatever line shows it), a warning when the server went on."""
    out = []
    crashes = ctx.incidents.filter(pl.col(C.FAULT_KIND).is_in(list(CRASH_KINDS)))
    spans: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for s, r, a, b in crashes.select(C.SOURCE, C.RUN, C.FIRST_LINE, C.LAST_LINE).iter_rows():
        spans.setdefault((s, r), []).append((a, b))
    for (source, run), linked in ctx.chains.items():
        if linked.code is None or linked.weight is None or linked.line is None:
            continue
        stops = linked.weight in (Weight.FATAL, Weight.CONSEQUENCE)
        if stops and any(a <= linked.line <= b for a, b in spans.get((source, run), [])):
            continue  # the crash's fault finding says it already
        ranks = f", {ranks_text(linked.ranks)}" if linked.ranks else ""
        times = f", {linked.count} times" if linked.count > 1 else ""
        out.append(
            ctx.finding(
                Severity.ERROR if stops else Severity.WARNING,
                f"failure-{linked.code}",
                source,
                run,
                None,
                f"{linked.name} ({linked.component}{ranks}{times})",
                [linked.line, *linked.explained_lines[:2]],
            )
        )
    return out
