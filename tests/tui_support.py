"""Small logs and waiting helpers for the TUI tests (pilot, snapshot and tmux)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from tracelens.live import LiveSession, parse_spec

from conftest import SAMPLE_LOGS

SERVER_ARGS = (SAMPLE_LOGS / "eagle3_embed_capture.log").read_text().splitlines()[0]
START = [
    SERVER_ARGS,
    "[2026-11-20 10:41:56 TP0] Init torch distributed begin.",
    "[2026-11-20 10:42:03 TP0] Load weight begin. avail mem=78.12 GB",
    "[2026-11-20 10:51:56 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=16.25 GB, mem usage=61.87 GB.",
    "[2026-11-20 10:52:40] The server is fired up and ready to roll!",
    "[2026-11-20 10:53:13 TP0] EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), torch.Size([1, 7168])]",
]
EMBED = "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 7168]) norm=10.6471"
TRACEBACK = [
    "[2026-11-20 10:59:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process',
    "    scheduler.event_loop_normal()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.",
]


def decode(second: int, accept_len: float, tput: float = 90.0) -> str:
    minute, sec = divmod(second, 60)
    return (
        f"[2026-11-20 10:{53 + minute:02d}:{sec:02d} TP0] Decode batch, #running-req: 1, #token: 1538, "
        f"token usage: 0.02, accept len: {accept_len:.2f}, accept rate: 0.20, cuda graph: True, "
        f"gen throughput (token/s): {tput:.2f}, #queue-req: 0, "
    )


def write_start(path: Path, decodes: int = 20) -> None:
    lines = START + [decode(i, 2.5 + 0.01 * (i % 5)) for i in range(decodes)]
    path.write_text("\n".join(lines) + "\n")


def append(path: Path, *lines: str) -> None:
    with path.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


def session_for(*paths: Path, **kwargs) -> LiveSession:
    specs = [parse_spec(str(p)) for p in paths]
    options = {s.label: {"poll": 0.01} for s in specs}
    return LiveSession(specs, interval=0.1, follower_options=options, **kwargs)


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Let the app run until ``condition`` holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.03)
    return condition()
