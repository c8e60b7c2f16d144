"""Throughput of `tracelens parse` on a realistic 1 GiB EAGLE-3 session log, against its peers.

    python bench/throughput.py [--size 1G] [--runs 3] [--jobs N] [--big 4G | --big 0] [--no-readme]

Builds the log deterministically (bench/logmix.py, cached in $TMPDIR), then measures in one run, the
median of ``--runs``: tracelens end to end (every line typed into a Parquet dataset) and the plain Python
`re` loop of bench/re_baseline.py, in alternate rounds, and, when installed, `wc -l` and `rg -c` (the
scan ceiling) and lnav (Debian's `lnav`, the peer: its indexing of the file). It prints MB/s, lines/s,
the peak RSS of each process tree and the ratios, checks the memory bound on a ``--big`` input too,
times a re-run over the unchanged dataset, runs bench/stages.py for the per-core cost of each stage of
the engine (and so the ceiling that reading, splitting and writing put on the rate, with parsing free),
and writes the table into README.md between the `bench` markers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from logmix import generate  # noqa: E402

MEMORY_LIMIT = 512 << 20
TARGET_MBPS = 300
TARGET_VS_LNAV = 1.8
TARGET_VS_RE = 3.5


@dataclass
class Measure:
    name: str
    seconds: float
    peak_rss: int

    def mbps(self, size: int) -> float:
        return size / self.seconds / 1e6


def _size(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1].upper()]) if text[-1].upper() in scale else int(text)


def _tree_rss(proc: psutil.Process) -> int:
    """Memory of a process and all its children: the sum of their proportional set sizes (PSS), so a
    page that worker processes share (the polars library, forked memory) is counted once, not per
    process as a sum of RSS would."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss
    return total


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall time and peak memory of the whole process tree, sampled every 250 ms (reading a process's
    PSS costs CPU: sampling more often would slow down what is measured on a 2-core machine)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    watched = psutil.Process(proc.pid)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            with contextlib.suppress(psutil.Error):
                peak = max(peak, _tree_rss(watched))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.decode()[-500:]}")
    return elapsed, peak


def median_of(name: str, make_cmd, runs: int, before=None) -> Measure:
    return medians_of_rounds({name: (make_cmd, before)}, runs)[name]


def medians_of_rounds(commands: dict, runs: int) -> dict[str, Measure]:
    """{name: (make_cmd, before)} -> {name: Measure}, median of ``runs`` rounds. Each round runs every
    command once, so a machine whose speed drifts (a shared virtual machine) weighs on all of them
    alike and their ratio holds."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[int]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (make_cmd, before) in commands.items():
            if before:
                before()
            seconds, peak = run_measured(make_cmd())
            times[name].append(seconds)
            peaks[name].append(peak)
            print(f"  {name}: {seconds:.2f} s, peak RSS {peak / 2**20:.0f} MiB", flush=True)
    return {name: Measure(name, statistics.median(times[name]), max(peaks[name])) for name in commands}


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import polars

    mem = psutil.virtual_memory().total / 2**30
    return (
        f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, polars {polars.__version__}"
    )


def lnav_cmd(log: Path) -> list[str] | None:
    """lnav in headless mode: it indexes the whole file, then answers one query over it."""
    lnav = shutil.which("lnav")
    if lnav is None:
        return None
    return [lnav, "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--big", default="4G", help="size of the memory-bound check (0: skip)")
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args()
    args.load_before = os.getloadavg()[0]

    work = Path(tempfile.gettempdir()) / "tracelens-bench"
    work.mkdir(exist_ok=True)
    size = _size(args.size)
    log = work / f"eagle3-session-{args.size}.log"
    if not log.exists() or log.stat().st_size < size:
        print(f"building {log} ...", flush=True)
        generate(log, size)
    nbytes = log.stat().st_size
    with log.open("rb") as fh:
        nlines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
    print(f"{log}: {nbytes / 1e6:.0f} MB, {nlines:,} lines; {machine()}", flush=True)

    out = work / "dataset"
    tracelens = [
        sys.executable,
        "-m",
        "tracelens.cli",
        "parse",
        str(log),
        "-o",
        str(out),
        "-q",
        "-j",
        str(args.jobs),
    ]
    results: dict[str, Measure] = {}
    # tracelens and the `re` loop in alternate rounds: the ratio of the two is a target.
    results |= medians_of_rounds(
        {
            "tracelens": (lambda: tracelens, lambda: shutil.rmtree(out, ignore_errors=True)),
            "re loop": (lambda: [sys.executable, str(HERE / "re_baseline.py"), str(log)], None),
        },
        args.runs,
    )
    rerun = median_of("tracelens re-run (unchanged)", lambda: tracelens, args.runs)
    if shutil.which("wc"):
        results["wc -l"] = median_of("wc -l", lambda: ["wc", "-l", str(log)], args.runs)
    if shutil.which("rg"):
        results["rg -c"] = median_of("rg -c", lambda: ["rg", "-c", "$", str(log)], args.runs)
    lnav = lnav_cmd(log)
    if lnav is not None:
        results["lnav"] = median_of("lnav", lambda: lnav, args.runs)

    big_peak = None
    big_size = _size(args.big) if args.big not in ("0", "") else 0
    if big_size:
        big = work / f"eagle3-session-{args.big}.log"
        if not big.exists() or big.stat().st_size < big_size:
            print(f"building {big} ...", flush=True)
            generate(big, big_size, seed=4)
        big_out = work / "dataset-big"
        shutil.rmtree(big_out, ignore_errors=True)
        seconds, big_peak = run_measured(
            [
                sys.executable,
                "-m",
                "tracelens.cli",
                "parse",
                str(big),
                "-o",
                str(big_out),
                "-q",
                "-j",
                str(args.jobs),
            ]
        )
        print(
            f"  tracelens on {big.stat().st_size / 1e9:.1f} GB: {seconds:.1f} s, peak RSS {big_peak / 2**20:.0f} MiB"
        )
        shutil.rmtree(big_out, ignore_errors=True)

    print("stages (bench/stages.py) ...", flush=True)
    stages = measure_stages(log)
    table = report(results, rerun, nbytes, nlines, big_peak, big_size, args) + stage_lines(stages, args.jobs)
    print()
    print(table)
    if not args.no_readme:
        write_readme(table)


def report(results, rerun, nbytes, nlines, big_peak, big_size, args) -> str:
    ours = results["tracelens"]
    rows = [
        "| tool | seconds | MB/s | lines/s | peak memory (tree, PSS) | tracelens is ... x faster |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in results.items():
        ratio = m.seconds / ours.seconds
        rows.append(
            f"| {name} | {m.seconds:.2f} | {m.mbps(nbytes):,.0f} | {nlines / m.seconds:,.0f} | "
            f"{m.peak_rss / 2**20:,.0f} MiB | {'-' if name == 'tracelens' else f'{ratio:.2f}'} |"
        )
    checks = [
        f"- end to end: {ours.mbps(nbytes):.0f} MB/s (target {TARGET_MBPS}): "
        + ("met" if ours.mbps(nbytes) >= TARGET_MBPS else "**not met**"),
    ]
    if "re loop" in results:
        ratio = results["re loop"].seconds / ours.seconds
        checks.append(
            f"- vs the `re` loop: {ratio:.2f}x (target {TARGET_VS_RE}x): "
            + ("met" if ratio >= TARGET_VS_RE else "**not met**")
        )
    if "lnav" in results:
        ratio = results["lnav"].seconds / ours.seconds
        checks.append(
            f"- vs lnav's indexing: {ratio:.2f}x (target {TARGET_VS_LNAV}x): "
            + ("met" if ratio >= TARGET_VS_LNAV else "**not met**")
        )
    else:
        checks.append("- lnav: not installed (`apt-get install lnav`), no ratio")
    peak = max(ours.peak_rss, big_peak or 0)
    sizes = f"{nbytes / 2**30:.0f} GiB" + (f" and {big_size / 2**30:.0f} GiB" if big_peak else "")
    checks.append(
        f"- peak memory (PSS) of the process tree on {sizes}: {peak / 2**20:.0f} MiB (limit 512 MiB): "
        + ("met" if peak <= MEMORY_LIMIT else "**not met**")
    )
    speedup = ours.seconds / rerun.seconds
    checks.append(
        f"- re-run over the unchanged dataset: {rerun.seconds:.2f} s, {speedup:.0f}x faster than the first run (target 20x)"
    )
    head = (
        f"`python bench/throughput.py` on a {nbytes / 2**30:.0f} GiB EAGLE-3 session log ({nlines:,} lines), "
        f"median of {args.runs}, `--jobs {args.jobs}`, {time.strftime('%Y-%m-%d')}.\n"
        f"Machine: {machine()}; load average {args.load_before:.1f} when the run began "
        "(above 0.5, something else was running).\n"
    )
    return head + "\n" + "\n".join(rows) + "\n\n" + "\n".join(checks) + "\n"


def measure_stages(log: Path) -> dict[str, float]:
    """MB/s of input per core of each engine stage, from bench/stages.py in its own process."""
    out = subprocess.run(
        [sys.executable, str(HERE / "stages.py"), str(log)], capture_output=True, check=True, text=True
    ).stdout
    return {name: stage["mb_per_s_per_core"] for name, stage in json.loads(out)["stages"].items()}


def stage_lines(rates: dict[str, float], jobs: int) -> str:
    """The per-stage table, and what the stages other than parsing allow on ``jobs`` cores."""
    rows = [
        "",
        "Per core, each stage of the engine alone (`bench/stages.py`: first 128 MiB, one process set up as a worker):",
        "",
        "| stage | MB/s per core |",
        "|---|---:|",
        *(f"| {name} | {rate:,.0f} |" for name, rate in rates.items()),
    ]
    fixed = 1 / sum(1 / rates[name] for name in ("read", "split", "write"))
    rows += [
        "",
        f"- with parsing free, reading, splitting and writing alone allow at most {fixed * jobs:,.0f} MB/s "
        f"on {jobs} cores (the targets ask {TARGET_MBPS} MB/s and {TARGET_VS_LNAV}x lnav)",
    ]
    return "\n".join(rows) + "\n"


def write_readme(table: str, marker: str = "bench") -> None:
    """Put ``table`` into README.md between the `<!-- {marker}:start -->` and `:end` comments."""
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in text or end not in text:
        print(f"README.md has no {marker} markers; table not written")
        return
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    readme.write_text(f"{before}{start}\n{table}{end}{after}")
    print("README.md updated")


if __name__ == "__main__":
    main()
