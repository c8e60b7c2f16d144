"""What a run's verdict reads from the tables beside its findings: a benchmark client's figures, the
requests it answered, its role in a PD-disaggregated pair, what its request-log and snapshot rows show.
One query each, for every run at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from tracelens.analysis.findings import Status
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import Tables, collect
from tracelens.tables.names import SERVER_INFO_ACCEPT
from tracelens.tables.schema import A, C, T, W


@dataclass(frozen=True)
class ClientFigures:
    """A benchmark client's results: requests that succeeded, output tok/s, and requests it sent when
    it says (its own failed count, else the total of the progress bar it drew right above the results,
    else the `--num-prompts` of its command line pasted above them)."""

    ok: float | None
    tput: float | None
    sent: float | None = None
    accept: float | None = None  # the accept length a speculative client measured


# How far above a result block the client's progress bar may be (vLLM prints its request rate, burstiness
# and concurrency between them).
_BAR_REACH = 10
_BAR_TOTAL = r"\|\s*\d+/(\d+) \["
# A client's command line (SGLang's `bench_serving`, vLLM's `bench serve` / `benchmark_serving.py`) with the
# requests it sends; argparse takes `--num-prompt` for `--num-prompts` too.
_COMMAND_TOTAL = r"(?:bench_serving|bench serve|benchmark_serving)\b.*--num-prompts?[= ](\d+)\b"


def client_figures(tables: Tables) -> dict[tuple[str, int], ClientFigures]:
    """Per run holding a benchmark client's results: its successful requests, output tok/s and sent."""
    metric, number = pl.col(C.BENCH_METRIC), pl.col(C.BENCH_NUMBER)
    rows = collect(
        tables.scan(T.BENCHMARKS)
        .filter(pl.col(C.BENCH_ITEM) == "metric")
        .group_by(RUN_KEY)
        .agg(
            number.filter(metric == "Successful requests").sum().alias("ok"),
            number.filter(metric.str.starts_with("Output token throughput")).mean().alias("tput"),
            number.filter(metric == "Failed requests").sum().alias("failed"),
            number.filter(metric == "Accept length").mean().alias("accept"),
            (metric == "Failed requests").any().alias("counted"),
        )
    )
    bars = _bar_totals(tables)
    commands = _command_totals(tables)
    out = {}
    for s, r, ok, tput, failed, accept, counted in rows.iter_rows():
        sent = ok + failed if counted and ok is not None else bars.get((s, r), commands.get((s, r)))
        out[(s, r)] = ClientFigures(ok, tput, sent, accept)
    return out


def _bar_totals(tables: Tables) -> dict[tuple[str, int], float]:
    """Per run: the requests a client sent, as the progress bar right above its results counted them."""
    bars = tables.scan(T.FOREIGN).filter(pl.col(C.FORMAT) == "tqdm")
    return _total_above_results(tables, bars, pl.col(C.MESSAGE).str.extract(_BAR_TOTAL, 1), _BAR_REACH)


def _command_totals(tables: Tables) -> dict[tuple[str, int], float]:
    """Per run: the requests a client was told to send, by the last command line above its results."""
    return _total_above_results(
        tables, tables.scan(T.UNPARSED), pl.col(C.TEXT).str.extract(_COMMAND_TOTAL, 1)
    )


def _total_above_results(
    tables: Tables, lines: pl.LazyFrame, total: pl.Expr, reach: int | None = None
) -> dict[tuple[str, int], float]:
    """Per run: the `total` of the nearest of `lines` above the head of its benchmark results (at most
    `reach` lines above, where given)."""
    headers = collect(
        tables.scan(T.BENCHMARKS).filter(pl.col(C.BENCH_ITEM) == "header").select(*RUN_KEY, C.LINE_NO)
    ).sort(C.LINE_NO)
    if not headers.height:
        return {}
    found = collect(
        lines.select(C.SOURCE, C.LINE_NO, total.cast(pl.Float64).alias("sent")).drop_nulls("sent")
    ).sort(C.LINE_NO)
    near = headers.join_asof(
        found, on=C.LINE_NO, by=C.SOURCE, strategy="backward", tolerance=reach, check_sortedness=False
    )
    return {(s, r): sent for s, r, _, sent in near.iter_rows() if sent is not None}


def client_verdict(client: ClientFigures) -> tuple[Status, str]:
    """A benchmark client's output with no server line, judged as the client's: healthy when every
    request it sent succeeded, degraded when some failed, broken when none succeeded."""
    ok, sent = client.ok or 0, client.sent
    if not ok:
        return Status.BROKEN, "a benchmark client's results: no request succeeded (no server lines)"
    speed = f", {client.tput:.0f} output tok/s" if client.tput else ""
    speed += f", accept length {client.accept:.2f}" if client.accept else ""
    if sent is not None and sent > ok:
        return (
            Status.DEGRADED,
            f"a benchmark client's results: {ok:.0f} of {sent:.0f} requests succeeded, {sent - ok:.0f} "
            f"failed{speed} (no server lines)",
        )
    return (
        Status.HEALTHY,
        f"a benchmark client's results: {ok:.0f} requests succeeded{speed} (no server lines)",
    )


def answered_requests(tables: Tables) -> dict[tuple[str, int], int]:
    """Per run: the POST requests (generation, embedding, audio) it answered with a 2xx status."""
    ok = (pl.col(C.STATUS) >= 200) & (pl.col(C.STATUS) < 300) & (pl.col(C.METHOD) == "POST")
    rows = collect(tables.scan(T.HTTP).filter(ok).group_by(RUN_KEY).agg(pl.len()))
    return {(s, r): int(n) for s, r, n in rows.iter_rows()}


# The queues SGLang prints on a prefill line only in a PD prefill node (`#inflight-req` since 2025's
# autumn beside `#prealloc-req`, its bootstrap queue; `#unbootstrapped-req` / `#transferring-req` and
# `#bootstrap-req` before): a node's role where no server args line says it.
_PREFILL_NODE_QUEUES = (C.INFLIGHT_REQ, C.TRANSFERRING_REQ, C.UNBOOTSTRAPPED_REQ, C.BOOTSTRAP_REQ)


def roles(tables: Tables) -> dict[tuple[str, int], str]:
    """Each run's `disaggregation_mode` (prefill, decode) where its server args set one, else prefill
    where its prefill lines print a prefill node's own queues."""
    mode = collect(
        tables.scan(T.SERVER_ARGS)
        .filter(pl.col(C.KEY) == "disaggregation_mode")
        .select(*RUN_KEY, pl.col(C.VALUE).str.strip_chars("'\" ").str.to_lowercase())
    )
    out = {(s, r): v for s, r, v in mode.iter_rows() if v in ("prefill", "decode")}
    queues = pl.any_horizontal(pl.col(q).is_not_null() for q in _PREFILL_NODE_QUEUES)
    prefill = collect(
        tables.scan(T.BATCHES).filter((pl.col(C.PHASE) == "prefill") & queues).select(RUN_KEY).unique()
    )
    for key in prefill.iter_rows():
        out.setdefault(key, "prefill")
    return out


@dataclass(frozen=True)
class Records:
    """What a run's request-log and snapshot rows show: a source that is only such records is judged by
    them, not as a server that never decoded. Counts are of the rows the run holds once they joined
    their runs (`positions.attach`); ``joined`` names the runs its own rows joined."""

    request_log: bool = False  # its source's rows include requests
    snapshots: bool = False  # and `/metrics` pages or `/server_info` objects
    received: int = 0  # requests received (`request.received`, `Receive:`)
    finished: int = 0  # requests finished (a log's `Finish:`, a metrics file's line, a vLLM response)
    aborted: int = 0  # of those, finished by an abort
    depth: int | None = None  # the depth in force of its newest `/server_info`
    joined: tuple[str, ...] = ()


Rows = tuple[pl.DataFrame, pl.DataFrame]  # a table's rows as parsed, and as they joined their runs


def record_facts(
    requests: Rows, endpoint: Rows, labels: Mapping[tuple[str, int], str]
) -> dict[tuple[str, int], Records]:
    """Per run with request or snapshot rows of its own or joined to it: what they show. ``labels``:
    each run's label."""
    out: dict[tuple[str, int], Records] = {}

    def update(key: tuple[str, int], **values: Any) -> None:
        out[key] = replace(out.get(key, Records()), **values)

    for (parsed, joined), flag in ((requests, "request_log"), (endpoint, "snapshots")):
        for key in parsed.select(RUN_KEY).unique().iter_rows():
            update(key, **{flag: True})
        # `attach` keeps the rows' order: a row's run before and after, side by side
        moved = (parsed[C.SOURCE] != joined[C.SOURCE]) | (parsed[C.RUN] != joined[C.RUN])
        if not moved.any():
            continue
        went = (
            parsed.select(RUN_KEY)
            .filter(moved)
            .hstack(
                joined.filter(moved).select(
                    pl.col(C.SOURCE).alias(W.TO_SOURCE), pl.col(C.RUN).alias(W.TO_RUN)
                )
            )
            .unique()
        )
        for source, run, to_source, to_run in went.sort(pl.all()).iter_rows():
            known = out[(source, run)].joined
            update((source, run), joined=tuple(dict.fromkeys((*known, labels.get((to_source, to_run), "")))))
    event = pl.col(C.EVENT)
    asked = (
        requests[1]
        .group_by(RUN_KEY)
        .agg(
            (event == "received").sum().alias("received"),
            (event == "finished").sum().alias("finished"),
            ((event == "finished") & (pl.col(C.FINISH_REASON) == "abort")).sum().alias("aborted"),
        )
    )
    for source, run, received, finished, aborted in asked.iter_rows():
        update((source, run), received=int(received), finished=int(finished), aborted=int(aborted))
    info = pl.col(C.METRIC_NAME) == SERVER_INFO_ACCEPT
    # the runs with snapshots, and the depth of each one's newest `/server_info`
    polled = (
        endpoint[1]
        .select(*RUN_KEY, pl.when(info).then(pl.col(C.SPEC_NUM_STEPS)).alias(C.SPEC_NUM_STEPS), C.LINE_NO)
        .group_by(RUN_KEY)
        .agg(pl.col(C.SPEC_NUM_STEPS).sort_by(C.LINE_NO).drop_nulls().last())
    )
    for source, run, depth in polled.iter_rows():
        update((source, run), depth=depth)
    return out


def record_verdict(records: Records, run: Mapping[str, Any], server_lines: bool) -> tuple[Status, str] | None:
    """The status and headline of a run that decoded nothing by its lines, from its records: None when
    they say nothing more (a server log's run with snapshots but no finished request is judged as one)."""
    if server_lines and not records.finished:
        return None
    parts, status = [], Status.HEALTHY
    if records.joined:
        parts.append("its rows joined " + ", ".join(records.joined))
    if records.finished:
        aborted = f" ({records.aborted} aborted)" if records.aborted else ""
        parts.append(f"{records.finished} request(s) finished{aborted}")
        if records.aborted == records.finished:
            parts[-1] = f"all {records.finished} finished request(s) were aborted"
            status = Status.DEGRADED
    elif records.received:
        parts.append(f"{records.received} request(s) received, none finished in it")
        status = Status.INCOMPLETE
    length, rate = run.get(A.MEAN_ACCEPT_LEN), run.get(A.MEAN_ACCEPTANCE_RATE)
    if length is not None:
        whose = " ".join(w for w in (run.get(A.RATE_ENGINE), run.get(A.RATE_FROM)) if w)
        rated = "" if rate is None else f", rate {rate:.0%}"
        parts.append(f"accept len {length:.2f}{rated} ({whose})")
    if records.depth is not None:
        parts.append(f"depth {records.depth} in force")
    if server_lines:
        return status, "its request log: " + ", ".join(parts) + "; no decode line in the log"
    what = " and ".join(
        w
        for w, seen in (
            ("a request log", records.request_log),
            ("snapshots of /metrics or /server_info", records.snapshots),
        )
        if seen
    )
    said = ", ".join(parts) if parts else "no request and no acceptance figure"
    return status, f"{what}: {said}; no server lines"


def running_at_prefill(tables: Tables) -> dict[tuple[str, int], int]:
    """Per run whose prefill batch lines count requests running: the most they count. SGLang's
    `#running-req` (`#running_req` in early 2024) on a prefill line is the size of its running batch, the
    requests being decoded: a run whose decode lines were filtered out, or come less often than its
    excerpt is long, served all the same."""
    rows = collect(
        tables.scan(T.BATCHES)
        .filter((pl.col(C.PHASE) == "prefill") & (pl.col(C.RUNNING_REQ) > 0))
        .group_by(RUN_KEY)
        .agg(pl.col(C.RUNNING_REQ).max())
    )
    return {(s, r): int(n) for s, r, n in rows.iter_rows()}


def running_headline(running: int) -> str:
    """The headline of a run seen serving only by its prefill lines' running requests."""
    return (
        f"serving: prefill batches beside up to {running} running request(s); no decode line, so no figures"
    )
