"""`Analysis`, what every view reads, and `analyze_tables`, which makes it from parsed tables: the runs,
their series, comparisons, incidents, findings and verdicts, each computed by its own module here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import polars as pl

from tracelens.analysis import (
    capture,
    chain,
    compare,
    configs,
    folding,
    hangs,
    incidents,
    load,
    per_run,
    positions,
    startup,
    verdicts,
    vllm_metrics,
)
from tracelens.analysis.defaults import DEFAULT_POSITION_MARGIN, DEFAULT_STALL_SECONDS
from tracelens.analysis.detectors import Context, detect
from tracelens.analysis.detectors.training_gap import gap_findings
from tracelens.analysis.evidence import texts
from tracelens.analysis.expectations import Expectations, describe_capture, describe_indices
from tracelens.analysis.findings import Evidence, Finding, Severity, sort_findings
from tracelens.analysis.runs import (
    RUN_KEY,
    interesting_runs,
    unknown_sources,
    with_labels,
    with_run_labels,
    with_speculation,
)
from tracelens.analysis.speculation import DECODE_LINES, METRICS_LINES
from tracelens.analysis.training import TrainingInputs
from tracelens.analysis.verdict_inputs import record_facts
from tracelens.analysis.verdicts import Verdict
from tracelens.sources.naming import run_label, short_names
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, Kind, T, W


@dataclass
class Analysis:
    """Everything the views show. Frames are keyed by (source, run) and carry the run `label`."""

    tables: Tables
    expectations: Expectations
    runs: (
        pl.DataFrame
    )  # one row per run: config, duration, time to ready, acceptance, tok/s, speedup, findings
    series: pl.DataFrame  # decode time series per run (DP-combined, recomputed acceptance, rolling stats)
    startup: pl.DataFrame  # phases per run: phase, start, end, duration_s
    incidents: pl.DataFrame  # folded faults
    capture: pl.DataFrame  # per run and debug site: counts, num_aux, shapes, norms
    embed: pl.DataFrame  # per speculative run: embed_state
    comparison: pl.DataFrame  # per run with a baseline: speedup and interval
    config_diff: (
        pl.DataFrame
    )  # server-args differences of each run from its baseline (run_a = run, run_b = baseline)
    changes: pl.DataFrame  # change points in accept len and throughput
    # per-position acceptance, one curve per run from its most exact basis (analysis/positions.py):
    # source, run, position, rate, engine, basis, samples
    spec_curves: pl.DataFrame
    findings: list[Finding] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # one per run, worst first
    # the sources with no line of any known kind (no server log: no run, no verdict), of how many
    not_logs: list[str] = field(default_factory=list)
    source_count: int = 0
    # per run: acceptance rate mean and median over every decode round (`series` may hold only the
    # rows a plot draws of a run longer than per_run.SERIES_LIMIT rounds)
    rate_stats: pl.DataFrame = field(default_factory=pl.DataFrame)
    # of each run whose series is thinned: its steady accept-len distribution at evenly spaced ranks
    # (label, accept_len) and its (batch size, accept len) pairs with counts, made on every round
    distributions: pl.DataFrame = field(default_factory=pl.DataFrame)
    batch_pairs: pl.DataFrame = field(default_factory=pl.DataFrame)
    # per-position acceptance from every basis a run has (`spec_curves` keeps the most exact one)
    positions: pl.DataFrame = field(default_factory=pl.DataFrame)
    # per run: pooled and per-request acceptance, percentiles, requests that did not pay; per request
    requests: pl.DataFrame = field(default_factory=pl.DataFrame)
    request_lengths: pl.DataFrame = field(default_factory=pl.DataFrame)
    length_histogram: pl.DataFrame = field(default_factory=pl.DataFrame)  # per run: bin_from, count
    # per `/server_info` snapshot: the depth in force and the rate against it
    depth: pl.DataFrame = field(default_factory=pl.DataFrame)
    # per run: SGLang's acceptance gauges of its newest /metrics snapshot, and the normalised rate
    gauges: pl.DataFrame = field(default_factory=pl.DataFrame)
    # source -> its short name (`sources.naming`), of every source the command reads: runs are labelled
    # `<short name>#<run>`, the same in every view
    names: dict[str, str] = field(default_factory=dict)
    # source -> its name as the user typed it (a cited line's `where`), when that is not its name
    typed: dict[str, str] = field(default_factory=dict)

    def label_of(self, source: str, run: int) -> str:
        """The label of any run of a source the command read (those `runs` leaves out too)."""
        return run_label(self.names.get(source, source), run)

    def shown_source(self, source: str) -> str:
        """A source's name as the user typed it."""
        return self.typed.get(source, source)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == Severity.ERROR]

    def diff(self, a: str, b: str) -> pl.DataFrame:
        """Server-args differences between any two runs, by label."""
        return compare.args_diff(self.tables[T.SERVER_ARGS], self.runs, a, b)


def analyze_tables(
    tables: Tables,
    expectations: Expectations | None = None,
    *,
    baseline: str | None = None,
    stall_seconds: float = DEFAULT_STALL_SECONDS,
    sources: Iterable[str] = (),
    typed: Mapping[str, str] | None = None,
    training: TrainingInputs | None = None,
    position_margin: float = DEFAULT_POSITION_MARGIN,
) -> Analysis:
    """The analysis of ``tables``. ``sources``: every source the command reads, besides those of the
    tables (the live session names all of its sources from the start, so a run keeps its label when
    another source's first lines arrive); ``typed``: source -> its name as the user typed it;
    ``training``: what the draft was trained on and where its configs are (`--training`, discovery
    from the logs' model paths); None looks nothing up."""
    linked = chain.chains(tables)
    not_logs, source_count = unknown_sources(tables.scan(T.LINES), tables.scan(T.UNPARSED))
    # a line the failure catalog knows (`Fatal Python error: Segmentation fault`) makes a file a log
    not_logs = [s for s in not_logs if not any(key[0] == s for key in linked)]
    names = short_names([*sources, *tables[T.RUNS].get_column(C.SOURCE).unique(maintain_order=True)])
    # request logs and snapshots in sources of their own join the server run whose span holds them
    requests = positions.attach(tables[T.REQUESTS], tables[T.RUNS], positions.VLLM_REQUEST)
    endpoint = positions.attach(tables[T.ENDPOINT_METRICS], tables[T.RUNS], positions.VLLM_METRIC)
    runs = interesting_runs(with_run_labels(tables[T.RUNS], names), _busy_lines(tables, requests, endpoint))
    runs = runs.filter(~pl.col(C.SOURCE).is_in(not_logs))
    runs = with_speculation(runs, tables)
    inputs = training or TrainingInputs(discover=False)
    run_configs = configs.run_configs(tables, runs, inputs)
    expect = configs.configs_expectations(expectations or Expectations(), run_configs, inputs).derived()
    lifecycle = tables[T.LIFECYCLE]
    ready = startup.ready_times(lifecycle)
    readiness = startup.time_to_ready(runs, lifecycle)
    rounds = per_run.decode_rounds(tables)
    baselines = compare.pick_baselines(runs, rounds, baseline)
    # The series is made one run at a time; the runs a speedup compares keep their steady rows for it.
    compared = baselines.filter(pl.col(A.BASELINE).is_not_null())
    keep = set(compared.select(RUN_KEY).iter_rows()) | set(
        runs.filter(pl.col(A.LABEL).is_in(compared.get_column(A.BASELINE).implode()))
        .select(RUN_KEY)
        .iter_rows()
    )
    made = per_run.series_by_run(tables, runs, ready, keep, rounds)
    series = made.series
    speedups = with_labels(compare.speedups(made.speed_groups, runs, baselines), runs)
    folded = with_labels(incidents.fold(tables[T.FAULTS]), runs)
    changes = load.explain_steps(made.changes, series)
    runs = _overview(runs, made, readiness, speedups, folded, expect, tables[T.SPEC_METRICS], tables)
    runs = runs.join(compare.speedup_notes(runs, baselines, speedups), on=RUN_KEY, how="left")
    every_position = positions.all_positions(requests, endpoint, tables[T.SPEC_METRICS])
    lengths = positions.request_lengths(requests)
    curves = positions.preferred_curves(every_position)
    ctx = Context(
        tables=tables,
        runs=runs,
        series=series,
        expect=expect,
        incidents=folded,
        stalls=with_labels(
            startup.stalls(tables.scan(T.LINES), tables[T.RUNS], lifecycle, stall_seconds), runs
        ),
        hangs=hangs.hangs(tables),
        readiness=readiness,
        changes=changes,
        speedups=speedups,
        curves=with_labels(curves, runs),
        baselines=baselines,
        position_margin=position_margin,
        names=names,
        chains=linked,
    )
    found, passed = detect(ctx)
    runs = _captured_as_served(runs, tables, expect, run_configs, passed.embed_stats)
    figures = positions.request_figures(requests)
    gauges = positions.gauge_figures(endpoint, tables[T.RUNS])
    depth = positions.depth_timeline(endpoint, tables[T.RUNS])
    # after the detectors, which judge a run by its own lines: the views and the verdict see the rest
    runs = _with_served(runs, positions.served_figures(figures, curves, gauges, depth))
    found += gap_findings(passed.context, run_configs, inputs.training)
    findings = sort_findings(folding.fold_repeats(found), verdicts.causal_rank)
    labels = {(s, r): label for s, r, label in runs.select(*RUN_KEY, A.LABEL).iter_rows()}
    facts = record_facts((tables[T.REQUESTS], requests), (tables[T.ENDPOINT_METRICS], endpoint), labels)
    judged = verdicts.verdicts(runs, findings, tables, expect, linked, facts)
    _fill_evidence([*findings, *judged], tables, typed or {})
    counts = (
        pl.DataFrame(
            {
                C.SOURCE: [f.source for f in findings],
                C.RUN: [f.run for f in findings],
                W.ERROR: [f.severity == Severity.ERROR for f in findings],
            },
            schema={C.SOURCE: pl.String, C.RUN: pl.Int32, W.ERROR: pl.Boolean},
        )
        .group_by(RUN_KEY)
        .agg(pl.len().alias(A.FINDINGS), pl.col(W.ERROR).sum().alias(A.ERRORS))
    )
    status = pl.DataFrame(
        {
            C.SOURCE: [v.source for v in judged],
            C.RUN: [v.run for v in judged],
            A.STATUS: [v.status for v in judged],
            A.HEADLINE: [v.headline for v in judged],
        },
        schema={C.SOURCE: pl.String, C.RUN: pl.Int32, A.STATUS: pl.String, A.HEADLINE: pl.String},
    )
    runs = (
        runs.join(counts, on=RUN_KEY, how="left")
        .with_columns(pl.col(A.FINDINGS).fill_null(0), pl.col(A.ERRORS).fill_null(0))
        .join(status, on=RUN_KEY, how="left")
    )
    diffs = [
        compare.args_diff(tables[T.SERVER_ARGS], runs, a, b)
        for a, b in speedups.select(A.LABEL, A.BASELINE).iter_rows()
    ]
    return Analysis(
        tables=tables,
        expectations=expect,
        runs=runs,
        series=series,
        startup=with_labels(startup.phases(lifecycle), runs).filter(pl.col(A.LABEL).is_not_null()),
        incidents=folded,
        capture=with_labels(passed.sites, runs),
        embed=with_labels(capture.embed_states(runs, passed.embed_stats, expect), runs),
        comparison=speedups,
        config_diff=pl.concat(diffs) if diffs else compare.args_diff(tables[T.SERVER_ARGS], runs, "", ""),
        changes=with_labels(changes, runs),
        spec_curves=with_labels(curves, runs),
        findings=findings,
        verdicts=judged,
        not_logs=not_logs,
        source_count=source_count,
        rate_stats=made.rate_stats,
        distributions=with_labels(made.distributions, runs),
        batch_pairs=with_labels(made.batch_pairs, runs),
        positions=with_labels(every_position, runs),
        requests=with_labels(figures, runs),
        request_lengths=with_labels(lengths, runs),
        length_histogram=with_labels(positions.length_histogram(lengths), runs),
        depth=with_labels(depth, runs),
        gauges=with_labels(gauges, runs),
        names=names,
        typed=dict(typed or {}),
    )


def _busy_lines(tables: Tables, requests: pl.DataFrame, endpoint: pl.DataFrame) -> pl.LazyFrame:
    """source, run, kind of the lines `interesting_runs` looks for, from their own tables (a line of
    kind K is a row of K's table or continues one of the same run), so `lines` is not read for it;
    request and endpoint rows as they were joined to their runs."""
    kinds = {T.BATCHES: "batch", T.FAULTS: "fault", T.DEBUG: "debug", T.SPEC_METRICS: "spec_metrics"}
    joined = {Kind.REQUEST: requests, Kind.ENDPOINT_METRIC: endpoint}
    return pl.concat(
        [tables.scan(name).select(*RUN_KEY, pl.lit(kind).alias(C.KIND)) for name, kind in kinds.items()]
        + [rows.lazy().select(*RUN_KEY, pl.lit(kind).alias(C.KIND)) for kind, rows in joined.items()]
    )


def _overview(
    runs: pl.DataFrame,
    made: per_run.RunSeries,
    readiness: pl.DataFrame,
    speedups: pl.DataFrame,
    folded: pl.DataFrame,
    expect: Expectations,
    spec_metrics: pl.DataFrame,
    tables: Tables,
) -> pl.DataFrame:
    stats = made.steady_means
    # vLLM prints no decode lines: its mean acceptance length (bonus included, as SGLang's accept len)
    # comes from the spec-decoding metrics lines, each an interval (V0's counters since start made so),
    # idle `nan` intervals left out; its rate is accepted over drafted tokens pooled over the lines that
    # count both (the (accept len - 1) / k of SGLang's rows), else the mean of the rates it printed. A
    # run whose lines print no length (V1's first layouts) still has its rate.
    counted = pl.col(C.DRAFTED).fill_null(0) > 0
    pooled = pl.col(C.ACCEPTED).filter(counted).sum() / pl.col(C.DRAFTED).filter(counted).sum()
    logged = pl.col(C.ACCEPTANCE_RATE).filter(pl.col(C.ACCEPTANCE_RATE).is_not_nan()).mean()
    length = pl.col(C.MEAN_ACCEPTANCE_LENGTH)
    vllm = (
        vllm_metrics.intervals(spec_metrics)
        .group_by(RUN_KEY)
        .agg(
            length.filter(length.is_not_nan()).mean().alias(W.VLLM_LEN),
            pl.when(counted.any()).then(pooled).otherwise(logged).alias(W.VLLM_RATE),
            # V0 prints k; V1 a rate for each of its k positions
            pl.coalesce(pl.col(C.NUM_SPEC_TOKENS).max(), pl.col(C.PER_POSITION).list.len().max())
            .cast(pl.Int64)
            .alias(A.SPEC_TOKENS),
        )
        .filter(pl.col(W.VLLM_LEN).is_not_null() | pl.col(W.VLLM_RATE).is_not_null())
    )
    crashed = folded.filter(pl.col(C.FAULT_KIND).is_in(["exception", "oom", "nccl", "watchdog", "sigquit"]))
    crashed = crashed.select(RUN_KEY).unique().with_columns(pl.lit(False).alias(A.ENDED_CLEANLY))
    definitions = made.definitions
    out = (
        runs.join(stats, on=RUN_KEY, how="left")
        .join(vllm, on=RUN_KEY, how="left")
        .with_columns(
            pl.coalesce(A.MEAN_ACCEPT_LEN, W.VLLM_LEN).alias(A.MEAN_ACCEPT_LEN),
            pl.coalesce(A.MEAN_ACCEPTANCE_RATE, W.VLLM_RATE).alias(A.MEAN_ACCEPTANCE_RATE),
            # SGLang's decode lines (recomputed from accept len and the depth), else vLLM's metrics lines
            pl.when(pl.col(A.MEAN_ACCEPTANCE_RATE).is_not_null())
            .then(pl.lit(positions.SGLANG))
            .when(pl.col(W.VLLM_RATE).is_not_null())
            .then(pl.lit(positions.VLLM))
            .alias(A.RATE_ENGINE),
            pl.when(pl.col(A.MEAN_ACCEPTANCE_RATE).is_not_null())
            .then(pl.lit(DECODE_LINES))
            .when(pl.col(W.VLLM_RATE).is_not_null())
            .then(pl.lit(METRICS_LINES))
            .alias(A.RATE_FROM),
        )
        .drop(W.VLLM_LEN, W.VLLM_RATE)
        .join(readiness, on=RUN_KEY, how="left")
        .join(
            speedups.select(*RUN_KEY, A.BASELINE, A.SPEEDUP, A.SPEEDUP_LOW, A.SPEEDUP_HIGH),
            on=RUN_KEY,
            how="left",
        )
        .join(crashed, on=RUN_KEY, how="left")
        .join(definitions, on=RUN_KEY, how="left")
        .with_columns(
            ((pl.col(C.END_TS) - pl.col(C.START_TS)).dt.total_microseconds() / 1e6).alias(A.DURATION_S),
            pl.col(A.ENDED_CLEANLY).fill_null(True),
        )
    )
    # Layer ids: what the run's debug lines printed (what the server did), else the draft config's, which
    # are then said to be the config's: they are what the draft was trained on, not proof of the capture.
    printed = capture.run_layer_ids(tables.scan(T.DEBUG)).with_columns(pl.lit(True).alias(W.PRINTED))
    out = out.join(printed, on=RUN_KEY, how="left")
    if expect.aux_layer_ids is not None:
        out = out.with_columns(
            pl.coalesce(C.LAYER_IDS, pl.lit(list(expect.aux_layer_ids), pl.List(pl.Int64))).alias(C.LAYER_IDS)
        )
    words = [
        describe_capture(tuple(ids) if ids is not None else None, expect.num_layers, expect.architecture)
        + ("" if was_printed or ids is None else ", per the draft config (no debug line prints the ids)")
        if spec and (ids is not None or expect.num_layers is not None)
        else None
        for spec, ids, was_printed in out.select(A.SPECULATIVE, C.LAYER_IDS, W.PRINTED).iter_rows()
    ]
    out = out.drop(W.PRINTED)
    return out.with_columns(pl.Series(A.CAPTURED_LAYERS, words, dtype=pl.String))


def _with_served(runs: pl.DataFrame, served: pl.DataFrame) -> pl.DataFrame:
    """A run without decode or metrics lines takes its acceptance from the other places it has
    (`positions.served_figures`), saying whose and which; such a run drafts."""
    bare = pl.col(A.MEAN_ACCEPT_LEN).is_null() & pl.col(A.MEAN_ACCEPTANCE_RATE).is_null()
    taken = bare & pl.col(W.SERVED_LEN).is_not_null()
    return (
        runs.join(served, on=RUN_KEY, how="left")
        .with_columns(
            *(
                pl.when(taken).then(pl.col(mine)).otherwise(pl.col(theirs)).alias(theirs)
                for mine, theirs in (
                    (W.SERVED_LEN, A.MEAN_ACCEPT_LEN),
                    (W.SERVED_RATE, A.MEAN_ACCEPTANCE_RATE),
                    (W.SERVED_ENGINE, A.RATE_ENGINE),
                    (W.SERVED_FROM, A.RATE_FROM),
                )
            ),
            (pl.col(A.SPECULATIVE) | taken).alias(A.SPECULATIVE),
            pl.coalesce(A.SPECULATIVE_FROM, pl.when(taken).then(pl.col(W.SERVED_FROM))).alias(
                A.SPECULATIVE_FROM
            ),
        )
        .drop(W.SERVED_LEN, W.SERVED_RATE, W.SERVED_ENGINE, W.SERVED_FROM)
    )


def _captured_as_served(
    runs: pl.DataFrame,
    tables: Tables,
    expect: Expectations,
    served: dict[tuple[str, int], configs.RunConfigs],
    embed_stats: pl.DataFrame,
) -> pl.DataFrame:
    """The captured layers in words follow what the server did, never a reading that contradicts a
    finding: the capture indices a debug line prints (`layers_to_capture=[0, 3, 31]`) are what the
    target does; else the ids of the draft config the server read, when it was found (not the ids the
    draft was trained on, which the expectations hold); an embedding captured (`layer_id=-1`) is said
    so even when the ids would not give it."""
    # A setup print (`set aux layers: layer_ids=..., layers_to_capture=...`) carries no measurement;
    # the many per-step prints carry a norm or a count: only the few others are searched for the key.
    setup = pl.col(C.NORM).is_null() & pl.col(C.NUM_AUX).is_null() & pl.col(C.NUM_ITEMS).is_null()
    key_is = pl.element().struct.field(C.KEY) == CAPTURE_KEY
    indices = collect(
        tables.scan(T.DEBUG)
        .select(*RUN_KEY, C.NORM, C.NUM_AUX, C.NUM_ITEMS, C.ITEMS)
        .filter(setup)
        .filter(pl.col(C.ITEMS).list.eval(key_is).list.any())
        .select(
            *RUN_KEY,
            pl.col(C.ITEMS)
            .list.eval(pl.element().filter(key_is).struct.field(C.VALUE))
            .list.first()
            .alias(W.CAPTURE_TEXT),
        )
        .group_by(RUN_KEY, maintain_order=True)
        .agg(pl.col(W.CAPTURE_TEXT).first())
    )
    printed = {(s, r): _int_list(t) for s, r, t in indices.iter_rows()}
    embedded = {(s, r) for s, r in embed_stats.filter(pl.col(W.SEEN)).select(RUN_KEY).iter_rows()}
    words = []
    rows = runs.select(*RUN_KEY, C.SPEC_ALGORITHM, A.CAPTURED_LAYERS).iter_rows()
    for source, run, spec, text in rows:
        at, rc = printed.get((source, run)), served.get((source, run))
        draft = rc.draft_facts if rc is not None else None
        n = (rc.num_layers if rc is not None else None) or expect.num_layers
        if spec and at:
            text = describe_indices(at, n, "as the debug lines print layers_to_capture")
        elif spec and rc is not None and rc.draft is not None and draft is not None and n is not None:
            text = describe_capture(draft.aux_ids, n, expect.architecture) + f", per {rc.draft.where}"
        if spec and (source, run) in embedded and (text is None or "embedding" not in text):
            before = f"; the ids alone would give {text}" if text else ""
            text = f"the token embedding among them, as the debug lines show (layer_id -1){before}"
        words.append(text)
    return runs.with_columns(pl.Series(A.CAPTURED_LAYERS, words, dtype=pl.String))


CAPTURE_KEY = "layers_to_capture"


def _int_list(text: str | None) -> tuple[int, ...] | None:
    """`[0, 3, 31]` as a tuple; None for anything else."""
    inner = (text or "").strip().removeprefix("[").removesuffix("]")
    parts = [p.strip() for p in inner.split(",")]
    if not inner or not all(p.lstrip("-").isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _fill_evidence(findings: list[Finding | Verdict], tables: Tables, typed: Mapping[str, str]) -> None:
    """The text of each evidence line: kept in the dataset, or read from its source (only the few lines
    findings cite, one pass per source; see `tracelens.analysis.evidence`); and where it is, written
    from what the user typed."""
    wanted = {(e.source, e.line_no) for f in findings for e in f.evidence}
    found = texts(wanted, tables.scan(T.LINES), tables.scan(T.EVIDENCE), tables.scan(T.BATCHES))
    for finding in findings:
        finding.evidence = [
            Evidence(e.source, e.line_no, found.get((e.source, e.line_no), ""), typed.get(e.source, ""))
            for e in finding.evidence
        ]
