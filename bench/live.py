"""Live TUI figures (issue 6, section 3), measured headless in-process with Textual's test driver:

- first paint: `tracelens tui` on a large existing file (1 GiB by default, `bench/logmix.py`); time from
  creating the app to the log view holding the file's last lines (its tail preview), then the time the
  whole file takes to be read and analysed in the background;
- latency: a writer appends 10,000 lines/s to a followed file; for each line, the time from its write
  to the log view holding it (the view model the next frame paints), p50/p99/max.

    python bench/live.py first-paint [--size-mb 1024] [--keep PATH]
    python bench/live.py latency [--rate 10000] [--seconds 10]

The figures depend on the machine; the README records them with the machine they came from.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logmix import generate

from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.tui.app import SessionReported, TraceLensApp

SIZE = (160, 50)


class TimedApp(TraceLensApp):
    """Notes when the log view took in new lines (after its refresh) and the preview."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.view_counts: list[tuple[float, int]] = []
        self.preview_at: float | None = None

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

    async with app.run_test(size=SIZE) as pilot:
        while session.sources[0].state != ev.CONNECTED:
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
    # latency of each write batch: first view count covering it minus its write time
    import bisect

    seen_times = [t for t, _ in app.view_counts]
    seen_counts = [c for _, c in app.view_counts]
    # view counts only grow while following; the running max guards against a filtered moment
    running = []
    best = 0
    for c in seen_counts:
        best = max(best, c)
        running.append(best)
    lat = []
    for t, n in written:
        i = bisect.bisect_left(running, n)
        if i < len(running):
            lat.append(max(seen_times[i] - t, 0.0))
    lat.sort()
    pick = lambda q: lat[min(int(q * len(lat)), len(lat) - 1)] * 1000  # noqa: E731
    achieved = total / (written[-1][0] - written[0][0] + 1e-9)
    print(
        f"lines written: {total:,} at {achieved:,.0f} lines/s for {seconds:.0f} s; batches measured: {len(lat)}"
    )
    print(
        f"write -> in the log view: p50 {pick(0.5):.1f} ms, p99 {pick(0.99):.1f} ms, max {lat[-1] * 1000:.1f} ms"
    )
    path.unlink()
    folder.rmdir()


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
    args = parser.parse_args()
    if args.what == "first-paint":
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
