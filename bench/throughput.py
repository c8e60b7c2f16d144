"""Throughput of `tracelens parse` on two realistic 1 GiB EAGLE-3 logs, against its peers.

    python bench/throughput.py [--size 1G] [--runs 3] [--jobs N] [--big 4G | --big 0] [--no-write]

Builds two logs deterministically (bench/logmix.py, cached in $TMPDIR): the session log (`generate`)
and the mix of issue 11 (`generate_mix`: 60% decode, 10% prefill, 20% EAGLE3_DEBUG, 10% access lines).
On each, in alternate rounds (each round runs every tool once, so a shared machine's drift weighs on
all alike), the median of ``--runs``:

- tracelens end to end (`parse -j N -q`: every line typed into a Parquet dataset);
- lnav 0.11 indexing with an SGLang format (bench/lnav-sglang-format.json, installed into a private
  HOME; checked to match every prefixed line of the log), and with its generic format (an empty HOME);
- the streaming Python `re` loop of bench/re_baseline.py (decode and prefill lines typed, nothing held);
- `wc -l` (the scan ceiling) once.

For each: wall seconds, MB/s, CPU seconds of the whole process tree (user + system, from the
children's rusage: stable on a noisy machine where wall time is not), CPU-s per GiB and peak PSS of the
tree. Then the memory bound on a ``--big`` input, the second look (a re-run over the unchanged dataset),
bench/stages.py's per-core cost of each stage of the engine. The table is printed and goes into
bench/RESULTS.md between the `bench` markers (`--no-write`: printed only).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import platform
import re
import resource
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

from logmix import generate, generate_mix  # noqa: E402

MEMORY_LIMIT = 512 << 20
TARGET_VS_LNAV = 1.2  # lnav indexing with the SGLang format
TARGET_VS_RE = 2.0  # the streaming `re` loop
TARGET_RERUN = 20
LNAV_FORMAT = HERE / "lnav-sglang-format.json"
TRACELENS = "tracelens"
LNAV_SGLANG = "lnav, SGLang format"
LNAV_GENERIC = "lnav, generic format"
RE_LOOP = "streaming re loop"


@dataclass
class Measure:
    name: str
    seconds: float
    peak_rss: int
    cpu: float = 0.0  # CPU seconds of the process tree, user + system

    def mbps(self, size: int) -> float:
        return size / self.seconds / 1e6


def _size(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1].upper()]) if text[-1].upper() in scale else int(text)


def _tree_sample(proc: psutil.Process, cpu: dict[int, float]) -> int:
    """Memory of a process and all its children: the sum of their proportional set sizes (PSS), so a
    page that worker processes share (the polars library, forked memory) is counted once, not per
    process as a sum of RSS would. Records each process's own CPU seconds so far in ``cpu``."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss
            times = p.cpu_times()
            cpu[p.pid] = times.user + times.system
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_measured(
    cmd: list[str],
    env: dict[str, str] | None = None,
    kill_above: int = 0,
    alone: bool = True,
    cwd: Path | None = None,
) -> tuple[float, int, float]:
    """Wall time, peak memory of the whole process tree (sampled every 250 ms: reading a process's PSS
    costs CPU, sampling more often would slow down what is measured on a 2-core machine) and CPU
    seconds of the tree: the rusage of the waited-for descendants, or, when larger, the sum of each
    process's last sampled CPU time (the engine's workers are children of a fork server, whose exit is
    not waited for, so rusage misses them; sampling misses at most a worker's last 250 ms).
    ``kill_above`` (bytes, 0: never): the tree is killed once its memory passes it, so a command that
    does not fit cannot take the machine down (the peak returned is then above it). Not ``alone``
    (other commands run at the same time), only the sampled CPU seconds count: the rusage of waited
    children would mix the commands. ``cwd``: where the command runs (`bench/against.py` runs each
    checkout from its own folder)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    watched = psutil.Process(proc.pid)
    peak = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            with contextlib.suppress(psutil.Error):
                peak = max(peak, _tree_sample(watched, cpu))
            if kill_above and peak > kill_above:
                for p in [*watched.children(recursive=True), watched]:
                    with contextlib.suppress(psutil.Error):
                        p.kill()
                return
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    killed = bool(kill_above) and peak > kill_above
    if proc.returncode not in (0, 1) and not killed:
        raise SystemExit(f"{' '.join(cmd[:5])} failed ({proc.returncode}): {err.decode()[-500:]}")
    sampled = sum(cpu.values())
    return elapsed, peak, max(_children_cpu() - cpu_before, sampled) if alone else sampled


def median_of(name: str, make_cmd, runs: int, before=None) -> Measure:
    return medians_of_rounds({name: (make_cmd, before)}, runs)[name]


def medians_of_rounds(commands: dict, runs: int) -> dict[str, Measure]:
    """{name: (make_cmd, before, env)} -> {name: Measure}, median of ``runs`` rounds. Each round runs
    every command once, so a machine whose speed drifts (a shared virtual machine) weighs on all of
    them alike and their ratio holds."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[int]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (make_cmd, before, *env) in commands.items():
            if before:
                before()
            seconds, peak, cpu = run_measured(make_cmd(), env[0] if env else None)
            times[name].append(seconds)
            cpus[name].append(cpu)
            peaks[name].append(peak)
            print(f"  {name}: {seconds:.2f} s, {cpu:.1f} CPU-s, peak PSS {peak / 2**20:.0f} MiB", flush=True)
    return {
        name: Measure(name, statistics.median(times[name]), max(peaks[name]), statistics.median(cpus[name]))
        for name in commands
    }


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


def lnav_home(work: Path, with_format: bool) -> Path:
    """A private HOME for lnav: with the bench's SGLang format installed, or empty (lnav's own formats,
    the generic one for these logs). The user's own lnav configuration never weighs on the figures."""
    home = work / ("lnav-home-sglang" if with_format else "lnav-home-generic")
    home.mkdir(exist_ok=True)
    if with_format:
        subprocess.run(
            ["lnav", "-i", str(LNAV_FORMAT)],
            env={**os.environ, "HOME": str(home)},
            check=True,
            capture_output=True,
        )
    return home


def lnav_cmd(log: Path) -> list[str]:
    """lnav in headless mode: it indexes the whole file, then answers one query over it."""
    return ["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)]


def check_format(log: Path, nbytes: int = 64 << 20) -> None:
    """The SGLang format's regexes must match every prefixed line (one starting with `[`) of the log's
    head, so that lnav types what tracelens types; a format that misses lines would flatter lnav."""
    spec = json.loads(LNAV_FORMAT.read_text())["sglang_log"]["regex"]
    patterns = [re.compile(p["pattern"].replace("(?<", "(?P<")) for p in spec.values()]
    missed = 0
    read = 0
    with log.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            read += len(line)
            if line.startswith("[") and not any(p.match(line.rstrip("\n")) for p in patterns):
                missed += 1
            if read > nbytes:
                break
    if missed:
        raise SystemExit(f"{LNAV_FORMAT.name}: {missed} prefixed lines of {log.name} match no pattern")


def bench_log(work: Path, name: str, size: int, make) -> tuple[Path, int, int]:
    log = work / name
    if not log.exists() or log.stat().st_size < size:
        print(f"building {log} ...", flush=True)
        make(log, size)
    nbytes = log.stat().st_size
    with log.open("rb") as fh:
        nlines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
    print(f"{log}: {nbytes / 1e6:.0f} MB, {nlines:,} lines", flush=True)
    return log, nbytes, nlines


def tracelens_cmd(log: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "tracelens.cli", "parse", str(log), "-o", str(out), "-q", "-j", str(jobs)]


def measure_log(log: Path, work: Path, args, lnav: bool) -> tuple[dict[str, Measure], Measure]:
    """The tools on one log in alternate rounds, then tracelens's second look."""
    out = work / "dataset"
    ours = tracelens_cmd(log, out, args.jobs)
    commands: dict[str, tuple] = {
        TRACELENS: (lambda: ours, lambda: shutil.rmtree(out, ignore_errors=True)),
        RE_LOOP: (lambda: [sys.executable, str(HERE / "re_baseline.py"), str(log)], None),
    }
    if lnav:
        check_format(log)
        for name, with_format in ((LNAV_SGLANG, True), (LNAV_GENERIC, False)):
            env = {**os.environ, "HOME": str(lnav_home(work, with_format))}
            commands[name] = (lambda: lnav_cmd(log), None, env)
    results = medians_of_rounds(commands, args.runs)
    rerun = median_of("tracelens second look (unchanged)", lambda: ours, args.runs)
    if shutil.which("wc"):
        results["wc -l"] = median_of("wc -l", lambda: ["wc", "-l", str(log)], 1)
    shutil.rmtree(out, ignore_errors=True)
    return results, rerun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--big", default="4G", help="size of the memory-bound check (0: skip)")
    parser.add_argument("--no-write", action="store_true", help="print the table, do not write RESULTS.md")
    args = parser.parse_args()
    args.load_before = os.getloadavg()[0]
    # An installed tracelens runs from bytecode that pip wrote; a checkout under
    # PYTHONDONTWRITEBYTECODE would compile every module at every start, which the second look would pay.
    compileall.compile_dir(ROOT / "tracelens", quiet=1)

    work = Path(tempfile.gettempdir()) / "tracelens-bench"
    work.mkdir(exist_ok=True)
    size = _size(args.size)
    lnav = shutil.which("lnav") is not None
    print(machine(), flush=True)
    tables = []
    for title, name, make in (
        ("EAGLE-3 session log (`logmix.generate`)", f"eagle3-session-{args.size}.log", generate),
        ("issue-11 mix (`logmix.generate_mix`)", f"mix-{args.size}.log", generate_mix),
    ):
        log, nbytes, nlines = bench_log(work, name, size, make)
        results, rerun = measure_log(log, work, args, lnav)
        tables.append(report(title, results, rerun, nbytes, nlines, lnav))

    big_peak = None
    big_size = _size(args.big) if args.big not in ("0", "") else 0
    if big_size:
        big, _, _ = bench_log(
            work, f"eagle3-session-{args.big}.log", big_size, lambda p, n: generate(p, n, seed=4)
        )
        big_out = work / "dataset-big"
        shutil.rmtree(big_out, ignore_errors=True)
        seconds, big_peak, cpu = run_measured(tracelens_cmd(big, big_out, args.jobs))
        print(
            f"  tracelens on {big_size / 2**30:.0f} GiB: {seconds:.1f} s, {cpu:.0f} CPU-s, peak PSS {big_peak / 2**20:.0f} MiB"
        )
        shutil.rmtree(big_out, ignore_errors=True)

    print("stages (bench/stages.py) ...", flush=True)
    stages = measure_stages(work / f"eagle3-session-{args.size}.log")
    head = (
        f"`python bench/throughput.py`, median of {args.runs} alternate rounds, `--jobs {args.jobs}`, "
        f"{time.strftime('%Y-%m-%d')}.\n"
        f"Machine: {machine()}; load average {args.load_before:.1f} when the run began "
        "(other work was running when it is above 0.5).\n"
    )
    memory = (
        f"- peak tree PSS on {args.big}: {big_peak / 2**20:.0f} MiB (limit {MEMORY_LIMIT >> 20} MiB): "
        + ("met" if big_peak <= MEMORY_LIMIT else "**not met**")
        if big_peak
        else "- the memory bound on a bigger log was not checked in this run (`--big 0`)"
    ) + "\n"
    table = head + "\n" + "\n".join(tables) + "\n" + memory + stage_lines(stages, args.jobs)
    print()
    print(table)
    if not args.no_write:
        write_results(table)


def report(title, results, rerun, nbytes, nlines, lnav) -> str:
    ours = results[TRACELENS]
    gib = nbytes / 2**30
    rows = [
        f"**{title}**: {nbytes / 2**30:.2f} GiB, {nlines:,} lines",
        "",
        "| tool | wall s | MB/s | CPU-s | CPU-s per GiB | peak tree PSS | tracelens is ... x faster |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in results.items():
        ratio = m.seconds / ours.seconds
        rows.append(
            f"| {name} | {m.seconds:.2f} | {m.mbps(nbytes):,.1f} | {m.cpu:.1f} | {m.cpu / gib:.1f} | "
            f"{m.peak_rss / 2**20:,.0f} MiB | {'-' if name == TRACELENS else f'{ratio:.2f}'} |"
        )
    checks = []
    if lnav:
        ratio = results[LNAV_SGLANG].seconds / ours.seconds
        checks.append(
            f"- vs lnav indexing with the SGLang format: {ratio:.2f}x (target {TARGET_VS_LNAV}x): "
            + ("met" if ratio >= TARGET_VS_LNAV else "**not met**")
        )
    else:
        checks.append("- lnav: not installed (`apt-get install lnav`), no ratio")
    ratio = results[RE_LOOP].seconds / ours.seconds
    checks.append(
        f"- vs the streaming `re` loop: {ratio:.2f}x (target {TARGET_VS_RE}x): "
        + ("met" if ratio >= TARGET_VS_RE else "**not met**")
    )
    checks.append(
        f"- peak tree PSS: {ours.peak_rss / 2**20:.0f} MiB (limit {MEMORY_LIMIT >> 20} MiB): "
        + ("met" if ours.peak_rss <= MEMORY_LIMIT else "**not met**")
    )
    speedup = ours.seconds / rerun.seconds
    checks.append(
        f"- second look (re-run over the unchanged dataset): {rerun.seconds:.2f} s, {speedup:.0f}x faster "
        f"(target {TARGET_RERUN}x): " + ("met" if speedup >= TARGET_RERUN else "**not met**")
    )
    return "\n".join(rows) + "\n\n" + "\n".join(checks) + "\n"


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
    total = 1 / sum(1 / rate for rate in rates.values())
    rows += [
        "",
        f"- all stages together: {total:,.0f} MB/s per core, at most {total * jobs:,.0f} MB/s on {jobs} cores",
    ]
    return "\n".join(rows) + "\n"


RESULTS = HERE / "RESULTS.md"  # the current figures; the README quotes none of them


def write_results(table: str, marker: str = "bench") -> None:
    """Put ``table`` into bench/RESULTS.md between the `<!-- {marker}:start -->` and `:end` comments."""
    text = RESULTS.read_text()
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in text or end not in text:
        print(f"{RESULTS.name} has no {marker} markers; table not written")
        return
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    RESULTS.write_text(f"{before}{start}\n{table}{end}{after}")
    print(f"{RESULTS.relative_to(ROOT)} updated")


if __name__ == "__main__":
    main()
