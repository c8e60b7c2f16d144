"""`check`'s acceptance table: per run with figures from request logs, endpoint snapshots or vLLM's
counters, the normalised rate and the acceptance length from each place, saying whose figure each is
(analysis/acceptance_table.py; the interval lines' figures are in `summary` and `compare`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from tracelens.analysis import Analysis
from tracelens.analysis.acceptance_table import acceptance_table
from tracelens.analysis.positions import BASIS_LINES
from tracelens.formatting import number, percent


def _rows(entry: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(whose figure, accept len, normalised rate, per position) of each place a run has one."""
    out = []
    interval = entry["interval"]
    if interval is not None:
        out.append((interval["from"], number(interval["accept_len"]), percent(interval["rate"]), ""))
    requests = entry["requests"]
    if requests is not None:
        pooled, mean = requests["pooled"], requests["per_request_mean"]
        out.append((f"{requests['from']}, pooled", number(pooled["accept_len"]), percent(pooled["rate"]), ""))
        out.append(
            (f"{requests['from']}, mean of requests", number(mean["accept_len"]), percent(mean["rate"]), "")
        )
    gauges = entry["gauges"]
    if gauges is not None:
        out.append((gauges["from"], number(gauges["accept_len"]), percent(gauges["rate"]), ""))
    positions = entry["positions"]
    if positions["rates"]:
        whose = f"{entry['engine']} {positions['basis'].replace('_', ' ')}, per position"
        out.append((whose, "", "", " ".join(percent(r) for r in positions["rates"])))
    # the depth timeline in brief: each depth in force, when, and the rate against it
    for span in entry["depth_spans"]:
        launched = span["launch_depth"]
        note = f", launched at {launched}" if launched is not None and launched != span["depth"] else ""
        count = span["snapshots"]
        whose = f"sglang /server_info, depth {span['depth']} in force{note}: {_when(span)}"
        whose += f" ({count} snapshot{'s' if count != 1 else ''})"
        out.append((whose, number(span["accept_len"]), percent(span["rate"]), ""))
    return out


def _when(span: dict[str, Any]) -> str:
    """A stretch's first and last snapshot: their times (the date once), else their lines."""
    first, last = span["from"], span["to"]
    if first is None or last is None:
        a, b = span["lines"]
        return f"line {a}" if a == b else f"lines {a}-{b}"
    if first == last:
        return first
    return f"{first} to {last[11:] if last[:10] == first[:10] else last}"


def render_acceptance(console: Console, analysis: Analysis) -> None:
    """The table, when a run has figures beyond its decode or metrics lines (nothing printed otherwise)."""
    entries = [
        e
        for e in acceptance_table(analysis)
        if e["requests"] or e["gauges"] or e["depth"] or (e["positions"]["basis"] not in (None, BASIS_LINES))
    ]
    if not entries:
        return
    table = Table(
        title="acceptance (rate: accepted / drafted draft tokens, docs/acceptance.md)", title_justify="left"
    )
    for column in ("run", "from", "accept len", "rate", "per position (0 = first draft)"):
        table.add_column(column, justify="right" if column in ("accept len", "rate") else "left")
    for entry in entries:
        for i, row in enumerate(_rows(entry)):
            table.add_row(entry["label"] if i == 0 else "", *row)
    console.print(table)
