"""Detectors: each turns analysis frames into findings a user can act on. One function per concern;
`DETECTORS` lists them all, so adding a check is adding a function to that tuple."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracelens.analysis.capture import is_embed, layer_id_lines
from tracelens.analysis.expectations import Expectations, capture_indices, default_layer_ids, describe_capture
from tracelens.analysis.findings import Evidence, Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T

MAX_EVIDENCE = 5
USELESS_ACCEPT_LEN = 1.1
LOW_ACCEPTANCE_RATE = 0.3
REGRESSION_FACTOR = 0.7
NORM_OUTLIER_Z = 8.0
SLOW_START_FACTOR = 1.5
CRASH_KINDS = ("exception", "oom", "nccl", "watchdog", "sigquit")


@dataclass
class Context:
    """What the detectors read."""

    tables: Tables
    runs: pl.DataFrame  # interesting runs with labels and overview columns
    series: pl.DataFrame  # acceptance.decode_series
    expect: Expectations
    incidents: pl.DataFrame
    stalls: pl.DataFrame
    readiness: pl.DataFrame  # startup.time_to_ready
    changes: pl.DataFrame  # acceptance.change_points
    speedups: pl.DataFrame
    curves: pl.DataFrame  # acceptance.position_curves
    _labels: dict[tuple[str, int], str] | None = field(default=None, init=False, repr=False)

    def label(self, source: str, run: int) -> str:
        if self._labels is None:  # one lookup table, not a filter of `runs` per finding
            self._labels = {(s, r): label for s, r, label in self.runs.select(*RUN_KEY, A.LABEL).iter_rows()}
        return self._labels.get((source, run), f"{source}#{run}")

    def finding(
        self,
        severity: Severity,
        code: str,
        source: str,
        run: int,
        ts: Any,
        message: str,
        lines: Iterable[int] = (),
    ) -> Finding:
        evidence = [Evidence(source, int(n)) for n in list(dict.fromkeys(lines))[:MAX_EVIDENCE]]
        return Finding(severity, code, source, int(run), self.label(source, run), ts, message, evidence)

    def debug_of(self, source: str, run: int, *columns: str, where: pl.Expr | None = None) -> pl.DataFrame:
        """One run's debug lines (those that match ``where``), with ``columns`` besides source, run,
        line_no and ts (a dataset reads only those, of that run's row groups)."""
        wanted = [*RUN_KEY, C.LINE_NO, C.TS, *columns]
        return next(self.tables.per_run(T.DEBUG, [(source, run)], wanted, where))[1]


def _fmt_ids(ids: Iterable[int]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def _spec_runs(ctx: Context) -> list[dict[str, Any]]:
    return ctx.runs.filter(pl.col(C.SPEC_ALGORITHM).is_not_null()).to_dicts()


def aux_counts(ctx: Context) -> list[Finding]:
    """num_aux / num_items differ from the expectation, or change within a run."""
    out = []
    for run in _spec_runs(ctx):
        counted = pl.col(C.NUM_AUX).is_not_null() | pl.col(C.NUM_ITEMS).is_not_null()
        debug = ctx.debug_of(run[C.SOURCE], run[C.RUN], C.NUM_AUX, C.NUM_ITEMS, where=counted)
        for column, what in ((C.NUM_AUX, "aux hidden states"), (C.NUM_ITEMS, "concatenated items")):
            rows = debug.filter(pl.col(column).is_not_null())
            if not rows.height:
                continue
            values = rows.get_column(column).unique().sort().to_list()
            expected = ctx.expect.expect_aux
            if expected is not None and values != [expected]:
                bad = rows.filter(pl.col(column) != expected)
                out.append(
                    ctx.finding(
                        Severity.ERROR,
                        f"{column.replace('_', '-')}-mismatch",
                        run[C.SOURCE],
                        run[C.RUN],
                        bad.item(0, C.TS),
                        f"{bad.height} debug line(s) report {column}={_fmt_ids(values)} {what}; the draft expects "
                        f"{expected}",
                        bad.get_column(C.LINE_NO).to_list(),
                    )
                )
            elif len(values) > 1:
                firsts = (
                    rows.group_by(column).agg(pl.col(C.LINE_NO).min(), pl.col(C.TS).min()).sort(C.LINE_NO)
                )
                out.append(
                    ctx.finding(
                        Severity.WARNING,
                        f"{column.replace('_', '-')}-changed",
                        run[C.SOURCE],
                        run[C.RUN],
                        firsts.item(1, C.TS),
                        f"{column} changes within the run: {_fmt_ids(values)}",
                        firsts.get_column(C.LINE_NO).to_list(),
                    )
                )
    return out


def shapes(ctx: Context) -> list[Finding]:
    """Shapes inconsistent between sites; a concatenated width that is not aux count x hidden size."""
    out = []
    for run in _spec_runs(ctx):
        debug = ctx.debug_of(
            run[C.SOURCE], run[C.RUN], C.SITE, C.EVENT, C.SHAPES, where=pl.col(C.SHAPES).list.len() > 0
        )
        if not debug.height:
            continue
        widths = debug.with_columns(pl.col(C.SHAPES).list.eval(pl.element().list.last()).alias("_w"))
        lists = widths.filter(pl.col(C.SHAPES).list.len() > 1)
        hidden = ctx.expect.hidden_size
        if hidden is None and lists.height:
            hidden = lists.get_column("_w").explode().mode().sort().item(0)
        # Sites are compared on their usual widths (the mode of the last dims): the batch dim changes
        # from one step to the next, so comparing each site's last shapes reads an analysis that saw
        # half of one decode step (live, between two sites' lines) as the sites disagreeing.
        per_site = lists.group_by(C.SITE, C.EVENT).agg(
            pl.col(C.SHAPES).last(),
            pl.col(C.LINE_NO).last(),
            pl.col(C.TS).last(),
            pl.col("_w").mode().sort().first(),
        )
        if per_site.get_column("_w").n_unique() > 1:
            described = "; ".join(f"{s}/{e}: {sh}" for s, e, sh, _, _, _ in per_site.iter_rows())
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "shapes-inconsistent",
                    run[C.SOURCE],
                    run[C.RUN],
                    per_site.item(0, C.TS),
                    f"debug sites disagree on the captured shapes ({described})",
                    per_site.get_column(C.LINE_NO).to_list(),
                )
            )
        if hidden is None:
            continue
        aux = ctx.expect.expect_aux or (lists.get_column(C.SHAPES).list.len().max() if lists.height else None)
        singles = widths.filter(pl.col(C.SHAPES).list.len() == 1).with_columns(
            pl.col("_w").list.first().alias("_w")
        )
        wide = singles.filter(pl.col("_w") > hidden)
        if aux is not None:
            bad = wide.filter(pl.col("_w") != aux * hidden)
            if bad.height:
                width = bad.item(0, "_w")
                out.append(
                    ctx.finding(
                        Severity.ERROR,
                        "concat-width-mismatch",
                        run[C.SOURCE],
                        run[C.RUN],
                        bad.item(0, C.TS),
                        f"a concatenated hidden state is {width} wide ({width / hidden:g} x {hidden}); "
                        f"{aux} aux states x hidden size {hidden} = {aux * hidden}",
                        bad.get_column(C.LINE_NO).to_list(),
                    )
                )
        if ctx.expect.hidden_size is not None:
            narrow = singles.filter((pl.col("_w") < hidden) | (pl.col("_w") % hidden != 0))
            if narrow.height:
                out.append(
                    ctx.finding(
                        Severity.ERROR,
                        "hidden-size-mismatch",
                        run[C.SOURCE],
                        run[C.RUN],
                        narrow.item(0, C.TS),
                        f"captured width {narrow.item(0, '_w')} does not fit the target's hidden size {hidden}",
                        narrow.get_column(C.LINE_NO).to_list(),
                    )
                )
    return out


_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")


def fc_width(ctx: Context) -> list[Finding]:
    """A crash `mat1 and mat2 shapes cannot be multiplied (1xW and VxH)` in a speculative run whose
    debug lines show the captured width: W / hidden aux states reached the draft, whose fc layer takes
    V / hidden. The crash itself says how many the draft was trained with, no config needed."""
    out = []
    spec = {(r[C.SOURCE], r[C.RUN]) for r in _spec_runs(ctx)}
    for row in ctx.incidents.to_dicts():
        if (row[C.SOURCE], row[C.RUN]) not in spec:
            continue
        hit = _MATMUL.search(str(row[C.MESSAGE] or "")) or _MATMUL.search(str(row[C.TRACEBACK] or ""))
        if hit is None:
            continue
        given, takes = int(hit.group(2)), int(hit.group(3))
        debug = ctx.debug_of(row[C.SOURCE], row[C.RUN], C.SHAPES, C.NUM_AUX).filter(
            pl.col(C.SHAPES).list.len() > 1
        )
        hidden = ctx.expect.hidden_size
        if hidden is None and debug.height:
            hidden = (
                debug.get_column(C.SHAPES).list.eval(pl.element().list.last()).explode().mode().sort().item(0)
            )
        if not hidden or given == takes or given % hidden or takes % hidden:
            continue
        counts = set(debug.get_column(C.SHAPES).list.len().to_list())
        counts |= set(
            ctx.debug_of(row[C.SOURCE], row[C.RUN], C.NUM_AUX).get_column(C.NUM_AUX).drop_nulls().to_list()
        )
        if given // hidden not in counts:
            continue  # the multiplied width is not the captured one: another layer's shape error
        lines = [row[C.FIRST_LINE], *debug.get_column(C.LINE_NO).to_list()[:1]]
        out.append(
            ctx.finding(
                Severity.ERROR,
                "aux-count-vs-draft",
                row[C.SOURCE],
                row[C.RUN],
                row[A.FIRST_TS],
                f"the draft's fc layer takes {takes // hidden} aux hidden states ({takes} wide); the target "
                f"hands it {given // hidden} ({given} wide, hidden size {hidden})",
                lines,
            )
        )
    return out


def embed_capture(ctx: Context) -> list[Finding]:
    """An embedding capture present when the draft was not trained with one, or absent when expected."""
    out = []
    for run in _spec_runs(ctx):
        debug = ctx.debug_of(run[C.SOURCE], run[C.RUN], C.LAYER_ID, C.EVENT, C.NORM)
        if not debug.height:
            continue
        embeds = debug.filter(is_embed())
        expected = ctx.expect.embed_capture
        if embeds.height and expected is not True:
            norm = embeds.get_column(C.NORM).drop_nulls()
            norm_text = f", norm about {norm.median():.4g}" if norm.len() else ""
            severity = Severity.ERROR if expected is False else Severity.WARNING
            why = (
                "the draft was not trained with one"
                if expected is False
                else "unless the draft was trained with it (its layer ids include -1), acceptance suffers"
            )
            out.append(
                ctx.finding(
                    severity,
                    "embed-capture-unexpected",
                    run[C.SOURCE],
                    run[C.RUN],
                    embeds.item(0, C.TS),
                    f"the target captures the token embedding (layer_id -1) for the draft in {embeds.height} "
                    f"line(s){norm_text}: {why}",
                    embeds.get_column(C.LINE_NO).to_list(),
                )
            )
        elif not embeds.height and expected is True:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "embed-capture-missing",
                    run[C.SOURCE],
                    run[C.RUN],
                    debug.item(0, C.TS),
                    "the draft expects an embedding capture (layer_id -1) but no debug line shows one",
                    debug.get_column(C.LINE_NO).to_list()[:1],
                )
            )
    return out


def missing_sites(ctx: Context) -> list[Finding]:
    """Debug sites an earlier run of the same speculative setup printed and this run does not."""
    out = []
    spec = ctx.runs.filter(pl.col(C.SPEC_ALGORITHM).is_not_null()).sort(C.START_TS, nulls_last=True)
    # Embedding-capture sites are judged by `embed_capture`: their absence after a fix is the point.
    debug = ctx.tables.scan(T.DEBUG).filter(pl.col(C.EVENT).is_not_null() & ~is_embed())
    site_sets = collect(
        debug.group_by(RUN_KEY).agg(pl.concat_str(C.TAG, C.SITE, C.EVENT, separator="/").unique().alias("_s"))
    )
    seen: dict[tuple[Any, Any], set[str]] = {}
    for run in spec.join(site_sets, on=RUN_KEY, how="left").to_dicts():
        key = (run[C.MODEL], run[C.SPEC_ALGORITHM])
        now = set(run["_s"] or [])
        before = seen.get(key, set())
        gone = sorted(before - now)
        if now and gone:
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "debug-sites-missing",
                    run[C.SOURCE],
                    run[C.RUN],
                    run[C.START_TS],
                    f"debug sites printed by an earlier run are missing: {', '.join(gone)}",
                    [run[C.START_LINE]],
                )
            )
        seen[key] = before | now
    return out


def layer_ids(ctx: Context) -> list[Finding]:
    """Layer ids negative, duplicated, out of range for the target, or following the other convention."""
    out = []
    printed = layer_id_lines(ctx.tables.scan(T.DEBUG))
    n = ctx.expect.num_layers
    for run in _spec_runs(ctx):
        hit = printed.filter((pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN]))
        server = tuple(hit.item(0, C.LAYER_IDS)) if hit.height else None
        trained = ctx.expect.aux_layer_ids
        if server is not None and trained is not None and server != tuple(trained):
            # What the server printed is what it does; the draft config says what the draft was trained on.
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "layer-ids-mismatch",
                    run[C.SOURCE],
                    run[C.RUN],
                    run[C.START_TS],
                    f"the server captures layers {_fmt_ids(server)}; the draft was trained on {_fmt_ids(trained)}",
                    [hit.item(0, C.LINE_NO)],
                )
            )
        ids = trained or server
        if not ids:
            continue
        line = [run[C.START_LINE]]
        problems = []
        if any(i < -1 for i in ids):
            problems.append(f"negative ids {_fmt_ids(i for i in ids if i < -1)}")
        if len(set(ids)) != len(ids):
            problems.append("duplicated ids")
        indices = capture_indices(tuple(ids), n, ctx.expect.architecture)
        if n is not None and any(i > n for i in indices):
            problems.append(f"ids past the target's {n} layers")
        if problems:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "layer-ids-invalid",
                    run[C.SOURCE],
                    run[C.RUN],
                    run[C.START_TS],
                    f"aux layer ids {_fmt_ids(ids)}: {'; '.join(problems)}",
                    line,
                )
            )
        if n is not None and tuple(ids) == default_layer_ids(n):
            out.append(
                # Info, not a warning: [2, N//2, N-3] is also what a draft trained on those layers' outputs
                # should list; only the user knows which convention the training used.
                ctx.finding(
                    Severity.INFO,
                    "layer-ids-convention",
                    run[C.SOURCE],
                    run[C.RUN],
                    run[C.START_TS],
                    f"aux layer ids {_fmt_ids(ids)} equal SGLang's default list; explicit ids are shifted by one, so "
                    f"the draft gets {describe_capture(tuple(ids), n, ctx.expect.architecture)}, while leaving them "
                    f"unset gives {describe_capture(None, n, ctx.expect.architecture)}: check which convention the "
                    "draft was trained with",
                    line,
                )
            )
    return out


def norms(ctx: Context) -> list[Finding]:
    """Norms that are NaN, infinite or zero; norms far outside the run's own distribution."""
    out = []
    # One run at a time, in the order runs first appear among the debug lines with a norm.
    has_norm = pl.col(C.NORM).is_not_null()
    keys = collect(ctx.tables.scan(T.DEBUG).filter(has_norm).select(RUN_KEY).unique(maintain_order=True))
    columns = [*RUN_KEY, C.LINE_NO, C.TS, C.SITE, C.EVENT, C.LAYER_ID, C.NORM]
    for (source, run), rows in ctx.tables.per_run(T.DEBUG, keys.iter_rows(), columns, has_norm):
        bad = rows.filter(~pl.col(C.NORM).is_finite() | (pl.col(C.NORM) == 0))
        if bad.height:
            values = ", ".join(sorted({str(v) for v in bad.get_column(C.NORM).to_list()}))
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "norm-invalid",
                    source,
                    run,
                    bad.item(0, C.TS),
                    f"{bad.height} debug line(s) report norm {values}",
                    bad.get_column(C.LINE_NO).to_list(),
                )
            )
        good = rows.filter(pl.col(C.NORM).is_finite() & (pl.col(C.NORM) != 0))
        group = [C.SITE, C.EVENT, C.LAYER_ID]
        median = pl.col(C.NORM).median().over(group)
        mad = (pl.col(C.NORM) - median).abs().median().over(group)
        scored = good.with_columns(
            ((pl.col(C.NORM) - median).abs() / (1.4826 * mad + 1e-9 * median.abs() + 1e-12)).alias("_z"),
            pl.len().over(group).alias("_n"),
        )
        outliers = scored.filter((pl.col("_n") >= 20) & (pl.col("_z") > NORM_OUTLIER_Z))
        if outliers.height:
            first = outliers.row(0, named=True)
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "norm-outlier",
                    source,
                    run,
                    first[C.TS],
                    f"{outliers.height} norm(s) far from the run's usual value at {first[C.SITE]}/{first[C.EVENT]} "
                    f"(e.g. {first[C.NORM]:.4g})",
                    outliers.get_column(C.LINE_NO).to_list(),
                )
            )
    return out


def truncated(ctx: Context) -> list[Finding]:
    out = []
    cut = collect(ctx.tables.scan(T.DEBUG).filter(pl.col(C.TRUNCATED)).select(*RUN_KEY, C.TS, C.LINE_NO))
    for (source, run), rows in cut.group_by(RUN_KEY, maintain_order=True):
        out.append(
            ctx.finding(
                Severity.WARNING,
                "debug-truncated",
                source,
                run,
                rows.item(0, C.TS),
                f"{rows.height} debug line(s) cut off mid-way (a crash or a full buffer?)",
                rows.get_column(C.LINE_NO).to_list(),
            )
        )
    return out


def acceptance(ctx: Context) -> list[Finding]:
    """Acceptance stuck near 1 (the draft is useless), low, or far below the same draft's earlier runs."""
    out = []
    best: dict[str, float] = {}
    for run in (
        ctx.runs.filter(pl.col(C.SPEC_ALGORITHM).is_not_null()).sort(C.START_TS, nulls_last=True).to_dicts()
    ):
        mean = run[A.MEAN_ACCEPT_LEN]
        if mean is None or math.isnan(mean):
            continue
        rate = run[A.MEAN_ACCEPTANCE_RATE]
        series = ctx.series.filter((pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN]))
        lines = series.get_column(C.LINE_NO).to_list()[:3]
        ts = series.item(0, C.TS) if series.height else None
        if mean < USELESS_ACCEPT_LEN:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "acceptance-useless",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"mean accept len {mean:.2f}: the target rejects almost every drafted token",
                    lines,
                )
            )
        elif rate is not None and rate < LOW_ACCEPTANCE_RATE:
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "acceptance-low",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"low acceptance: {rate:.0%} of drafted tokens accepted (mean accept len {mean:.2f} "
                    f"with {run[C.SPEC_NUM_STEPS]} steps)",
                    lines,
                )
            )
        draft = run[C.SPEC_DRAFT_MODEL] or ""
        if draft in best and mean < REGRESSION_FACTOR * best[draft]:
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "acceptance-regressed",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"mean accept len {mean:.2f} is far below {best[draft]:.2f} reached by an earlier run "
                    f"of the same draft",
                    lines,
                )
            )
        best[draft] = max(best.get(draft, 0.0), mean)
    return out


def slower_than_baseline(ctx: Context) -> list[Finding]:
    out = []
    for row in ctx.speedups.filter(pl.col(A.SPEEDUP_HIGH) < 1).to_dicts():
        out.append(
            ctx.finding(
                Severity.WARNING,
                "slower-than-baseline",
                row[C.SOURCE],
                row[C.RUN],
                None,
                f"speculative decoding is slower than {row[A.BASELINE]}: {row[A.SPEEDUP]:.2f}x "
                f"(95% interval {row[A.SPEEDUP_LOW]:.2f}-{row[A.SPEEDUP_HIGH]:.2f}) at matched batch sizes",
            )
        )
    return out


def change_points(ctx: Context) -> list[Finding]:
    out = []
    for row in ctx.changes.to_dicts():
        load = row.get(A.LOAD_CHANGE)
        # A step that follows a change in load is the traffic changing: info, not a warning.
        why = f" while {load}: a change in load, not a fault" if load else ""
        out.append(
            ctx.finding(
                Severity.INFO if load else Severity.WARNING,
                f"{row[A.METRIC].replace('_', '-')}-step",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"{row[A.METRIC]} stepped from {row[A.BEFORE]:.3g} to {row[A.AFTER]:.3g}{why}",
                [row[C.LINE_NO]],
            )
        )
    return out


def startup(ctx: Context) -> list[Finding]:
    """Stalls while loading, and starts much slower than the same model's earlier ones."""
    out = []
    crashes = ctx.incidents.filter(pl.col(C.FAULT_KIND).is_in(list(CRASH_KINDS)))
    for row in ctx.stalls.to_dicts():
        key = (pl.col(C.SOURCE) == row[C.SOURCE]) & (pl.col(C.RUN) == row[C.RUN])
        if crashes.filter(key & (pl.col(A.FIRST_TS) <= row[C.TS])).height:
            continue  # silence after a crash is the server being down, said by the crash finding
        # A run with no ready line counts as starting; once it has decoded, the silence is mid-serving.
        served = ctx.series.filter(
            (pl.col(C.SOURCE) == row[C.SOURCE]) & (pl.col(C.RUN) == row[C.RUN]) & (pl.col(C.TS) <= row[C.TS])
        ).height
        when = "after it had started decoding" if served else "while the server was starting"
        out.append(
            ctx.finding(
                Severity.WARNING,
                "startup-stall",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"no log line for {row[A.DURATION_S]:.0f} s {when}",
                [row[C.LINE_NO]],
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
        # Processes torn down by a graceful shutdown (or SIGTERM) often print errors on the way out.
        if (stop is not None and row[C.FIRST_LINE] > stop) or "SIGTERM" in str(row[C.MESSAGE]).upper():
            severity = Severity.INFO
            message = f"after a graceful shutdown: {message}"
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
    shutdowns = lifecycle.filter(pl.col(C.EVENT) == "shutdown").select(RUN_KEY).unique()
    crashed = ctx.incidents.filter(pl.col(C.FAULT_KIND).is_in(list(CRASH_KINDS))).select(RUN_KEY).unique()
    runs = ctx.runs.sort(C.SOURCE, C.RUN)
    for run, nxt in zip(runs.to_dicts(), runs.to_dicts()[1:], strict=False):
        if run[C.SOURCE] != nxt[C.SOURCE] or run[C.RUN] == 0:
            continue
        key = (pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN])
        if not shutdowns.filter(key).height and not crashed.filter(key).height:
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


def spec_curves(ctx: Context) -> list[Finding]:
    """vLLM per-position acceptance that falls off a cliff."""
    out = []
    metrics = ctx.tables[T.SPEC_METRICS]
    for (source, run), curve in ctx.curves.group_by(RUN_KEY, maintain_order=True):
        rates = curve.sort(A.POSITION).get_column(A.RATE).to_list()
        for i in range(len(rates) - 1):
            if rates[i] > 0.2 and rates[i + 1] < 0.5 * rates[i]:
                first = metrics.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)).row(
                    0, named=True
                )
                out.append(
                    ctx.finding(
                        Severity.WARNING,
                        "spec-position-cliff",
                        source,
                        run,
                        first[C.TS],
                        f"per-position acceptance falls from {rates[i]:.2f} at position {i} to {rates[i + 1]:.2f} at "
                        f"position {i + 1}: drafting past position {i} is mostly wasted",
                        [first[C.LINE_NO]],
                    )
                )
                break
    return out


DETECTORS: tuple[Callable[[Context], list[Finding]], ...] = (
    aux_counts,
    fc_width,
    shapes,
    embed_capture,
    missing_sites,
    layer_ids,
    norms,
    truncated,
    acceptance,
    slower_than_baseline,
    change_points,
    startup,
    faults,
    spec_curves,
)
