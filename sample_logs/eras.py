"""Era samples: a small start and some traffic in the format of one SGLang release each, from
early 2024 (no prefix, ``Rank N:``, CRLF) to May 2026 (ms stamps, iteration counters, dict
``server_args``)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime

from .config import OLD_ARGS, Model, Server, Spec, Workload
from .dialects import Dialect2024Aug, Dialect2024Jan, Dialect2024Sep, Dialect2025, Dialect2026May
from .log import Log, as_text
from .models import V3, llama
from .startup import start_server
from .traffic import serve, single_run


def build_era_2024_rank() -> str:
    model = llama("/models/Llama-2-13b-chat-hf", 12.2, 40 * 2 * 20 * 128 * 2, 0, 38.0)
    srv = Server(
        target=model,
        tp_size=2,
        start_avail_gb=78.5,
        kv_pool_gb=52.0,
        context_len=4096,
        max_prefill=32768,
        pid=1,
        seed=0,
        omit_args=OLD_ARGS,
    )
    work = Workload(
        minutes=1.1,
        step_rate=31.0,
        clients=2,
        burst_prob=0.0,
        prompt=(420, 1400),
        output=(120, 500),
        prefill_rate=9000.0,
    )
    log = single_run(Log(Dialect2024Jan(), datetime(2024, 1, 27, 14, 2, 11), tp_size=2), srv, work, seed=501)
    return as_text(log.lines(), newline="\r\n")


def build_era_2024_gpu() -> str:
    model = llama("/models/Meta-Llama-3-8B-Instruct", 14.96, 32 * 2 * 8 * 128 * 2, 4, 21.0)
    srv = Server(
        target=model,
        tp_size=1,
        start_avail_gb=78.94,
        kv_pool_gb=48.0,
        context_len=8192,
        max_running=5124,
        pid=2281,
        seed=51806273,
        omit_args=OLD_ARGS,
    )
    work = Workload(minutes=0.6, step_rate=97.0, burst_prob=0.15, output=(120, 700), prefill_rate=30000.0)
    log = single_run(Log(Dialect2024Aug(), datetime(2024, 8, 11, 18, 40, 3), tp_size=1), srv, work, seed=502)
    return as_text(log.lines())


def build_era_2024_timeonly() -> str:
    model = llama("/models/Meta-Llama-3.1-8B-Instruct", 7.52, 32 * 2 * 4 * 128 * 2, 4, 14.0)
    srv = Server(
        target=model,
        tp_size=2,
        start_avail_gb=78.65,
        kv_pool_gb=62.0,
        context_len=131072,
        max_running=4097,
        pid=30571,
        seed=983142,
        omit_args=OLD_ARGS,
    )
    work = Workload(
        minutes=0.5, step_rate=118.0, clients=6, burst_prob=0.0, output=(300, 900), prefill_rate=40000.0
    )
    log = single_run(Log(Dialect2024Sep(), datetime(2024, 9, 2, 23, 59, 2), tp_size=2), srv, work, seed=503)
    return as_text(log.lines())


def build_era_2025_dp_attention() -> str:
    nextn = Model(
        path="/models/DeepSeek-V3-NextN",
        arch="DeepseekV3ForCausalLMNextN",
        role="draft",
        weights_gb=1.62,
        load_seconds=6.0,
        shards=0,
        kv_bytes_per_token=576 * 2,
        mla=True,
        graph_seconds=12.0,
        graph_gb=0.41,
    )
    spec = Spec("EAGLE", nextn, num_steps=3, topk=1, draft_tokens=4)
    target = replace(V3, load_seconds=410.0, shards=0)
    srv = Server(
        target=target,
        dp_size=4,
        spec=spec,
        start_avail_gb=139.21,
        kv_pool_gb=15.4,
        cuda_graph_bs=(1, 2, 4, 8, 16, 24, 32),
        max_running=1024,
        pid=7321,
        seed=118234,
        extra_args={"enable_dp_lm_head": True, "moe_dense_tp_size": None},
    )
    work = Workload(
        minutes=0.1,
        step_rate=30.0,
        accept=(2.45, 2.71, 2.95),
        clients=3,
        burst_prob=0.0,
        prompt=(600, 2200),
        output=(150, 450),
        prefill_rate=16000.0,
    )
    log = Log(Dialect2025(), datetime(2025, 5, 20, 11, 52, 30), tp_size=8, dp_size=4)
    rng = random.Random(504)
    ready = start_server(log, srv, rng, 0.0)
    for group in range(srv.dp_size):  # every DP group's first rank prints its own batch lines
        serve(
            log,
            srv,
            work,
            random.Random(5040 + group),
            ready + 3.0,
            rank=group * srv.tp_size // srv.dp_size,
            housekeeping=group == 0,
        )
    return as_text(log.lines())


def build_era_2026_comma() -> str:
    target = llama("/models/Llama-3.1-8B-Instruct", 7.52, 32 * 2 * 4 * 128 * 2, 4, 9.0)
    draft = Model(
        path="/models/Llama-3.1-8B-Instruct-EAGLE3",
        arch="LlamaForCausalLMEagle3",
        role="draft",
        weights_gb=0.43,
        load_seconds=2.0,
        shards=1,
        kv_bytes_per_token=1 * 2 * 4 * 128 * 2,
        mla=False,
        graph_seconds=3.2,
        graph_gb=0.50,
    )
    spec = Spec("EAGLE3", draft, num_steps=3, topk=1, draft_tokens=4)
    srv = Server(
        target=target,
        tp_size=2,
        spec=spec,
        start_avail_gb=78.31,
        kv_pool_gb=58.0,
        context_len=131072,
        cuda_graph_bs=(1, 2, 4),
        max_running=48,
        pid=90412,
        seed=310593,
    )
    work = Workload(
        minutes=0.45,
        step_rate=70.0,
        accept=(2.2, 2.6, 3.0),
        burst_prob=0.1,
        output=(150, 600),
        prefill_rate=45000.0,
    )
    log = Log(Dialect2026May(), datetime(2026, 5, 24, 0, 52, 58, 417000), tp_size=2)
    stamp = log.start.strftime("%Y-%m-%d %H:%M:%S")
    log.raw(
        -0.4,
        f"[{stamp}] INFO server_args.py:1697: Attention backend not specified. Use fa3 backend by default.",
    )
    log.raw(
        -0.3,
        f"[{stamp}] WARNING server_args.py:1912: Max running requests is reset to 48 for speculative decoding.",
    )
    log.rank(6.9, 0, "\x1b[32mfinish build [flashinfer_sampling], cost 5.8s \x1b[0m")
    lines = single_run(log, srv, work, seed=505).lines()
    lost = next(i for i, line in enumerate(lines) if "TP1] Load weight end." in line)
    lines[lost] = "[36m(SGLangEngine pid=90377)[0m " + lines[lost]
    return as_text(lines)
