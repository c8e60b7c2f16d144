"""The main story: DeepSeek-V3 on 8 GPUs (TP=8) tuning EAGLE-3 at batch size 1, on 2026-11-20.

``baseline_tp8.log`` (no speculation), ``eagle3_embed_capture.log`` (aux layer ids ``[-1, 2, 30]`` by
mistake), ``eagle3_fixed.log`` (``[2, 30, 58]``) and ``sweep_and_crash.log`` (three starts sweeping
``speculative_num_steps``, the last one dying of OOM on every rank)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime

from .config import Server, Spec, Workload
from .crash import crash
from .dialects import Dialect
from .eagle3_debug import Eagle3Debug
from .log import Log, as_text
from .models import V3, V3_EAGLE3
from .startup import start_server
from .traffic import serve, single_run

EMBED_LAYERS = (-1, 2, 30)
FIXED_LAYERS = (2, 30, 58)
NOV_20 = datetime(2026, 11, 20)


def v3_server(num_steps: int | None, *, pid: int, seed: int, load_seconds: float = 600.0) -> Server:
    """The 8-GPU server; ``num_steps`` None means no speculative decoding."""
    target = replace(V3, load_seconds=load_seconds)
    if num_steps is None:
        return Server(target=target, pid=pid, seed=seed)
    spec = Spec("EAGLE3", V3_EAGLE3, num_steps=num_steps, topk=1, draft_tokens=num_steps + 1)
    return Server(target=target, spec=spec, kv_pool_gb=6.2, max_running=48, pid=pid, seed=seed)


def build_baseline() -> str:
    log = Log(Dialect(), NOV_20.replace(hour=9, minute=14, second=7))
    work = Workload(minutes=26, step_rate=88.95)
    return as_text(single_run(log, v3_server(None, pid=12345, seed=771205), work, seed=101).lines())


def build_embed_capture() -> str:
    log = Log(Dialect(), NOV_20.replace(hour=10, minute=41, second=52))
    work = Workload(minutes=22, step_rate=30.68, accept=(1.60, 1.76, 1.80))
    srv = v3_server(4, pid=23817, seed=771206)
    return as_text(single_run(log, srv, work, seed=202, layers=EMBED_LAYERS).lines())


def build_fixed() -> str:
    log = Log(Dialect(), NOV_20.replace(hour=14, minute=3, second=26))
    work = Workload(minutes=24, step_rate=32.5, accept=(2.55, 2.88, 3.15))
    srv = v3_server(4, pid=31544, seed=771207)
    return as_text(single_run(log, srv, work, seed=303, layers=FIXED_LAYERS).lines())


SWEEP = (  # num_steps, accept len (low, mean, high), verify steps per second
    (2, (2.05, 2.31, 2.60), 37.5),
    (3, (2.35, 2.62, 2.90), 35.0),
    (5, (2.70, 3.02, 3.35), 29.0),
)


def build_sweep() -> str:
    rng = random.Random(404)
    log = Log(Dialect(), NOV_20.replace(hour=16, minute=12, second=40))
    t = 0.0
    for run, (steps, accept, rate) in enumerate(SWEEP):
        srv = v3_server(steps, pid=40211 + 977 * run, seed=881300 + run, load_seconds=150.0)
        hook = Eagle3Debug(FIXED_LAYERS, random.Random(405 + run), cut_draft_line=run == 1)
        ready = start_server(log, srv, rng, t, hook)
        t = serve(log, srv, Workload(minutes=3, step_rate=rate, accept=accept), rng, ready + 4.0, hook=hook)
        if run == len(SWEEP) - 1:
            crash(log, t + rng.uniform(2.0, 6.0), srv, rng)
        t += rng.uniform(40.0, 90.0)
    return as_text(log.lines())
