"""Detectors of the hidden states the draft reads: aux counts, shapes, the fc layer's width, norms."""

from __future__ import annotations

import re
from typing import cast

import polars as pl

from tracelens.analysis.debug_digest import RunDebug, first_lines
from tracelens.analysis.detectors.context import Context, _fmt_ids, _spec_runs
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import A, C, T, W


def aux_counts(ctx: Context) -> list[Finding]:
    """num_aux / num_items differ from the expectation, or change within a run."""
    out = []
    for run in _spec_runs(ctx):
        debug = ctx.digest_of(run[C.SOURCE], run[C.RUN]).groups
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
                        bad.item(0, W.FIRST_SEEN_TS),
                        f"{bad.get_column(W.N).sum()} debug line(s) report {column}={_fmt_ids(values)} {what}; "
                        f"the draft expects {expected}",
                        first_lines(bad),
                    )
                )
            elif len(values) > 1:
                firsts = (
                    rows.group_by(column)
                    .agg(pl.col(W.FIRST_SEEN).min(), pl.col(W.TS_MIN).min())
                    .sort(W.FIRST_SEEN)
                )
                out.append(
                    ctx.finding(
                        Severity.WARNING,
                        f"{column.replace('_', '-')}-changed",
                        run[C.SOURCE],
                        run[C.RUN],
                        firsts.item(1, W.TS_MIN),
                        f"{column} changes within the run: {_fmt_ids(values)}",
                        firsts.get_column(W.FIRST_SEEN).to_list(),
                    )
                )
    return out


def _widths(debug: pl.DataFrame) -> pl.DataFrame:
    """The digest rows that print shapes, with each shape's last dimension (`W.WIDTH`)."""
    shaped = debug.filter(pl.col(C.SHAPES).list.len() > 0)
    return shaped.with_columns(pl.col(C.SHAPES).list.eval(pl.element().list.last()).alias(W.WIDTH))


def _usual_width(lists: pl.DataFrame) -> int | None:
    """The most frequent width of the rows that print several shapes (the smallest of equals): the
    hidden size when no config gives it."""
    if not lists.height:
        return None
    counted = lists.select(W.WIDTH, W.N).explode(W.WIDTH).group_by(W.WIDTH).agg(pl.col(W.N).sum())
    return int(counted.sort([W.N, W.WIDTH], descending=[True, False]).item(0, W.WIDTH))


def shapes(ctx: Context) -> list[Finding]:
    """Shapes inconsistent between sites; a concatenated width that is not aux count x hidden size."""
    out = []
    for run in _spec_runs(ctx):
        widths = _widths(ctx.digest_of(run[C.SOURCE], run[C.RUN]).groups)
        if not widths.height:
            continue
        lists = widths.filter(pl.col(C.SHAPES).list.len() > 1)
        hidden = ctx.expect.hidden_size or _usual_width(lists)
        # Sites are compared on their usual widths (the mode of the last dims): the batch dim changes
        # from one step to the next, so comparing each site's last shapes reads an analysis that saw
        # half of one decode step (live, between two sites' lines) as the sites disagreeing.
        usual = (
            lists.group_by(C.SITE, C.EVENT, W.WIDTH, maintain_order=True)
            .agg(pl.col(W.N).sum())
            .sort(W.N, W.WIDTH, descending=[True, False], maintain_order=True)
            .group_by(C.SITE, C.EVENT)
            .agg(pl.col(W.WIDTH).first())
        )
        per_site = (
            lists.sort(W.LAST_SEEN)
            .group_by(C.SITE, C.EVENT, maintain_order=True)
            .agg(pl.col(C.SHAPES).last(), pl.col(W.LAST_SEEN).last(), pl.col(W.LAST_SEEN_TS).last())
            .join(usual, on=[C.SITE, C.EVENT], how="left", nulls_equal=True)
            .sort(W.LAST_SEEN)
        )
        if per_site.get_column(W.WIDTH).n_unique() > 1:
            described = "; ".join(f"{s}/{e}: {sh}" for s, e, sh, _, _, _ in per_site.iter_rows())
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "shapes-inconsistent",
                    run[C.SOURCE],
                    run[C.RUN],
                    per_site.item(0, W.LAST_SEEN_TS),
                    f"debug sites disagree on the captured shapes ({described})",
                    per_site.get_column(W.LAST_SEEN).to_list(),
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
                        bad.item(0, W.FIRST_SEEN_TS),
                        f"a concatenated hidden state is {width} wide ({width / hidden:g} x {hidden}); "
                        f"{aux} aux states x hidden size {hidden} = {aux * hidden}",
                        first_lines(bad),
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
                        narrow.item(0, W.FIRST_SEEN_TS),
                        f"captured width {narrow.item(0, W.WIDTH)} does not fit the target's hidden size {hidden}",
                        first_lines(narrow),
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
        digest = ctx.digest_of(row[C.SOURCE], row[C.RUN]).groups
        lists = _widths(digest).filter(pl.col(C.SHAPES).list.len() > 1)
        hidden = ctx.expect.hidden_size or _usual_width(lists)
        if not hidden or given == takes or given % hidden or takes % hidden:
            continue
        counts = set(lists.get_column(C.SHAPES).list.len().to_list())
        counts |= set(digest.get_column(C.NUM_AUX).drop_nulls().to_list())
        if given // hidden not in counts:
            continue  # the multiplied width is not the captured one: another layer's shape error
        lines = [row[C.FIRST_LINE], *first_lines(lists)[:1]]
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
    for source, run in norm_runs(ctx):
        out.extend(norms_of(ctx, source, run, ctx.digest_of(source, run)))
    return out


def norm_runs(ctx: Context) -> list[tuple[str, int]]:
    """The runs with a norm, in the order they first appear among the debug lines that have one."""
    has_norm = pl.col(C.NORM).is_not_null()
    keys = collect(ctx.tables.scan(T.DEBUG).filter(has_norm).select(RUN_KEY).unique(maintain_order=True))
    return [(source, run) for source, run in keys.iter_rows()]


def norms_of(ctx: Context, source: str, run: int, debug: RunDebug) -> list[Finding]:
    """`norms` of one run."""
    out = []
    bad = debug.groups.filter(pl.col(W.BAD_NORM).is_not_null())
    if bad.height:
        values = ", ".join(sorted({str(v) for v in bad.get_column(W.BAD_NORM).to_list()}))
        out.append(
            ctx.finding(
                Severity.ERROR,
                "norm-invalid",
                source,
                run,
                bad.item(0, W.FIRST_SEEN_TS),
                f"{bad.get_column(W.N).sum()} debug line(s) report norm {values}",
                first_lines(bad),
            )
        )
    far = debug.outliers
    if far is not None:
        out.append(
            ctx.finding(
                Severity.WARNING,
                "norm-outlier",
                source,
                run,
                far.ts,
                f"{far.count} norm(s) far from the run's usual value at {far.site}/{far.event} "
                f"(e.g. {far.norm:.4g})",
                far.lines,
            )
        )
    return out
