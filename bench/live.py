"""Live TUI figures (issue 6, section 3), measured headless in-process with Textual's test driver:

- first paint: `tracelens tui` on a large existing file (1 GiB by default, `bench/logmix.py`); time from
  creating the app to the log view holding the file's last lines (its tail preview), then the time the
  whole file takes to be read and analysed in the background;
- latency: a writer (a thread of the same process) appends 10,000 lines/s to a followed file, 100
  lines every 10 ms; for each write, the time until the log view holds its lines (the view model the
  next frame paints) and until a frame of the log view has drawn them (its last visible row is at or
  past them), p50/p99/max. The load average is printed too: on a busy machine the tail is the
  scheduler's.

- update cost (issue 10, part 5): the live worker process, through its client (`WorkerClient`, no
  session, no screen), is fed the issue-11 mix (`bench/logmix.generate_mix`) in blocks as the pump
  would send them; after 10 thousand lines and after each further checkpoint, it gets one interval's
  lines (750, 1,000 lines/s for 0.75 s) and the update that follows is timed (the window's tables, the
  analysis, the kept findings, the snapshot: the `Analysed` reply's seconds, and the worker's CPU
  seconds after the lines were parsed), the median of 5, with the ratio to the first checkpoint's;
- memory: a whole session (the followers, the pump, the log index and the worker process, no screen)
  follows a file a writer thread appends a replayed log to at 1,000 lines/s sped up ``--speedup``
  times, its timestamps on the simulated clock, until ``--hours`` (24) of session time; each process's
  PSS is sampled every few seconds and printed against the session time simulated, with the slope
  per simulated hour (`live_memory.py`).

    python bench/live.py first-paint [--size-mb 1024] [--keep PATH]
    python bench/live.py latency [--rate 10000] [--seconds 10]
    python bench/live.py update-cost [--lines 10000,100000,1000000] [--window 20000]
    python bench/live.py memory [--speedup 40] [--hours 24] [--seconds 3600]

The figures depend on the machine; bench/RESULTS.md records them with the machine they came from.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_memory import memory, mix_file
from logmix import generate

from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.sources import events as src
from tracelens.tui.app import SessionReported, TraceLensApp

SIZE = (160, 50)


class TimedApp(TraceLensApp):
    """Notes when the log view took in new lines (after its refresh), when a frame drew them, and the
    preview."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.view_counts: list[tuple[float, int]] = []
        self.paint_counts: list[tuple[float, int]] = []  # lines up to the last row a frame drew
        self.preview_at: float | None = None

    def on_mount(self) -> None:  # Textual calls TraceLensApp.on_mount too (each class's handler)
        view = self.log_view
        render_lines = view.render_lines

        def timed(crop):
            strips = render_lines(crop)
            drawn = min(len(view.view), view.scroll_offset.y + view.scrollable_content_region.height)
            self.paint_counts.append((time.perf_counter(), drawn))
            return strips

        view.render_lines = timed

    def on_session_reported(self, message: SessionReported) -> None:
        super().on_session_reported(message)
        now = time.perf_counter()
        if isinstance(message.event, ev.PreviewShown) and self.preview_at is None:
            self.preview_at = now
        self.view_counts.append((now, len(self.log_view.view)))


async def first_paint(path: Path) -> None:
    started = time.perf_counter()
    spec = parse_spec(str(path))
    session = LiveSession([spec])
    app = TimedApp(session)
    async with app.run_test(size=SIZE) as pilot:
        while app.preview_at is None or not len(app.log_view.view):
            await asyncio.sleep(0.005)
        await pilot.pause()
        painted = time.perf_counter() - started
        print(f"first paint (tail of {path.stat().st_size / 2**30:.2f} GiB): {painted:.3f} s")
        last = 0.0
        while session.sources[0].backfill is not None or not session.idle():
            await asyncio.sleep(0.5)
            now = time.perf_counter()
            if now - last > 10 and session.sources[0].backfill:
                done, total = session.sources[0].backfill
                print(f"  {now - started:6.1f} s: read {100 * done / total:5.1f}%", flush=True)
                last = now
        print(
            f"whole file read, parsed and analysed: {time.perf_counter() - started:.1f} s "
            f"({session.index.count():,} lines, {session.analyses} analyses)"
        )


async def latency(rate: int, seconds: float) -> None:
    folder = Path(tempfile.mkdtemp(prefix="tracelens-bench-"))
    path = folder / "server.log"
    path.write_text("")
    spec = parse_spec(str(path))
    session = LiveSession([spec])
    app = TimedApp(session)
    written: list[tuple[float, int]] = []  # (time, lines written so far)
    template = (
        "[2026-11-20 10:53:{s:02d} TP{r}] Decode batch, #running-req: 8, #token: 15380, token usage: 0.20, "
        "accept len: 2.{a:02d}, accept rate: 0.47, cuda graph: True, gen throughput (token/s): 694.{a:02d}, "
        "#queue-req: 0, \n"
    )

    def writer() -> None:
        batch = max(rate // 100, 1)  # every 10 ms
        n = 0
        began = time.perf_counter()
        with path.open("a") as fh:
            while time.perf_counter() - began < seconds:
                fh.write(
                    "".join(
                        template.format(s=(n + i) // 1000 % 60, r=(n + i) % 8, a=(n + i) % 100)
                        for i in range(batch)
                    )
                )
                fh.flush()
                n += batch
                written.append((time.perf_counter(), n))
                pause = began + n / rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)

    load_before = os.getloadavg()[0]
    async with app.run_test(size=SIZE) as pilot:
        while session.sources[0].state != src.CONNECTED:
            await asyncio.sleep(0.01)
        thread = threading.Thread(target=writer)
        thread.start()
        while thread.is_alive():
            await asyncio.sleep(0.05)
        total = written[-1][1]
        deadline = time.perf_counter() + 30
        while (not app.view_counts or app.view_counts[-1][1] < total) and time.perf_counter() < deadline:
            await asyncio.sleep(0.02)
        await pilot.pause()
    achieved = total / (written[-1][0] - written[0][0] + 1e-9)
    print(f"lines written: {total:,} at {achieved:,.0f} lines/s for {seconds:.0f} s")
    for what, seen in (("in the log view", app.view_counts), ("drawn by a frame", app.paint_counts)):
        lat = _latencies(written, seen)
        pick = lambda q, lat=lat: lat[min(int(q * len(lat)), len(lat) - 1)] * 1000  # noqa: E731
        print(
            f"write -> {what}: p50 {pick(0.5):.1f} ms, p99 {pick(0.99):.1f} ms, "
            f"max {lat[-1] * 1000:.1f} ms ({len(lat)} writes)"
        )
    print(f"load average (1 min) before the run: {load_before:.2f}, after: {os.getloadavg()[0]:.2f}")
    path.unlink()
    folder.rmdir()


def _latencies(written: list[tuple[float, int]], seen: list[tuple[float, int]]) -> list[float]:
    """Per write (time, lines written so far): seconds until the first ``seen`` (time, count) that
    covers it, sorted."""
    # counts only grow while following; the running max guards against a filtered moment
    running = list(itertools.accumulate((c for _, c in seen), max))
    out = []
    for t, n in written:
        i = bisect.bisect_left(running, n)
        if i < len(running):
            out.append(max(seen[i][0] - t, 0.0))
    return sorted(out)


def update_cost(checkpoints: list[int], window: int, interval_lines: int = 750) -> None:
    """Drive the live worker process through its public client (`WorkerClient`: the pipes and the
    messages a session uses), no session and no screen: blocks of the mix as the pump sends them, and
    at each checkpoint five intervals of new lines, each answered by an `Analysed` whose ``seconds``
    is the update's wall time in the worker; its CPU is the worker process's between the interval's
    `RowsParsed` and that `Analysed` (the update alone: the 750 lines were parsed before)."""
    import psutil

    from tracelens.live.messages import Analysed, RowsParsed, WorkerConfig
    from tracelens.live.worker import WorkerClient
    from tracelens.parsers import ParseOptions

    checkpoints = sorted(checkpoints)
    path = mix_file(checkpoints[-1] + 6 * interval_lines)
    config = WorkerConfig(["mix.log"], [ParseOptions()], None, None, 900.0, 0.05, window)
    state = {"parsed": 0, "cpu_parsed": {}, "updates": {}}
    changed = threading.Condition()
    worker_cpu = [lambda: 0.0]

    def on_message(message) -> None:
        with changed:
            if isinstance(message, RowsParsed):
                state["parsed"] = max(state["parsed"], message.seq)
                state["cpu_parsed"][message.seq] = worker_cpu[0]()
            elif isinstance(message, Analysed):
                state["updates"][message.through] = (message.seconds, worker_cpu[0]())
            changed.notify_all()

    def ended(reason: str) -> None:
        print(f"the worker ended: {reason}", file=sys.stderr)

    client = WorkerClient(config, on_message, ended)
    process = psutil.Process(client.process.pid)
    worker_cpu[0] = lambda: sum(process.cpu_times()[:2])
    fed = offset = seq = 0
    results: list[tuple[int, float, float]] = []

    def wait(condition, timeout: float = 600.0) -> None:
        with changed:
            if not changed.wait_for(condition, timeout):
                raise SystemExit("the worker did not answer in time")

    with path.open("rb") as fh:

        def feed(count: int) -> None:
            nonlocal fed, offset, seq
            data = b"".join(itertools.islice(fh, count))
            seq += 1
            client.parse(seq, 0, fed + 1, offset, data, False)
            fed += data.count(b"\n")
            offset += len(data)

        started = time.perf_counter()
        for checkpoint in checkpoints:
            while fed < checkpoint:
                feed(min(25_000, checkpoint - fed))
            wait(lambda: state["parsed"] >= seq)
            walls, cpus = [], []
            for _ in range(5):
                wait(lambda: max(state["updates"], default=0) >= seq)  # nothing pending: the next is ours
                feed(interval_lines)
                mine = seq
                wait(lambda mine=mine: mine in state["updates"])
                wall, cpu_after = state["updates"][mine]
                walls.append(wall)
                cpus.append(cpu_after - state["cpu_parsed"][mine])
            results.append((fed, sorted(walls)[2], sorted(cpus)[2]))
            base_wall, base_cpu = results[0][1], results[0][2]
            print(
                f"after {checkpoint:>11,} lines: update {results[-1][1]:.3f} s wall, {results[-1][2]:.3f} CPU-s "
                f"({results[-1][1] / base_wall:.2f}x / {results[-1][2] / max(base_cpu, 1e-9):.2f}x the first); "
                f"{time.perf_counter() - started:.0f} s so far",
                flush=True,
            )
    worker_total = worker_cpu[0]()
    peak = process.memory_info().rss
    client.close()
    path.unlink()
    path.parent.rmdir()
    print(
        f"window {window:,} lines per source; the worker took {worker_total:.0f} CPU-s (RSS at the end "
        f"{peak / 2**20:.0f} MiB), this process {time.process_time():.0f} CPU-s (generating the mix)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    fp = sub.add_parser("first-paint")
    fp.add_argument("--size-mb", type=int, default=1024)
    fp.add_argument("--keep", type=Path, help="use (or create and keep) this file")
    lt = sub.add_parser("latency")
    lt.add_argument("--rate", type=int, default=10_000)
    lt.add_argument("--seconds", type=float, default=10.0)
    uc = sub.add_parser("update-cost")
    uc.add_argument("--lines", default="10000,100000,1000000", help="checkpoints, comma-separated")
    uc.add_argument("--window", type=int, default=20_000)
    mm = sub.add_parser("memory")
    mm.add_argument("--speedup", type=float, default=40.0)
    mm.add_argument("--hours", type=float, default=24.0, help="session time to simulate")
    mm.add_argument("--seconds", type=float, default=3600.0, help="wall time at most")
    mm.add_argument("--sample-every", type=float, default=5.0)
    mm.add_argument("--rotate-lines", type=int, default=2_000_000)
    args = parser.parse_args()
    if args.what == "update-cost":
        update_cost([int(n) for n in args.lines.split(",")], args.window)
    elif args.what == "memory":
        memory(args.speedup, args.hours, args.seconds, args.sample_every, args.rotate_lines)
    elif args.what == "first-paint":
        path = args.keep or Path(tempfile.mkdtemp(prefix="tracelens-bench-")) / "big.log"
        if not path.exists():
            t = time.perf_counter()
            generate(path, args.size_mb << 20)
            print(
                f"generated {path} ({path.stat().st_size / 2**20:,.0f} MiB) in {time.perf_counter() - t:.1f} s"
            )
        try:
            asyncio.run(first_paint(path))
        finally:
            if args.keep is None:
                os.unlink(path)
    else:
        asyncio.run(latency(args.rate, args.seconds))


if __name__ == "__main__":
    main()
