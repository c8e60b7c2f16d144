"""Serving: one scheduler's requests (prefill batches, a decode line every 40 steps, access lines),
the monitoring scrapes, and ``single_run``, one start followed by one serving phase."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .config import (
    BATCH_SLOWDOWN,
    CLIENT,
    DECODE_LOG_INTERVAL,
    ONE_OFF_OUTPUT,
    SYSTEM_PROMPT_TOKENS,
    THINK_SECONDS,
    WARMUP_FORWARDS,
    Server,
    Workload,
    kv_tokens,
)
from .dialects import DecodeStats, PrefillStats
from .eagle3_debug import Eagle3Debug
from .log import Log, access
from .startup import start_server


@dataclass
class Request:
    prompt: int
    cached: int
    output: int
    returns: bool  # sent by a client that sends another one when this finishes
    generated: float = 0.0

    def kv(self) -> int:
        return self.prompt + int(self.generated)


class Traffic:
    """One scheduler's requests: prefill batches, decode lines every 40 steps, access lines."""

    def __init__(
        self, log: Log, srv: Server, work: Workload, rng: random.Random, rank: int, hook: Eagle3Debug | None
    ) -> None:
        self.log, self.srv, self.work, self.rng, self.rank, self.hook = log, srv, work, rng, rank, hook
        self.t = self.t_end = self.last_decode = 0.0
        self.running: list[Request] = []
        self.arrivals: list[tuple[float, bool]] = []
        self.iteration = WARMUP_FORWARDS  # forward passes so far (the warm-up ran the first ones)
        self.port = rng.randint(40000, 56000)
        self.cached_total = self.new_total = 0
        self.max_total = kv_tokens(srv)

    def run(self, t0: float, t1: float) -> float:
        self.t, self.t_end = t0, t1
        self.arrivals = [(t0 + self.rng.uniform(0.3, 2.0 + 0.2 * n), True) for n in range(self.work.clients)]
        while self.next_event():
            self.admit()
            if self.running:
                self.decode()
                self.finish()
        return self.t

    def next_event(self) -> bool:
        if self.running:
            return True
        due = [t for t, _ in self.arrivals if t <= self.t_end]
        if due:
            self.t = max(self.t, min(due))
        return bool(due)

    def new_request(self, returns: bool) -> Request:
        """A client's chat turn, or (returns False) a short one-off such as a title request."""
        prompt = self.rng.randint(*self.work.prompt)
        cached = SYSTEM_PROMPT_TOKENS if self.new_total and self.rng.random() < 0.7 else 0
        output = self.rng.randint(*self.work.output) if returns else self.rng.randint(*ONE_OFF_OUTPUT)
        return Request(prompt, cached, output, returns)

    def admit(self) -> None:
        """Every request that has arrived joins one prefill batch."""
        limit = min(self.t, self.t_end)
        due = [returns for t, returns in self.arrivals if t <= limit]
        if not due:
            return
        self.arrivals = [arrival for arrival in self.arrivals if arrival[0] > limit]
        batch = [self.new_request(returns) for returns in due]
        new = sum(r.prompt - r.cached for r in batch)
        cached = sum(r.cached for r in batch)
        self.new_total += new
        self.cached_total += cached
        seconds = 0.03 + new / self.work.prefill_rate
        self.iteration += 1
        stats = PrefillStats(
            new_seq=len(batch),
            new_token=new,
            cached_token=cached,
            hit_rate=100 * self.cached_total / (self.cached_total + self.new_total),
            usage=(self.kv_in_use() + sum(r.prompt for r in batch)) / self.max_total,
            running=len(self.running),
            input_throughput=new / seconds,
            iteration=self.iteration,
        )
        self.log.rank(self.t, self.rank, self.log.dialect.prefill(stats))
        if self.hook is not None:
            self.hook.forwards(self.log, self.t, self.t + seconds, 1)
        self.t += seconds
        if not self.running:  # after idle time the throughput window starts now
            self.last_decode = self.t
        self.running.extend(batch)
        self.maybe_burst()

    def maybe_burst(self) -> None:
        if self.rng.random() < self.work.burst_prob:
            for _ in range(self.rng.randint(1, 3)):
                self.arrivals.append((self.t + self.rng.uniform(0.5, 8.0), False))

    def kv_in_use(self) -> int:
        return sum(r.kv() for r in self.running)

    def accept_len(self) -> float | None:
        if self.work.accept is None:
            return None
        low, mean, high = self.work.accept
        share = (mean - low) / (high - low)
        return low + (high - low) * self.rng.betavariate(10 * share, 10 * (1 - share))

    def decode(self) -> None:
        """DECODE_LOG_INTERVAL decode (or verify) steps, then one Decode batch line."""
        accept = self.accept_len()
        per_step = accept or 1.0
        batch = len(self.running)
        steps_per_second = (
            self.work.step_rate / (1 + BATCH_SLOWDOWN * (batch - 1)) * self.rng.gauss(1.0, 0.015)
        )
        start = self.t
        self.t += DECODE_LOG_INTERVAL / steps_per_second
        for request in self.running:
            request.generated += DECODE_LOG_INTERVAL * per_step
        self.iteration += DECODE_LOG_INTERVAL
        generated = DECODE_LOG_INTERVAL * per_step * batch
        stats = DecodeStats(
            running=batch,
            tokens=self.kv_in_use(),
            usage=self.kv_in_use() / self.max_total,
            gen_throughput=generated / (self.t - self.last_decode),
            cuda_graph=batch <= max(self.srv.cuda_graph_bs),
            iteration=self.iteration,
            accept_len=accept,
            draft_tokens=self.srv.spec.draft_tokens if self.srv.spec else 0,
        )
        self.last_decode = self.t
        self.log.rank(self.t, self.rank, self.log.dialect.decode(stats))
        if self.hook is not None:
            self.hook.forwards(self.log, start, self.t, DECODE_LOG_INTERVAL)

    def finish(self) -> None:
        done = [r for r in self.running if r.generated >= r.output]
        self.running = [r for r in self.running if r.generated < r.output]
        for request in done:
            t = self.t + self.rng.uniform(0.005, 0.08)
            self.port += self.rng.randint(1, 3)
            access(self.log, t, f"{CLIENT}:{self.port}", "POST /v1/chat/completions")
            if request.returns and self.t < self.t_end:
                self.arrivals.append((t + self.rng.uniform(*THINK_SECONDS), True))


def scrape(log: Log, rng: random.Random, t0: float, t1: float) -> None:
    """Prometheus scrapes /metrics about once a minute; a probe checks /health now and then."""
    t, port = t0 + rng.uniform(5.0, 40.0), rng.randint(33000, 39000)
    while t < t1:
        port += rng.randint(1, 9)
        if rng.random() < 0.25:
            access(log, t, f"{CLIENT}:{port}", "GET /health")
        else:
            access(log, t, f"10.12.0.7:{port}", "GET /metrics")
        t += rng.uniform(45.0, 75.0)


def serve(
    log: Log,
    srv: Server,
    work: Workload,
    rng: random.Random,
    t0: float,
    *,
    rank: int = 0,
    hook: Eagle3Debug | None = None,
    housekeeping: bool = True,
) -> float:
    """A serving phase of ``work.minutes`` from ``t0``; returns when the last request ends."""
    if housekeeping:
        scrape(log, rng, t0, t0 + 60 * work.minutes)
    return Traffic(log, srv, work, rng, rank, hook).run(t0, t0 + 60 * work.minutes)


def single_run(log: Log, srv: Server, work: Workload, seed: int, layers: tuple[int, ...] = ()) -> Log:
    """One server start and one serving phase; ``layers`` turns the EAGLE3_DEBUG prints on."""
    rng = random.Random(seed)
    hook = Eagle3Debug(layers, random.Random(seed + 1)) if layers else None
    ready = start_server(log, srv, rng, 0.0, hook)
    serve(log, srv, work, rng, ready + rng.uniform(3.0, 15.0), hook=hook)
    return log
