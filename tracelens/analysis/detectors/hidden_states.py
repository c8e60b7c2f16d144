"""Detectors of the hidden states the draft reads: aux counts, shapes, the fc layer's width, norms."""

from __future__ import annotations

import re
from typing import cast

import polars as pl

from tracelens.analysis.detectors.context import Context, _fmt_ids, _spec_runs
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import A, C, T, W

NORM_OUTLIER_Z = 8.0


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
        widths = debug.with_columns(pl.col(C.SHAPES).list.eval(pl.element().list.last()).alias(W.WIDTH))
        lists = widths.filter(pl.col(C.SHAPES).list.len() > 1)
        hidden = ctx.expect.hidden_size
        if hidden is None and lists.height:
            hidden = lists.get_column(W.WIDTH).explode().mode().sort().item(0)
        # Sites are compared on their usual widths (the mode of the last dims): the batch dim changes
        # from one step to the next, so comparing each site's last shapes reads an analysis that saw
        # half of one decode step (live, between two sites' lines) as the sites disagreeing.
        per_site = lists.group_by(C.SITE, C.EVENT).agg(
            pl.col(C.SHAPES).last(),
            pl.col(C.LINE_NO).last(),
            pl.col(C.TS).last(),
            pl.col(W.WIDTH).mode().sort().first(),
        )
        if per_site.get_column(W.WIDTH).n_unique() > 1:
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
        most = cast(int | None, lists.get_column(C.SHAPES).list.len().max()) if lists.height else None
        aux = ctx.expect.expect_aux or most
        singles = widths.filter(pl.col(C.SHAPES).list.len() == 1).with_columns(
            pl.col(W.WIDTH).list.first().alias(W.WIDTH)
        )
        wide = singles.filter(pl.col(W.WIDTH) > hidden)
        if aux is not None:
            bad = wide.filter(pl.col(W.WIDTH) != aux * hidden)
            if bad.height:
                width = bad.item(0, W.WIDTH)
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
            narrow = singles.filter((pl.col(W.WIDTH) < hidden) | (pl.col(W.WIDTH) % hidden != 0))
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


def norms(ctx: Context) -> list[Finding]:
    """Norms that are NaN, infinite or zero; norms far outside the run's own distribution."""
    out = []
    # One run at a time, in the order runs first appear among the debug lines with a norm.
    keys = norm_runs(ctx)
    for (source, run), rows in ctx.tables.per_run(T.DEBUG, keys, NORM_COLUMNS, HAS_NORM):
        out.extend(norms_of(ctx, source, run, rows))
    return out


HAS_NORM = pl.col(C.NORM).is_not_null()
NORM_COLUMNS = (*RUN_KEY, C.LINE_NO, C.TS, C.SITE, C.EVENT, C.LAYER_ID, C.NORM)


def norm_runs(ctx: Context) -> list[tuple[str, int]]:
    """The runs with a norm, in the order they first appear among the debug lines that have one."""
    keys = collect(ctx.tables.scan(T.DEBUG).filter(HAS_NORM).select(RUN_KEY).unique(maintain_order=True))
    return [(source, run) for source, run in keys.iter_rows()]


def norms_of(ctx: Context, source: str, run: int, rows: pl.DataFrame) -> list[Finding]:
    """`norms` of one run: ``rows`` are its debug lines with a norm, `NORM_COLUMNS`."""
    out = []
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
        ((pl.col(C.NORM) - median).abs() / (1.4826 * mad + 1e-9 * median.abs() + 1e-12)).alias(W.NORM_Z),
        pl.len().over(group).alias(W.N),
    )
    outliers = scored.filter((pl.col(W.N) >= 20) & (pl.col(W.NORM_Z) > NORM_OUTLIER_Z))
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
