"""Terminal views of results (rich). Views only: they format what they are given and compute nothing.
Log text is printed with markup off, so a log line can never inject rich markup or styles, and through
`formatting.terminal_text`, so it can never send the terminal an escape sequence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracelens.analysis import Analysis, Status
from tracelens.analysis.verdicts import status_rank
from tracelens.formatting import (
    BENCH_COLUMNS,
    SEVERITY_STYLE,
    STATUS_STYLE,
    duration,
    number,
    severity_tag,
    speculative,
    speculative_of_run,
    speedup,
    status_tag,
    terminal_text,
    timestamp,
    whose_rate,
)
from tracelens.parsers.explain import Explanation
from tracelens.sources.naming import run_label
from tracelens.tables.schema import A, C

WIDE = 150  # below this many columns, `summary` shows its compact table


def render_summary_compact(console: Console, summary: dict[str, Any]) -> None:
    """`summary` in 80 columns: one line per run with its verdict and the steady-state figures; times,
    line counts and spreads are in the wide table and in `--json`."""
    table = Table(title="tracelens summary", title_justify="left", box=None, padding=(0, 1), pad_edge=False)
    table.add_column("run / model, speculative", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("acc len", justify="right", no_wrap=True)
    table.add_column("acc %", justify="right", no_wrap=True)
    table.add_column("tok/s", justify="right", no_wrap=True)
    table.add_column("faults", justify="right", no_wrap=True)
    for run in summary["runs"]:
        status = run.get("status")
        rate = run["acceptance_rate"]["mean"]
        model = Path(run["model"]).name if run["model"] else "-"
        name = Text.assemble((terminal_text(run["label"]), "bold"), "\n  ")
        name.append(terminal_text(f"{model}, {speculative(run['speculative'], short=True)}"), style="dim")
        table.add_row(
            name,
            Text(status or "-", style=STATUS_STYLE.get(status or "", "")),
            number(run["accept_len"]["mean"]),
            whose_rate(rate, run["acceptance_rate_engine"], run["acceptance_from"]),
            number(run["gen_throughput"]["mean"], 1),
            str(run["faults"]),
        )
    console.print(table)


def render_summary(console: Console, summary: dict[str, Any]) -> None:
    """The `summary` table: one row per run (compact below `WIDE` columns)."""
    if console.width < WIDE:
        render_summary_compact(console, summary)
        return
    table = Table(title="tracelens summary", title_justify="left", show_lines=False)
    for header, justify in (
        ("run", "left"),
        ("status", "left"),
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
        # Run labels stay whole (users grep for them); other columns fold when the terminal is narrow.
        table.add_column(header, justify=justify, overflow="fold", no_wrap=header == "run")  # type: ignore[arg-type]
    for run in summary["runs"]:
        acc = run["accept_len"]
        tput = run["gen_throughput"]
        accept = (
            "-"
            if acc["mean"] is None
            else f"{number(acc['mean'])}/{number(acc['median'])} [{number(acc['p10'])}-{number(acc['p90'])}]"
        )
        table.add_row(
            Text(terminal_text(run["label"])),
            Text(run.get("status") or "-", style=STATUS_STYLE.get(run.get("status") or "", "")),
            Text(terminal_text(run["model"] or "-")),
            Text(terminal_text(speculative(run["speculative"]))),
            run["start"] or "-",
            run["end"] or "-",
            str(run["decode_lines"]),
            accept,
            "-" if tput["mean"] is None else f"{number(tput['mean'], 1)}/{number(tput['median'], 1)}",
            whose_rate(run["acceptance_rate"]["mean"], run["acceptance_rate_engine"], run["acceptance_from"]),
            str(run["faults"]),
            str(run["findings"]),
            str(run["unparsed"]),
        )
    console.print(table)


# rich wraps a text by putting newlines into it and then splitting the rest at each one, a copy of the
# rest per screen line: quadratic (a 4 MiB line took 16 s, 1 MiB 1.4). A longer text is left to the
# terminal to wrap.
_RICH_WRAPS_UP_TO = 16_384


def _labelled(console: Console, label: str, value: str) -> None:
    _print_long(console, Text(label) + Text(terminal_text(value)))


def _print_long(console: Console, text: Text) -> None:
    console.print(text, soft_wrap=len(text) > _RICH_WRAPS_UP_TO)


def render_explanation(console: Console, ex: Explanation) -> None:
    """How one line was read."""
    console.print(Text(terminal_text(f"{ex.source}:{ex.line_no}"), style="bold"))
    if ex.run is not None:  # the path as typed names the run as `check` did for this path
        console.print(Text(terminal_text(f"  run    {run_label(ex.source, ex.run)}")))
    _labelled(console, "  text   ", ex.text)
    if ex.clean != ex.text:
        _labelled(console, "  clean  ", ex.clean)
    prefix = ", ".join(f"{k}={v}" for k, v in ex.prefix.items()) or "none"
    console.print(Text(terminal_text(f"  prefix {prefix}")))
    _labelled(console, "  body   ", ex.body)
    record = "" if ex.record in (None, ex.line_no) else f" (continues the record at line {ex.record})"
    console.print(Text(f"  kind   {ex.kind} -> table {ex.table}{record}"))
    if ex.fields:
        console.print("  fields")
        for key, value in ex.fields.items():
            _print_long(console, Text(terminal_text(f"    {key} = {value!r}")))
    if ex.near_miss is not None:
        miss = ex.near_miss
        console.print(
            Text(f"  closest kind: {miss.kind}; it matched {miss.matched} of {len(miss.text)} characters:")
        )
        _print_long(console, Text("    ") + Text(terminal_text(miss.pointer())))


class _Buffered:
    """A console whose printed lines are kept until `flush`, then printed at once: rich's fixed cost per
    `print` (about 0.15 ms) made `check` of 20,000 server starts spend most of its time printing."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.lines: list[Text] = []
        self.width = console.width  # rich measures the terminal at every read of it

    def print(self, text: Text | str, soft_wrap: bool = True) -> None:
        self.lines.append(text if isinstance(text, Text) else Text(text))

    def flush(self) -> None:
        if not self.lines:
            return
        if self.console.color_system is None and not self.console.is_terminal:
            # Piped, with no styles to write: rich would print each line's text, tabs expanded; that is
            # written here directly (rich's rendering was half of check's time on 20,000 runs).
            for line in self.lines:
                line.expand_tabs()
            self.console.file.write("".join(f"{line.plain}\n" for line in self.lines))
        else:
            self.console.print(Text("\n").join(self.lines), soft_wrap=True)
        self.lines.clear()


def _hanging(console: Console | _Buffered, text: Text, indent: int) -> None:
    """Print ``text`` wrapped to the console, every line after the first indented by ``indent``: the left
    column stays clear at 80 columns."""
    width = max(console.width - indent, 20)
    if "\n" not in text.plain and text.cell_len <= width:  # fits: no wrap (check prints a line per run)
        text.rstrip()
        console.print(text, soft_wrap=True)
        return
    real = console.console if isinstance(console, _Buffered) else console
    for i, part in enumerate(text.wrap(real, width)):
        part.rstrip()
        console.print(Text(" " * indent) + part if i else part, soft_wrap=True)


def render_verdicts(console: Console | _Buffered, analysis: Analysis) -> None:
    """One verdict per run, worst first: status, run, headline."""
    for verdict in analysis.verdicts:
        line = Text()
        line.append(status_tag(verdict.status), style=STATUS_STYLE[verdict.status])
        line.append(terminal_text(verdict.label), style="bold")
        line.append(terminal_text(": " + verdict.headline))
        _hanging(console, line, len(status_tag(verdict.status)))


def render_next_steps(console: Console, analysis: Analysis, check: str) -> None:
    """What to run after the demo: ``check`` (the command that shows its runs' findings), said with what
    it shows of these runs, then the same for the user's own logs and live."""
    counts = Counter(v.status for v in analysis.verdicts if v.status != Status.HEALTHY)
    worst = ", ".join(
        f"{n} {status}" for status, n in sorted(counts.items(), key=lambda c: status_rank(c[0]))
    )
    why = f"why {worst}: " if worst else ""
    _hanging(console, Text.assemble(("next: ", "bold"), check), 6)
    _hanging(console, Text(f"      {why}each run's findings, the log lines behind them and the fix"), 6)
    _hanging(console, Text("      your logs: tracelens check LOGS...; live: tracelens tui server.log"), 6)


def render_findings(console: Console, analysis: Analysis) -> None:
    """`check`: the verdicts first, then per run (worst first) its fix and findings, the most severe and
    the causes first, each with its evidence lines."""
    buffered = _Buffered(console)
    _render_findings(buffered, analysis)
    buffered.flush()


def _render_findings(console: _Buffered, analysis: Analysis) -> None:
    render_verdicts(console, analysis)
    if not analysis.findings:
        console.print(f"no findings in {analysis.runs.height} run(s)")
        return
    captured = dict(analysis.runs.select(A.LABEL, A.CAPTURED_LAYERS).drop_nulls().iter_rows())
    verdicts = {v.label: v for v in analysis.verdicts}
    order = {v.label: i for i, v in enumerate(analysis.verdicts)}
    findings = sorted(analysis.findings, key=lambda f: order.get(f.label, len(order)))
    current = None
    for finding in findings:
        if finding.label != current:
            current = finding.label
            verdict = verdicts.get(current)
            head = Text("\n")
            head.append(terminal_text(finding.label), style="bold")
            if verdict is not None:
                head.append(f" {verdict.status}", style=STATUS_STYLE[verdict.status])
            console.print(head)
            layers = captured.get(finding.label)
            if layers:
                _hanging(console, Text(terminal_text(f"  captured for the draft: {layers}"), style="dim"), 4)
            if verdict is not None and verdict.fix:
                _hanging(console, Text.assemble("  ", ("fix:", "bold"), " ", terminal_text(verdict.fix)), 4)
        when = f" {timestamp(finding.ts)}" if finding.ts else ""
        line = Text("  ")
        line.append(severity_tag(finding.severity), style=SEVERITY_STYLE[finding.severity])
        line.append(f" {finding.code}{when}: ")
        line.append(terminal_text(finding.message))
        _hanging(console, line, 10)
        # An evidence line takes at most about two screen lines (300 characters when piped).
        cut = min(300, max(2 * console.width - 20, 80))
        for ev in finding.evidence:
            text = terminal_text(ev.text)
            shown = text if len(text) <= cut else text[: cut - 1] + "…"
            _hanging(console, Text.assemble("      ", (terminal_text(f"{ev.where}: "), "dim"), shown), 8)
    errors = len(analysis.errors)
    console.print(f"\n{len(analysis.findings)} finding(s), {errors} error(s)")


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
        label = row[A.LABEL] or analysis.label_of(row[C.SOURCE], row[C.RUN])
        cells = [number(row[column], digits) for _, column, digits in BENCH_COLUMNS]
        table.add_row(Text(terminal_text(label)), str(row[A.BENCH_LINE]), *cells)
    console.print(table)


def render_comparison(console: Console, analysis: Analysis) -> None:
    """`compare`: one row per run (its speculative setup and baseline on a second line, so the figures
    stay whole at 80 columns), then the server-args differences from each baseline."""
    baselines = analysis.runs.get_column(A.BASELINE).drop_nulls().unique()
    # One baseline for all (the usual case) goes in the title, so rows keep to two lines at 80 columns.
    title = "runs compared" + (f"; speedup over {baselines.item()}" if baselines.len() == 1 else "")
    table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False)
    table.add_column("run", overflow="fold", ratio=1)
    for header in ("acc len", "acc %", "tok/s", "speedup [95%]", "ready"):
        table.add_column(header, justify="right", no_wrap=True)
    for run in analysis.runs.to_dicts():
        spec = speculative_of_run(run, short=True) if run[A.SPECULATIVE] else "no speculation"
        if run[A.BASELINE] and baselines.len() > 1:
            spec += f" vs {run[A.BASELINE]}"
        if run[A.SPEEDUP] is None and run[A.SPEEDUP_NOTE]:  # why the `-`
            spec += f"; {run[A.SPEEDUP_NOTE]}"
        name = Text.assemble((terminal_text(run[A.LABEL]), "bold"), "\n  ", (terminal_text(spec), "dim"))
        table.add_row(
            name,
            number(run[A.MEAN_ACCEPT_LEN]),
            whose_rate(run[A.MEAN_ACCEPTANCE_RATE], run[A.RATE_ENGINE], run[A.RATE_FROM]),
            number(run[A.MEAN_GEN_THROUGHPUT], 1),
            speedup(run[A.SPEEDUP], run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]),
            duration(run[A.TIME_TO_READY_S], compact=True),
        )
    console.print(table)
    render_benchmarks(console, analysis)
    for (run_a, run_b), diff in analysis.config_diff.group_by([A.RUN_A, A.RUN_B], maintain_order=True):
        sub = Table(
            title="\n" + terminal_text(f"{run_a} vs {run_b}: server args that differ"),
            title_justify="left",
            box=None,
            padding=(0, 1),
            pad_edge=False,
        )
        sub.add_column("key", no_wrap=True)
        sub.add_column(terminal_text(run_a), overflow="fold")
        sub.add_column(terminal_text(run_b), overflow="fold")
        for key, a, b in diff.select(C.KEY, A.VALUE_A, A.VALUE_B).iter_rows():
            sub.add_row(*(Text(terminal_text(str(cell))) for cell in (key, a, b)))
        console.print(sub)


def render_frame(console: Console, frame: pl.DataFrame, limit: int = 200) -> None:
    """Any frame as a table (the first ``limit`` rows)."""
    table = Table(show_header=True, header_style="bold")
    for name in frame.columns:
        table.add_column(terminal_text(name), overflow="fold")
    for row in frame.head(limit).iter_rows():
        table.add_row(*(Text("" if v is None else terminal_text(str(v))) for v in row))
    console.print(table)
    if frame.height > limit:
        console.print(f"({frame.height - limit} more rows; use --csv for all)")
