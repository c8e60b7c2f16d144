"""The engine's fixed cost and memory side by side, in one short run:

    python bench/scale.py [--size 64M] [--runs 1] [--jobs 1,2] [--checkout DIR] [--no-write]

On three inputs built deterministically by bench/logmix.py (cached in $TMPDIR/tracelens-bench):

- a single long run: one server start and ``--size`` of its traffic (`logmix.generate`, whose runs last
  some 120 MB);
- many short runs: ``--size`` in 32 logs of one run each (`logmix.generate` with a seed per log);
- a 1 MB log;

`tracelens parse -q -j N` at each ``--jobs``, plus `python -c "import polars, pyarrow"` (the imports no
command avoids), each printed with wall seconds, CPU-seconds of the process tree (user + system) and
its peak PSS (bench/throughput.py's `run_measured`). The machine is shared: compare CPU-seconds, which
other work moves little, rather than wall. The table goes into bench/RESULTS.md between the `scale`
markers (`--no-write`: printed only). ``--checkout DIR`` measures the tracelens of another checkout
(e.g. `git archive main | tar -x -C DIR`) instead, and writes nothing.
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from logmix import generate  # noqa: E402
from throughput import _size, machine, run_measured, write_results  # noqa: E402

SHORT_RUNS = 32
IMPORTS = "imports only (`import polars, pyarrow`)"


def _inputs(work: Path, size: int, label: str) -> dict[str, tuple[Path, int]]:
    """{name: (path, bytes)}: the three inputs, built once."""
    one = work / f"one-run-{label}.log"
    if not one.exists():
        generate(one, size)
    many = work / f"short-runs-{label}"
    if not many.exists():
        many.mkdir()
        for i in range(SHORT_RUNS):
            generate(many / f"run{i:02d}.log", size // SHORT_RUNS, seed=100 + i)
    small = work / "one-run-1M.log"
    if not small.exists():
        generate(small, 1 << 20)
    many_bytes = sum(p.stat().st_size for p in many.iterdir())
    return {
        f"single long run, {label}": (one, one.stat().st_size),
        f"{SHORT_RUNS} short runs, {label}": (many, many_bytes),
        "1 MB log": (small, small.stat().st_size),
    }


def _measure(cmd: list[str], runs: int, before=None, cwd: Path | None = None) -> tuple[float, float, int]:
    """Medians of wall and CPU seconds, the highest peak, over ``runs``; ``cwd``: the checkout that runs."""
    walls, cpus, peaks = [], [], []
    for _ in range(runs):
        if before:
            before()
        wall, peak, cpu = run_measured(cmd, cwd=cwd)
        walls.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
    return statistics.median(walls), statistics.median(cpus), max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="64M")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--jobs", default="1,2", help="comma-separated -j values")
    parser.add_argument("--checkout", type=Path, help="measure this checkout's tracelens (nothing written)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    checkout = args.checkout.resolve() if args.checkout else ROOT
    load = __import__("os").getloadavg()[0]
    # A checkout under PYTHONDONTWRITEBYTECODE would compile every module at every start.
    compileall.compile_dir(checkout / "tracelens", quiet=1)
    work = Path(tempfile.gettempdir()) / "tracelens-bench"
    work.mkdir(exist_ok=True)
    inputs = _inputs(work, _size(args.size), args.size)
    out = work / "dataset-scale"
    rows = []
    wall, cpu, peak = _measure([sys.executable, "-c", "import polars, pyarrow"], args.runs)
    rows.append((IMPORTS, "", wall, cpu, peak))
    print(f"  {IMPORTS}: {wall:.2f} s, {cpu:.2f} CPU-s, {peak / 2**20:.0f} MiB", flush=True)
    for name, (path, nbytes) in inputs.items():
        for jobs in args.jobs.split(","):
            cmd = [
                sys.executable,
                "-m",
                "tracelens.cli",
                "parse",
                str(path),
                "-o",
                str(out),
                "-q",
                "-j",
                jobs,
            ]
            wall, cpu, peak = _measure(
                cmd, args.runs, lambda: shutil.rmtree(out, ignore_errors=True), checkout
            )
            rows.append((f"{name} ({nbytes / 1e6:.1f} MB)", jobs, wall, cpu, peak))
            print(f"  {name} -j {jobs}: {wall:.2f} s, {cpu:.2f} CPU-s, {peak / 2**20:.0f} MiB", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    table = (
        f"`python bench/scale.py --size {args.size} --runs {args.runs} --jobs {args.jobs}`, "
        f"{time.strftime('%Y-%m-%d')}. Machine: {machine()}; load average {load:.1f} when the run began. "
        "The machine is shared: CPU-seconds (user + system of the process tree) are the figure to "
        "compare; wall follows the load.\n\n"
        "| input | -j | wall s | CPU-s | peak tree PSS MiB |\n|---|---:|---:|---:|---:|\n"
        + "".join(f"| {n} | {j} | {w:.2f} | {c:.2f} | {p / 2**20:.0f} |\n" for n, j, w, c, p in rows)
    )
    print()
    print(table)
    if not args.no_write and args.checkout is None:
        write_results(table, marker="scale")


if __name__ == "__main__":
    main()
