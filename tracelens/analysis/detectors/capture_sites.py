"""Detectors of what the debug lines capture: the embedding, the sites, the layer ids, truncation."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracelens.analysis.capture import is_embed, layer_id_lines
from tracelens.analysis.debug_digest import first_lines
from tracelens.analysis.detectors.context import Context, _fmt_ids, _spec_runs
from tracelens.analysis.expectations import capture_indices, default_layer_ids, describe_capture
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import C, T, W


def embed_capture(ctx: Context) -> list[Finding]:
    """An embedding capture present when the draft was not trained with one, or absent when expected."""
    out = []
    for run in _spec_runs(ctx):
        digest = ctx.digest_of(run[C.SOURCE], run[C.RUN])
        debug = digest.groups
        if not debug.height:
            continue
        embeds = debug.filter(is_embed())
        expected = ctx.expect.embed_capture
        if embeds.height and expected is not True:
            norm = digest.embed_norm
            norm_text = f", norm about {norm:.4g}" if norm is not None else ""
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
                    embeds.item(0, W.FIRST_SEEN_TS),
                    f"the target captures the token embedding (layer_id -1) for the draft in "
                    f"{embeds.get_column(W.N).sum()} line(s){norm_text}: {why}",
                    first_lines(embeds),
                )
            )
        elif not embeds.height and expected is True:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "embed-capture-missing",
                    run[C.SOURCE],
                    run[C.RUN],
                    debug.item(0, W.FIRST_SEEN_TS),
                    "the draft expects an embedding capture (layer_id -1) but no debug line shows one",
                    first_lines(debug)[:1],
                )
            )
    return out


def missing_sites(ctx: Context) -> list[Finding]:
    """Debug sites an earlier run of the same speculative setup printed and this run does not."""
    # Embedding-capture sites are judged by `embed_capture`: their absence after a fix is the point.
    debug = ctx.tables.scan(T.DEBUG).filter(pl.col(C.EVENT).is_not_null() & ~is_embed())
    # the distinct sites first, then their names: not a string made per debug line
    site_sets = (
        collect(debug.select(*RUN_KEY, C.TAG, C.SITE, C.EVENT).unique())
        .group_by(RUN_KEY)
        .agg(pl.concat_str(C.TAG, C.SITE, C.EVENT, separator="/").unique().alias(W.SITES))
    )
    return missing_sites_of(ctx, {(s, r): set(sites) for s, r, sites in site_sets.iter_rows()})


def site_names(debug: pl.DataFrame) -> set[str]:
    """The `tag/site/event` names of one run's debug lines (or its digest) that `missing_sites` compares."""
    named = debug.filter(pl.col(C.EVENT).is_not_null() & ~is_embed()).select(C.TAG, C.SITE, C.EVENT).unique()
    return set(named.select(pl.concat_str(C.TAG, C.SITE, C.EVENT, separator="/")).to_series().to_list())


def missing_sites_of(ctx: Context, site_sets: dict[tuple[str, int], set[str]]) -> list[Finding]:
    """`missing_sites` with each run's site names (`site_names`) given."""
    out = []
    spec = ctx.runs.filter(pl.col(C.SPEC_ALGORITHM).is_not_null()).sort(C.START_TS, nulls_last=True)
    seen: dict[tuple[Any, Any], set[str]] = {}
    for run in spec.to_dicts():
        key = (run[C.MODEL], run[C.SPEC_ALGORITHM])
        now = site_sets.get((run[C.SOURCE], run[C.RUN]), set())
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
