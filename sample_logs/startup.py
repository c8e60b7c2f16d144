"""A server start: everything an SGLang server prints from ``server_args`` to "fired up" (distributed
init, weight loads with their progress bar, KV cache, CUDA graphs, limits, uvicorn, the warm-up)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .config import CLIENT, GIB, WARMUP_FORWARDS, Model, Server, kv_tokens, server_args
from .dialects import Limits, PrefillStats
from .eagle3_debug import Eagle3Debug
from .log import Log, access, http


@dataclass
class Boot:
    """Per-rank clocks and free memory while a server starts."""

    log: Log
    srv: Server
    rng: random.Random
    clocks: list[float]
    avail: list[float]

    def step(self, low: float, high: float, message: Callable[[int, float], str | None]) -> None:
        """Every rank takes low..high seconds, then prints message(rank, seconds taken)."""
        for rank in range(len(self.clocks)):
            elapsed = self.rng.uniform(low, high)
            self.clocks[rank] += elapsed
            self.log.rank(self.clocks[rank], rank, message(rank, elapsed))

    def barrier(self, pause: float = 0.0) -> float:
        """All ranks wait for the slowest (a collective), then ``pause`` more seconds."""
        t = max(self.clocks) + pause
        self.clocks = [t] * len(self.clocks)
        return t

    def spend(self, rank: int, gb: float) -> float:
        self.avail[rank] -= gb
        return self.avail[rank]


def tqdm_clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def progress_line(done: int, total: int, elapsed: float) -> str:
    head = f"Loading safetensors checkpoint shards: {100 * done / total:3.0f}% Completed | {done}/{total} "
    if done == 0:
        return head + "[00:00<?, ?it/s]"
    per_item = elapsed / done
    rate = f"{per_item:5.2f}s/it" if per_item >= 1 else f"{1 / per_item:5.2f}it/s"
    return head + f"[{tqdm_clock(elapsed)}<{tqdm_clock(per_item * (total - done))}, {rate}]"


def progress_bar(log: Log, t0: float, model: Model) -> None:
    """TP0's tqdm bar (no prefix) at 0, 25, 50, 75 and 100 %, then tqdm's empty line."""
    shown = sorted({round(model.shards * quarter / 4) for quarter in range(5)})
    for done in shown:
        elapsed = model.load_seconds * done / model.shards
        log.raw(t0 + elapsed, progress_line(done, model.shards, elapsed))
    log.raw(t0 + model.load_seconds, "")


def init_distributed(boot: Boot) -> None:
    dialect = boot.log.dialect
    boot.step(0.0, 1.5, lambda rank, _: dialect.dist_begin(rank))
    usage = [
        boot.srv.dist_gb + (boot.rng.uniform(-0.01, 0.02) if rank else 0.0)
        for rank in range(len(boot.clocks))
    ]
    boot.step(1.5, 4.0, lambda rank, elapsed: dialect.dist_end(rank, elapsed, usage[rank]))
    boot.barrier(boot.rng.uniform(0.2, 0.8))


def load_weights(boot: Boot, model: Model, hook: Eagle3Debug | None) -> None:
    dialect, log = boot.log.dialect, boot.log
    boot.step(0.2, 1.0, lambda rank, _: dialect.load_begin(rank, boot.avail[rank]))
    if hook is not None and model.role == "target":
        for rank, t in enumerate(boot.clocks):
            hook.model_init(log, t + 0.4, rank)
    if model.shards:
        progress_bar(log, boot.clocks[0] + 0.5, model)
    spread = model.load_seconds * 0.02
    boot.step(
        model.load_seconds - spread,
        model.load_seconds + spread,
        lambda rank, elapsed: dialect.load_end(rank, model, elapsed, boot.spend(rank, model.weights_gb)),
    )
    if hook is not None and model.role == "draft" and boot.srv.spec is not None:
        hook.draft_init(log, boot.clocks[0] + 0.1, boot.srv.spec)
    boot.barrier(boot.rng.uniform(0.3, 1.2))


def allocate_kv(boot: Boot, model: Model) -> None:
    dialect, tokens = boot.log.dialect, kv_tokens(boot.srv)
    size = tokens * model.kv_bytes_per_token / GIB
    boot.step(0.05, 0.4, lambda rank, _: dialect.kv_alloc(rank, tokens, model))
    boot.step(
        0.0,
        0.2,
        lambda rank, _: dialect.pool_end(rank, boot.spend(rank, size + boot.rng.uniform(0.04, 0.12))),
    )


def capture_graphs(boot: Boot, model: Model) -> None:
    dialect = boot.log.dialect

    def captured(rank: int, elapsed: float) -> str | None:
        usage = model.graph_gb + boot.rng.uniform(-0.03, 0.03)
        return dialect.graph_end(
            rank, model.role, elapsed, usage, boot.spend(rank, usage), boot.srv.cuda_graph_bs
        )

    boot.step(
        0.1,
        0.5,
        lambda rank, _: dialect.graph_begin(rank, model.role, boot.spend(rank, boot.rng.uniform(0.0, 0.08))),
    )
    boot.step(model.graph_seconds * 0.85, model.graph_seconds * 1.15, captured)
    boot.barrier(boot.rng.uniform(0.1, 0.6))


def bring_up(boot: Boot, model: Model, hook: Eagle3Debug | None) -> None:
    """Load one model on every rank, allocate its KV cache and capture its CUDA graphs."""
    load_weights(boot, model, hook)
    allocate_kv(boot, model)
    capture_graphs(boot, model)


def log_limits(boot: Boot) -> None:
    srv = boot.srv
    ranks = range(srv.tp_size) if boot.log.dialect.limits_on_all_ranks else [0]
    for rank in ranks:
        lim = Limits(
            kv_tokens(srv),
            srv.chunked_prefill,
            srv.max_prefill,
            srv.max_running,
            srv.context_len,
            boot.avail[rank],
        )
        boot.log.rank(
            boot.clocks[rank] + boot.rng.uniform(0.0, 0.3), rank, boot.log.dialect.limits(rank, lim)
        )


def open_http(log: Log, srv: Server, rng: random.Random, t: float, hook: Eagle3Debug | None) -> float:
    """Uvicorn start, the warm-up request and the ready line; returns the ready time."""
    for text in (
        f"Started server process [{srv.pid}]",
        "Waiting for application startup.",
        "Application startup complete.",
        "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    ):
        http(log, t, text)
        t += rng.uniform(0.0, 0.3)
    port = rng.randint(40000, 60000)
    t += rng.uniform(0.8, 1.6)
    access(log, t, f"{CLIENT}:{port}", "GET /get_model_info")
    t += rng.uniform(0.05, 0.2)
    warmup = PrefillStats(
        new_seq=1,
        new_token=6,
        cached_token=0,
        hit_rate=0.0,
        usage=0.0,
        running=0,
        input_throughput=6 / rng.uniform(0.05, 0.3),
        iteration=1,
    )
    log.rank(t, 0, log.dialect.prefill(warmup))
    if hook is not None:
        hook.forwards(log, t, t + 0.6, WARMUP_FORWARDS)
    t += rng.uniform(0.8, 2.5)
    access(log, t, f"{CLIENT}:{port + 2}", "POST /generate")
    log.main(t + rng.uniform(0.0, 0.2), "The server is fired up and ready to roll!")
    return t + 0.2


def start_server(
    log: Log, srv: Server, rng: random.Random, t0: float, hook: Eagle3Debug | None = None
) -> float:
    """Everything a server prints from ``server_args`` to "fired up"; returns the ready time."""
    log.main(t0, log.dialect.server_args(server_args(srv)))
    ranks = range(srv.tp_size)
    boot = Boot(
        log,
        srv,
        rng,
        clocks=[t0 + rng.uniform(3.0, 6.0) for _ in ranks],
        avail=[srv.start_avail_gb + (rng.uniform(-0.3, 0.3) if rank else 0.0) for rank in ranks],
    )
    init_distributed(boot)
    bring_up(boot, srv.target, hook)
    if srv.spec is not None:
        bring_up(boot, srv.spec.draft, hook)
    log_limits(boot)
    return open_http(log, srv, rng, boot.barrier(rng.uniform(1.0, 2.5)), hook)
