"""``wrappers.log``: the same eight SGLang lines under each wrapper users' tooling adds (docker-compose,
Ray, an outer collector timestamp, a cloud console, a markdown quote), then a tqdm bar and a record
sharing one physical line through ``\\r``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from .config import OLD_ARGS, Server, Workload
from .dialects import Dialect2025Mar
from .log import Log, as_text
from .models import llama
from .traffic import single_run

WRAPPED_MARKERS = (
    "Load weight end.",
    "KV Cache is allocated.",
    "max_total_num_tokens=",
    "fired up",
    "Prefill batch",
    "Decode batch",
    "Decode batch",
    "/v1/chat/completions",
)


def pick(records: list[tuple[datetime, str]], markers: Sequence[str]) -> list[tuple[datetime, str]]:
    """The first record containing each marker (a repeated marker takes the next one)."""
    wanted, picked = list(markers), []
    for record in records:
        marker = next((m for m in wanted if m in record[1]), None)
        if marker is not None:
            wanted.remove(marker)
            picked.append(record)
    return picked


WRAPPERS: tuple[Callable[[datetime, str], str], ...] = (
    lambda ts, line: f"sglang-1  | {line}",
    lambda ts, line: f"(RayWorkerWrapper pid=860) {line}",
    lambda ts, line: f"(Actor pid=2345, ip=10.0.0.12) {line}",
    lambda ts, line: f"\x1b[36m(RayWorkerWrapper pid=860)\x1b[0m {line}",
    lambda ts, line: f"[36m(RayWorkerWrapper pid=860)[0m {line}",
    lambda ts, line: f"[{ts + timedelta(hours=8):%Y-%m-%d %H:%M:%S}] {line}",
    lambda ts, line: f"ERROR {ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond * 1000 + 575:09d}Z {line}",
    lambda ts, line: f"> {line}",
)


def build_wrappers() -> str:
    model = llama("/models/QwQ-32B", 15.54, 64 * 2 * 2 * 128 * 2, 5, 10.0)
    srv = Server(
        target=model,
        tp_size=1,
        start_avail_gb=78.42,
        kv_pool_gb=56.0,
        context_len=131072,
        pid=9,
        seed=1,
        omit_args=OLD_ARGS,
    )
    work = Workload(minutes=0.3, step_rate=36.0, output=(60, 160), prefill_rate=12000.0)
    log = single_run(Log(Dialect2025Mar(), datetime(2025, 3, 11, 1, 15, 40), tp_size=1), srv, work, seed=606)
    records = pick(log.stamped(), WRAPPED_MARKERS)
    lines = [wrap(ts, line) for wrap in WRAPPERS for ts, line in records]
    loaded = next(line for _, line in records if "Load weight end." in line)
    lines.append(f"Loading: 100%|██████████| 5/5 [00:10<00:00]\r{loaded}")
    return as_text(lines)
