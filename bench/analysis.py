"""Time and memory of the analysis commands on the datasets of large logs, beside the parse time.

    python bench/analysis.py [--sizes 1G,4G] [--data DIR] [--commands check,report,...] [--no-write]

``--dataset 1G=DIR --parse 1G=SECONDS,CPU`` analyses an existing dataset instead, with the parse time
measured elsewhere (no 1 GiB log is parsed again). Otherwise, for each size, builds the deterministic
EAGLE-3 session log of bench/logmix.py (the same bytes as bench/throughput.py: seed 3 for the first
size, 4 for the others) under ``--data`` unless it is there, parses it with `tracelens parse -o` (timed
once, the result kept in ``--data`` beside the dataset so a re-run does not parse again). Then it runs
`check --json`, `report`, `summary --json`, `compare` and `sql` with an aggregate query on the dataset.
Each command is measured by `throughput.run_measured`: wall time, CPU seconds of the whole process
tree (user + system) and peak memory of the tree (the sum of the processes' proportional set sizes,
sampled every 250 ms). A command whose tree passes ``--kill-above`` (default 12 GiB) is stopped, so a
baseline that does not fit cannot take the machine down: its row says so. Prints the table and writes
it into bench/RESULTS.md between the `bench-analysis` markers (`--no-write`: printed only).

Targets (issue 10): peak tree memory <= 512 MiB for every command on both sizes; check, compare, summary
and sql <= half the parse time; report <= the parse time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from logmix import generate  # noqa: E402
from throughput import _size, machine, write_results  # noqa: E402
from throughput import run_measured as measured  # noqa: E402

MEMORY_LIMIT = 512 << 20
SQL_QUERY = (
    "select source, run, count(*) as n, avg(accept_len) as accept_len, "
    "avg(gen_throughput) as tok_s from batches where phase = 'decode' group by source, run order by run"
)
# command -> (arguments after the dataset path, the share of the parse time it may take)
COMMANDS: dict[str, tuple[list[str], float]] = {
    "check": (["--json"], 0.5),
    "summary": (["--json"], 0.5),
    "compare": ([], 0.5),
    "sql": ([], 0.5),
    "report": (["-o", "{out}/report.html"], 1.0),
}


@dataclass
class Measure:
    seconds: float
    cpu: float
    peak: int
    killed: bool = False
    code: int = 0


def run_measured(cmd: list[str], kill_above: int, alone: bool = True) -> Measure:
    """`throughput.run_measured` (wall, peak tree PSS, CPU seconds of the tree), with the tree killed
    when it passes ``kill_above`` bytes."""
    seconds, peak, cpu = measured(cmd, kill_above=kill_above, alone=alone)
    return Measure(seconds, cpu, peak, killed=peak > kill_above)


def tracelens(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracelens.cli", *args]


def prepare(
    data: Path, size_text: str, seed: int, kill_above: int, one_run: bool = False
) -> tuple[Path, Measure, int]:
    """The log of ``size_text`` and its dataset, built when missing; the parse's measure (kept in
    ``parse.json`` beside the dataset). ``one_run``: the log is one server start (a server up for days)
    instead of a restart every 40,000 seconds of log time."""
    size = _size(size_text)
    kind = "one-run" if one_run else "session"
    log = data / f"eagle3-{kind}-{size_text}.log"
    if not log.exists() or log.stat().st_size < size:
        print(f"building {log} ...", flush=True)
        generate(log, size, seed=seed, run_seconds=10**12 if one_run else 40_000)
    dataset = data / f"dataset-{kind}-{size_text}"
    record = data / f"parse-{kind}-{size_text}.json"
    if dataset.is_dir() and record.is_file():
        parse = Measure(**json.loads(record.read_text()))
    else:
        shutil.rmtree(dataset, ignore_errors=True)
        print(f"parsing {log} ...", flush=True)
        parse = run_measured(tracelens("parse", str(log), "-o", str(dataset), "-q"), kill_above)
        record.write_text(json.dumps(parse.__dict__))
    print(f"  parse {size_text}: {parse.seconds:.1f} s, {parse.cpu:.1f} CPU s, {parse.peak / 2**20:.0f} MiB")
    return dataset, parse, log.stat().st_size


def measure(dataset: Path, name: str, out: Path, kill_above: int, alone: bool = True) -> Measure:
    extra, _ = COMMANDS[name]
    out.mkdir(parents=True, exist_ok=True)
    args = [a.format(out=out) for a in extra]
    cmd = tracelens("sql", SQL_QUERY, str(dataset)) if name == "sql" else tracelens(name, str(dataset), *args)
    result = run_measured(cmd, kill_above, alone)
    state = " (killed)" if result.killed else ""
    print(
        f"  {name}: {result.seconds:.1f} s, {result.cpu:.1f} CPU s, {result.peak / 2**20:.0f} MiB{state}",
        flush=True,
    )
    return result


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB" if value > 0 else "-"  # 0: not recorded (a parse measured elsewhere)


def _cpu(value: float) -> str:
    return f"{value:.1f}" if value >= 0 else "-"  # -1: not recorded


def table(
    rows: list[tuple[str, int, Measure, dict[str, Measure]]], load: float, kill_above: int, parallel: bool
) -> str:
    today = dt.date.today().isoformat()
    lines = [
        f"`python bench/analysis.py` on the datasets of the synthetic EAGLE-3 session logs of "
        f"`bench/logmix.py`, one run each, {today}.",
        f"Machine: {machine()}; load average {load:.1f} when the run began.",
        "",
        "| log | command | seconds | CPU seconds | share of parse time | share of parse CPU | peak memory (tree, PSS) | targets |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for size_text, nbytes, parse, results in rows:
        label = f"{size_text} ({nbytes / 2**30:.2f} GiB)"
        lines.append(
            f"| {label} | parse | {parse.seconds:.1f} | {_cpu(parse.cpu)} | 1.00 | 1.00 | {_mib(parse.peak)} | - |"
        )
        for name, m in results.items():
            share = COMMANDS[name][1]
            ratio = m.seconds / parse.seconds
            mem_ok = m.peak <= MEMORY_LIMIT and not m.killed
            time_ok = ratio <= share and not m.killed
            peak = f"> {kill_above / 2**30:.0f} GiB (stopped)" if m.killed else f"{m.peak / 2**20:,.0f} MiB"
            verdict = (
                f"memory {'met' if mem_ok else '**not met**'}, "
                f"time <= {share:g}x parse {'met' if time_ok else '**not met**'}"
            )
            lines.append(
                f"| {label} | {name} | {m.seconds:.1f} | {_cpu(m.cpu)} | {ratio:.2f} "
                f"| {m.cpu / parse.cpu if parse.cpu > 0 else float('nan'):.2f} | {peak} "
                f"| {verdict} |"
            )
    lines += ["", f"The `sql` query: `{SQL_QUERY}`."]
    if parallel:
        lines.append(
            "The commands of each size ran at the same time (`--parallel`): their peaks are each command's "
            "own, their wall times are not comparable with the parse's; CPU seconds are."
        )
    lines.append("")
    return "\n".join(lines)


def _parse_measure(text: str) -> Measure:
    """SECONDS,CPU[,PEAK_MIB] of a parse measured elsewhere."""
    values = [float(v) for v in text.split(",")]
    peak = int(values[2] * 2**20) if len(values) > 2 else 0
    return Measure(values[0], values[1], peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1G,4G")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tracelens-bench"
    )
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--kill-above", default="12G", help="stop a command whose tree passes this")
    parser.add_argument("--json", type=Path, help="also write the measures to this file")
    parser.add_argument(
        "--reuse", type=Path, help="take the sizes measured in this --json file from it instead of measuring"
    )
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="run the commands of a size at the same time (peaks stay per command; wall times do not)",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="SIZE=DIR",
        help="analyse this existing dataset for SIZE (no log built, no parse): with --parse for its parse time",
    )
    parser.add_argument(
        "--parse",
        action="append",
        default=[],
        metavar="SIZE=SECONDS,CPU[,PEAK_MIB]",
        help="the parse time of SIZE's log measured elsewhere (e.g. by bench/throughput.py in the same session)",
    )
    parser.add_argument(
        "--one-run",
        action="store_true",
        help="logs of one server start each (written between the bench-analysis-one-run markers)",
    )
    parser.add_argument("--no-write", action="store_true", help="print the table, do not write RESULTS.md")
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.dataset)
    parses = {size: _parse_measure(text) for size, text in (item.split("=", 1) for item in args.parse)}
    load = os.getloadavg()[0]
    kill_above = _size(args.kill_above)
    args.data.mkdir(parents=True, exist_ok=True)
    out = args.data / "out"  # the reports written, overwritten by each run
    out.mkdir(exist_ok=True)
    print(machine(), flush=True)
    rows = []
    reused = json.loads(args.reuse.read_text()) if args.reuse else {}
    for i, size_text in enumerate(args.sizes.split(",")):
        if size_text in reused:
            done = reused[size_text]
            measures = {k: Measure(**v) for k, v in done.items() if k not in ("parse", "bytes")}
            rows.append((size_text, done["bytes"], Measure(**done["parse"]), measures))
            continue
        if size_text in given:
            dataset = Path(given[size_text])
            log = args.data / f"eagle3-session-{size_text}.log"
            nbytes = log.stat().st_size if log.is_file() else _size(size_text)
            if size_text not in parses:
                raise SystemExit(
                    f"--dataset {size_text}=...: give its parse time with --parse {size_text}=S,CPU"
                )
            parse = parses[size_text]
        else:
            dataset, parse, nbytes = prepare(
                args.data, size_text, 3 if i == 0 else 4, kill_above, args.one_run
            )
            parse = parses.get(size_text, parse)
        names = args.commands.split(",")
        if args.parallel:
            with ThreadPoolExecutor(len(names)) as pool:
                futures = {n: pool.submit(measure, dataset, n, out / n, kill_above, False) for n in names}
                results = {n: f.result() for n, f in futures.items()}
        else:
            results = {name: measure(dataset, name, out, kill_above) for name in names}
        rows.append((size_text, nbytes, parse, results))
    text = table(rows, load, kill_above, args.parallel)
    print()
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    s: {"bytes": n, "parse": p.__dict__, **{k: v.__dict__ for k, v in r.items()}}
                    for s, n, p, r in rows
                },
                indent=1,
            )
        )
    if not args.no_write:
        write_results(text, "bench-analysis-one-run" if args.one_run else "bench-analysis")


if __name__ == "__main__":
    main()
