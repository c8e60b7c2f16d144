"""This checkout against another commit, side by side: the same tables, and what it costs.

    python bench/against.py REF [--log LOG ...] [--rounds 3] [--mb 32] [--no-speed] [--instructions]

REF (a commit, tag or branch) is checked out into a temporary git worktree. Both versions then, each
in a process whose working directory is its own checkout (``python -m tracelens.cli`` puts the working
directory first on ``sys.path``; ``PYTHONPATH`` alone does not switch checkouts):

1. **Tables.** Parse the sample logs, the team's real corpus (``../shared/corpus/real``, when present)
   and the first ``--mb`` MiB of each LOG, in memory at 64 KiB, 1 MiB and 3 MiB blocks and through the
   engine into a dataset, and compare every table row for row. A speed change must not change a row:
   the script exits 1 and names the tables that differ.
2. **Cost.** In alternate rounds, ``tracelens parse -j 2 -q`` of each whole LOG (wall seconds, CPU
   seconds of the process tree, its peak PSS: the figures of `bench/throughput.py`), and the parse alone
   per 6 MiB block on one core (least CPU of 4 passes over ``--mb`` MiB, the figure least disturbed by
   other work). Medians over ``--rounds``, and this checkout's figure over REF's.

3. **Instructions** (``--instructions``, needs valgrind). User-space instructions per 6 MiB block of the
   parse, counted by callgrind: the difference between parsing three blocks from the middle of each LOG
   and the first of them, halved (the first fills the parsers' memos), for both checkouts. A count
   does not move with the machine's load, so one run tells a change of 1-2% that alternate rounds of
   CPU seconds cannot; it misses what the kernel does (page faults) and the cost of memory stalls.

LOG defaults to the bench logs `bench/throughput.py` builds (``$TMPDIR/tracelens-bench``). CPU seconds
taken side by side are what compare: a machine's speed drifts by 10-20% within an hour.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from stages import head_of  # noqa: E402
from throughput import run_measured  # noqa: E402

from tracelens.tables.frames import DatasetTables  # noqa: E402
from tracelens.tables.schema import TABLES, C  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "real"
BENCH_LOGS = Path(tempfile.gettempdir()) / "tracelens-bench"
BLOCKS = (64 << 10, 1 << 20, 3 << 20)
DATE = "2026-11-01"  # for time-only prefixes, so that both versions date them alike

# Run by each checkout's own Python path (cwd first): writes every finalized table of each input.
_DUMP = """
import datetime as dt, sys
from pathlib import Path
from tracelens.engine.ingest import parse_paths
from tracelens.parsers.pipeline import ParseOptions
out, date, blocks, inputs = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), sys.argv[4:]
options = ParseOptions(base_date=dt.date.fromisoformat(date))
for block in map(int, blocks):
    for i, path in enumerate(inputs):
        for name, frame in parse_paths([path], options, block_bytes=block).frames.items():
            folder = out / str(block) / f"{i}-{Path(path).name}"
            folder.mkdir(parents=True, exist_ok=True)
            frame.write_parquet(folder / (name + ".parquet"))
"""

# The parse alone, per 6 MiB block (the engine's), one polars thread: least CPU of 4 passes, in ms. Run in the
# checkout measured (the working directory comes first on the path), with `bench/steps.py`'s timing.
_PER_BLOCK = """
import sys
from pathlib import Path
sys.path.insert(1, sys.argv[3])
from steps import first_frames, parse_cpu
frames, _ = first_frames(Path(sys.argv[1]), 6 << 20, int(sys.argv[2]))
print(min(parse_cpu(frames) for _ in range(4)) / len(frames) * 1000)
"""

# Parse the first N of three 6 MiB blocks from the middle of the log (all three read either way, so that
# only the parse differs; the log's first blocks are its servers' start, not what most blocks hold).
_INSTRUCTIONS = """
import sys
from pathlib import Path
sys.path.insert(1, sys.argv[3])
from steps import parse_cpu
from tracelens.sources.files import block_lines, blocks_from_stream
path = Path(sys.argv[1])
frames = []
with path.open("rb") as fh:
    fh.seek(path.stat().st_size // 2)
    fh.readline()  # to the next line's start
    for block in blocks_from_stream(fh, str(path), 6 << 20, start_offset=fh.tell()):
        frames.append(block_lines(block))
        if len(frames) == 3:
            break
parse_cpu(frames[: int(sys.argv[2])])
"""


def worktree(ref: str, where: Path) -> Path:
    path = where / "base"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), ref],
        check=True,
        capture_output=True,
    )
    return path


def commit_of(path: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def dump(checkout: Path, out: Path, inputs: list[Path]) -> None:
    subprocess.run(
        [sys.executable, "-c", _DUMP, str(out), DATE, ",".join(map(str, BLOCKS)), *map(str, inputs)],
        cwd=checkout,
        check=True,
    )


def dataset(checkout: Path, out: Path, inputs: list[Path]) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tracelens.cli",
            "parse",
            *map(str, inputs),
            "-o",
            str(out),
            "-q",
            "-j",
            "2",
            "--date",
            DATE,
            "--range-size",
            "8M",
        ],
        cwd=checkout,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def differences(base: Path, new: Path) -> list[str]:
    """The tables that differ between two dumps and two datasets under ``base`` and ``new``."""
    found = []
    for one in sorted((base / "memory").rglob("*.parquet")):
        rel = one.relative_to(base)
        other = new / rel
        if not other.exists():
            found.append(f"{rel}: only in the base")
            continue
        try:
            assert_frame_equal(pl.read_parquet(one), pl.read_parquet(other))
        except AssertionError as exc:
            found.append(f"{rel}: {str(exc).splitlines()[0]}")
    only_new = {p.relative_to(new) for p in (new / "memory").rglob("*.parquet")}
    only_new -= {p.relative_to(base) for p in (base / "memory").rglob("*.parquet")}
    found += [f"{rel}: only in this checkout" for rel in sorted(only_new)]
    a, b = DatasetTables({}, base / "dataset"), DatasetTables({}, new / "dataset")
    for table in TABLES:
        x, y = a[table], b[table]
        keys = [c for c in (C.SOURCE, C.LINE_NO) if c in x.columns]
        if keys:  # part files are written by tasks in any order
            x, y = x.sort(keys, maintain_order=True), y.sort(keys, maintain_order=True)
        try:
            assert_frame_equal(x, y)
        except AssertionError as exc:
            found.append(f"dataset {table}: {str(exc).splitlines()[0]}")
    return found


def same_tables(base: Path, inputs: list[Path], work: Path) -> list[str]:
    for name, checkout in (("base", base), ("new", ROOT)):
        dump(checkout, work / name / "memory", inputs)
        dataset(checkout, work / name / "dataset", inputs)
    return differences(work / "base", work / "new")


def costs(base: Path, logs: list[Path], rounds: int, mb: int, work: Path) -> list[dict]:
    rows = []
    for log in logs:
        figures: dict[str, dict[str, list[float]]] = {"base": {}, "new": {}}
        for _ in range(rounds):
            for name, checkout in (("base", base), ("new", ROOT)):
                out = work / f"ds-{name}"
                shutil.rmtree(out, ignore_errors=True)
                cmd = [
                    sys.executable,
                    "-m",
                    "tracelens.cli",
                    "parse",
                    str(log),
                    "-o",
                    str(out),
                    "-q",
                    "-j",
                    "2",
                ]
                seconds, peak, cpu = run_measured(cmd, cwd=checkout)
                shutil.rmtree(out, ignore_errors=True)
                block = subprocess.run(
                    [sys.executable, "-c", _PER_BLOCK, str(log), str(mb), str(HERE)],
                    cwd=checkout,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                got = figures[name]
                for key, value in (
                    ("wall s", seconds),
                    ("CPU-s", cpu),
                    ("peak MiB", peak / 2**20),
                    ("ms per block", float(block)),
                ):
                    got.setdefault(key, []).append(value)
                print(
                    f"  {log.name} {name}: {seconds:.2f} s, {cpu:.1f} CPU-s, {peak / 2**20:.0f} MiB, "
                    f"{float(block):.1f} ms per block",
                    flush=True,
                )
        for key in figures["base"]:
            pick = min if key == "ms per block" else statistics.median
            b, n = pick(figures["base"][key]), pick(figures["new"][key])
            rows.append({"log": log.name, "figure": key, "base": b, "new": n, "ratio": n / b})
    return rows


def instructions(checkout: Path, log: Path, blocks: int) -> int:
    """User-space instructions of a process that parses the first ``blocks`` blocks of ``log``."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            _INSTRUCTIONS,
            str(log),
            str(blocks),
            str(HERE),
        ],
        cwd=checkout,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        check=True,
        capture_output=True,
        text=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-500:]}")
    return int(found.group(1))


def instruction_rows(base: Path, logs: list[Path]) -> list[dict]:
    rows = []
    for log in logs:
        per_block = {}
        for name, checkout in (("base", base), ("new", ROOT)):
            per_block[name] = (instructions(checkout, log, 3) - instructions(checkout, log, 1)) / 2 / 1e6
            print(f"  {log.name} {name}: {per_block[name]:.1f} M instructions per block", flush=True)
        b, n = per_block["base"], per_block["new"]
        rows.append(
            {"log": log.name, "figure": "M instructions per block", "base": b, "new": n, "ratio": n / b}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ref")
    parser.add_argument("--log", type=Path, action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--mb", type=int, default=32, help="MiB of each log for the tables and the per-block parse"
    )
    parser.add_argument("--no-speed", action="store_true", help="compare the tables only")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions per block (callgrind)"
    )
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions counts with callgrind: apt-get install valgrind")
    logs = args.log or sorted(BENCH_LOGS.glob("*-1G.log"))
    if not logs:
        sys.exit(f"no logs: pass --log, or run bench/throughput.py first to build {BENCH_LOGS}/*-1G.log")
    with tempfile.TemporaryDirectory(prefix="tracelens-against-") as tmp:
        work = Path(tmp)
        base = worktree(args.ref, work)
        try:
            print(
                f"base {args.ref} ({commit_of(base)}) against this checkout ({commit_of(ROOT)}, uncommitted changes included)"
            )
            inputs = [
                ROOT / "sample_logs",
                *([CORPUS] if CORPUS.is_dir() else []),
                *(head_of(log, args.mb << 20, work) for log in logs),
            ]
            print(f"tables of {', '.join(p.name for p in inputs)} ...", flush=True)
            found = same_tables(base, inputs, work)
            print("every table equal" if not found else "TABLES DIFFER:\n  " + "\n  ".join(found), flush=True)
            rows = [] if args.no_speed else costs(base, logs, args.rounds, args.mb, work)
            if args.instructions:
                rows += instruction_rows(base, logs)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    if rows:
        print()
        print(f"| log | figure | {args.ref} | this | this / {args.ref} |")
        print("|---|---|---:|---:|---:|")
        for row in rows:
            print(
                f"| {row['log']} | {row['figure']} | {row['base']:.1f} | {row['new']:.1f} | {row['ratio']:.3f} |"
            )
        print(json.dumps(rows), file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
