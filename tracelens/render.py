"""Terminal views of results (rich). Views only: they format what they are given and compute nothing.
Log text is printed with markup off, so a log line can never inject rich markup or styles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracelens.analysis import Analysis
from tracelens.parsers.explain import Explanation
from tracelens.schema import TABLES, A, C, T
from tracelens.tables import Tables


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _spec_text(spec: dict[str, Any] | None) -> str:
    if not spec:
        return "none"
    parts = [str(spec["algorithm"])]
    for key, label in (("num_steps", "steps"), ("eagle_topk", "topk"), ("num_draft_tokens", "draft")):
        if spec.get(key) is not None:
            parts.append(f"{label}={spec[key]}")
    return " ".join(parts)


def render_summary(console: Console, summary: dict[str, Any]) -> None:
    """The `summary` table: one row per run."""
    table = Table(title="tracelens summary", title_justify="left", show_lines=False)
    for header, justify in (
        ("source", "left"),
        ("run", "right"),
        ("model", "left"),
        ("speculative", "left"),
        ("start", "left"),
        ("end", "left"),
        ("decode", "right"),
        ("accept len mean/med [p10-p90]", "right"),
        ("tok/s mean/med", "right"),
        ("acceptance", "right"),
        ("faults", "right"),
        ("findings", "right"),
        ("unparsed", "right"),
    ):
        # File names stay whole (users grep for them); other columns fold when the terminal is narrow.
        table.add_column(header, justify=justify, overflow="fold", no_wrap=header == "source")  # type: ignore[arg-type]
    for run in summary["runs"]:
        acc = run["accept_len"]
        tput = run["gen_throughput"]
        accept = (
            "-"
            if acc["mean"] is None
            else f"{_fmt(acc['mean'])}/{_fmt(acc['median'])} [{_fmt(acc['p10'])}-{_fmt(acc['p90'])}]"
        )
        table.add_row(
            Text(Path(run["source"]).name),
            str(run["run"]),
            Text(run["model"] or "-"),
            Text(_spec_text(run["speculative"])),
            run["start"] or "-",
            run["end"] or "-",
            str(run["decode_lines"]),
            accept,
            "-" if tput["mean"] is None else f"{_fmt(tput['mean'], 1)}/{_fmt(tput['median'], 1)}",
            "-" if run["acceptance_rate"]["mean"] is None else f"{run['acceptance_rate']['mean']:.0%}",
            str(run["faults"]),
            str(run["findings"]),
            str(run["unparsed"]),
        )
    console.print(table)


def render_written(console: Console, tables: Tables, written: dict[str, Path], seconds: float) -> None:
    """What `parse` wrote: rows per table and where."""
    lines = tables[T.LINES].height
    sources = tables[T.RUNS].get_column("source").n_unique() if tables[T.RUNS].height else 0
    console.print(f"parsed {lines:,} lines from {sources} source(s) in {seconds:.2f} s")
    table = Table(show_header=True, header_style="bold")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("file")
    for name in TABLES:
        table.add_row(name, f"{tables[name].height:,}", Text(str(written[name])))
    console.print(table)


def render_explanation(console: Console, ex: Explanation) -> None:
    """How one line was read."""
    console.print(Text(f"{ex.source}:{ex.line_no}", style="bold"))
    console.print(Text("  text   ") + Text(ex.text))
    if ex.clean != ex.text:
        console.print(Text("  clean  ") + Text(ex.clean))
    prefix = ", ".join(f"{k}={v}" for k, v in ex.prefix.items()) or "none"
    console.print(Text(f"  prefix {prefix}"))
    console.print(Text("  body   ") + Text(ex.body))
    record = "" if ex.record in (None, ex.line_no) else f" (continues the record at line {ex.record})"
    console.print(Text(f"  kind   {ex.kind} -> table {ex.table}{record}"))
    if ex.fields:
        console.print("  fields")
        for key, value in ex.fields.items():
            console.print(Text(f"    {key} = {value!r}"))
    if ex.near_miss is not None:
        miss = ex.near_miss
        console.print(
            Text(f"  closest kind: {miss.kind}; it matched {miss.matched} of {len(miss.text)} characters:")
        )
        console.print(Text("    ") + Text(miss.pointer()))


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_findings(console: Console, analysis: Analysis) -> None:
    """`check`: findings grouped by run, most severe first, each with its evidence lines."""
    if not analysis.findings:
        console.print(f"no findings in {analysis.runs.height} run(s)")
        return
    captured = dict(analysis.runs.select(A.LABEL, A.CAPTURED_LAYERS).drop_nulls().iter_rows())
    current = None
    for finding in analysis.findings:
        if finding.label != current:
            current = finding.label
            console.print(Text(f"\n{finding.label}", style="bold"))
            layers = captured.get(finding.label)
            if layers:
                console.print(Text(f"  the draft receives {layers}", style="dim"))
        when = f" {finding.ts:%Y-%m-%d %H:%M:%S}" if finding.ts else ""
        line = Text("  ")
        line.append(f"{finding.severity.upper():7}", style=_SEVERITY_STYLE[finding.severity])
        line.append(f" {finding.code}{when}: ")
        line.append(finding.message)
        console.print(line)
        for ev in finding.evidence:
            console.print(Text(f"      {ev.where}: ", style="dim") + Text(ev.text[:300]))
    errors = len(analysis.errors)
    console.print(f"\n{len(analysis.findings)} finding(s), {errors} error(s)")


# (header, column, digits) of the client-side benchmark table, in `compare` and the report
BENCH_COLUMNS = (
    ("requests", A.BENCH_REQUESTS, 0),
    ("accept len (client)", A.BENCH_ACCEPT_LENGTH, 2),
    ("accept len (server)", A.MEAN_ACCEPT_LEN, 2),
    ("out tok/s (client)", A.BENCH_OUTPUT_THROUGHPUT, 1),
    ("tok/s (server)", A.MEAN_GEN_THROUGHPUT, 1),
    ("req/s", A.BENCH_REQUEST_THROUGHPUT, 2),
    ("TTFT ms", A.BENCH_MEAN_TTFT_MS, 1),
    ("TPOT ms", A.BENCH_MEAN_TPOT_MS, 2),
    ("ITL ms", A.BENCH_MEAN_ITL_MS, 2),
    ("E2E ms", A.BENCH_MEAN_E2E_MS, 1),
)


def render_benchmarks(console: Console, analysis: Analysis) -> None:
    """The sglang.bench_serving results found in the logs, beside their run's server-side figures."""
    from tracelens.analysis.benchmarks import benchmarks_beside_runs

    bench = benchmarks_beside_runs(analysis.runs, analysis.tables)
    if not bench.height:
        return
    table = Table(
        title="client-side benchmarks (sglang.bench_serving), beside the run's decode lines",
        title_justify="left",
    )
    table.add_column("run", no_wrap=True)
    table.add_column("line")
    for header, _, _ in BENCH_COLUMNS:
        table.add_column(header, justify="right")
    for row in bench.iter_rows(named=True):
        label = row[A.LABEL] or f"{Path(row[C.SOURCE]).name}#{row[C.RUN]}"
        cells = [_fmt(row[column], digits) for _, column, digits in BENCH_COLUMNS]
        table.add_row(Text(label), str(row[A.BENCH_LINE]), *cells)
    console.print(table)


def render_comparison(console: Console, analysis: Analysis) -> None:
    """`compare`: one row per run, then the server-args differences from each baseline."""
    table = Table(title="runs compared", title_justify="left")
    for header in (
        "run",
        "speculative",
        "accept len",
        "acceptance",
        "tok/s",
        "baseline",
        "speedup [95%]",
        "ready in",
    ):
        table.add_column(header, no_wrap=header == "run")
    for run in analysis.runs.to_dicts():
        spec = run[C.SPEC_ALGORITHM]
        if spec and run[C.SPEC_NUM_STEPS] is not None:
            spec = f"{spec} steps={run[C.SPEC_NUM_STEPS]} topk={run[C.SPEC_EAGLE_TOPK]} draft={run[C.SPEC_NUM_DRAFT_TOKENS]}"
        speedup = "-"
        if run[A.SPEEDUP] is not None:
            speedup = f"{run[A.SPEEDUP]:.2f}x [{run[A.SPEEDUP_LOW]:.2f}-{run[A.SPEEDUP_HIGH]:.2f}]"
        rate = run[A.MEAN_ACCEPTANCE_RATE]
        ready = run[A.TIME_TO_READY_S]
        table.add_row(
            Text(run[A.LABEL]),
            Text(spec or "none"),
            _fmt(run[A.MEAN_ACCEPT_LEN]),
            "-" if rate is None else f"{rate:.0%}",
            _fmt(run[A.MEAN_GEN_THROUGHPUT], 1),
            Text(run[A.BASELINE] or "-"),
            speedup,
            "-" if ready is None else f"{ready:.0f} s",
        )
    console.print(table)
    render_benchmarks(console, analysis)
    for (run_a, run_b), diff in analysis.config_diff.group_by([A.RUN_A, A.RUN_B], maintain_order=True):
        sub = Table(title=f"{run_a} vs {run_b}: server args that differ", title_justify="left")
        sub.add_column("key")
        sub.add_column(run_a, overflow="fold")
        sub.add_column(run_b, overflow="fold")
        for key, a, b in diff.select(C.KEY, A.VALUE_A, A.VALUE_B).iter_rows():
            sub.add_row(Text(key), Text(str(a)), Text(str(b)))
        console.print(sub)


def render_frame(console: Console, frame: pl.DataFrame, limit: int = 200) -> None:
    """Any frame as a table (the first ``limit`` rows)."""
    table = Table(show_header=True, header_style="bold")
    for name in frame.columns:
        table.add_column(name, overflow="fold")
    for row in frame.head(limit).iter_rows():
        table.add_row(*(Text("" if v is None else str(v)) for v in row))
    console.print(table)
    if frame.height > limit:
        console.print(f"({frame.height - limit} more rows; use --csv for all)")
