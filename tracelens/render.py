"""Terminal views of results (rich). Views only: they format what they are given and compute nothing.
Log text is printed with markup off, so a log line can never inject rich markup or styles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracelens.parsers.explain import Explanation
from tracelens.schema import TABLES, T
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
        ("faults", "right"),
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
            str(run["faults"]),
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
