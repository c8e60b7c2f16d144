"""Write the sample SGLang (and vLLM) server logs kept in this folder.

Run ``python sample_logs/generate.py`` to rewrite every file here, or ``--out DIR`` to write
them elsewhere. Standard library only. Every random choice comes from a ``random.Random``
with a fixed seed and every timestamp from a fixed start time (never the clock), and the
``.gz`` copy is written with ``mtime=0``: two runs give byte-identical files.

The story
---------
A team serves a DeepSeek-V3-architecture model (61 decoder layers, hidden size 7168) on one
node of 8 GPUs (tensor parallelism 8, no data parallelism, so rank tags read ``TPn`` only)
and tunes EAGLE-3 speculative decoding for single-user latency (batch size 1, now and then
2-4). The four main files are dated 2026-11-20 and written in the late-2025/2026 format:
``[YYYY-MM-DD HH:MM:SS TPn] msg``, comma batch headers whose body ends in ``, ``.

baseline_tp8.log
    No speculative decoding. A full start (eight ranks interleaved, ~10 minute weight load),
    then ~26 minutes of chat traffic decoding at ~90 tokens/s.
eagle3_embed_capture.log
    EAGLE-3, 4 draft steps, topk 1, 5 draft tokens. The draft's aux layer ids were set to
    ``[-1, 2, 30]`` by mistake, so the target hands the draft its token embedding (id -1)
    instead of a deep layer. Hand-added ``EAGLE3_DEBUG[...]`` prints (some bare, some with
    the SGLang prefix) show the embedding capture (norm ~10.6) for the warm-up, the first
    50 forward passes and then every ~40th. Acceptance is poor (accept len ~1.76, accept
    rate ~0.19) and decoding is slower than without speculation (~55 tokens/s).
eagle3_embed_capture.log.gz
    A gzip copy of the previous file.
eagle3_fixed.log
    The same server with aux layer ids ``[2, 30, 58]``: no embedding capture, accept len
    ~2.88, accept rate ~0.47, ~94 tokens/s.
sweep_and_crash.log
    Three starts in one file sweeping ``speculative_num_steps`` 2, 3, 5 (draft tokens =
    steps + 1), each with a short start (weights cached, ~2.5 minute load) and ~3 minutes
    of traffic. In run 2 a debug print is cut off: one line reads exactly
    ``EAGLE3_DEBUG[eagle``. Run 3 dies on a long prompt: eight ``Scheduler hit an
    exception`` tracebacks interleaved in blocks, each ending in torch.OutOfMemoryError,
    then the main process's sigquit line.

Era samples (50-200 lines each: a small start and some batch lines in one release's format)

era_2024_rank.log
    Early 2024: no prefix, ``Rank N: load weight begin.``, ``max_total_num_token=``,
    ``new fill batch. #seq: ...`` and unlabelled ``#running-req: ...`` lines. CRLF line ends.
era_2024_gpu.log
    August 2024: ``[gpu=0] `` prefix, ``Prefill batch.`` with ``cache hit rate``.
era_2024_timeonly.log
    September 2024: ``[HH:MM:SS TPn]`` with no date, TP0/TP1, crossing midnight once.
era_2025_dp_attention.log
    May 2025: DP attention (dp 4, tp 8, tags ``DPn TP2n``), EAGLE, each DP group printing
    its own ``Decode batch.`` line with ``accept len`` and ``cuda graph``.
era_2026_comma.log
    May 2026 with ``SGLANG_LOG_MS=1``: millisecond stamps, iteration counters
    (``Decode batch [N],``), ``accept rate``, the dict form ``server_args={...}``, 2026
    wording for graph capture and logger lines ``INFO file.py:N:``, one line with ANSI
    colour codes and one whose ESC bytes were lost.
vllm_spec_decode.log
    vLLM engine and speculative-decoding metrics in each layout: V0 ``Speculative
    metrics:``, V1 ``Draft acceptance rate`` first (with a ``nan%`` idle line), with
    per-position rates, and the current ``Mean acceptance length`` first layout with
    ``(APIServer pid=N) `` before the level.
wrappers.log
    The same eight SGLang lines wrapped by docker-compose, Ray (worker, actor, worker in
    ANSI colour, worker with the ESC bytes lost), an outer log-collector timestamp, a cloud
    console export and a markdown quote, then one tqdm bar sharing a physical line with the
    next record through ``\\r``.

Decode lines come every 40 decode steps (``decode_log_interval``), so about every 0.45 s
without speculation (40 tokens at ~90 tokens/s) and every ~1.3 s with EAGLE-3 (40 verify
steps). Requests come from one closed-loop client; now and then a burst of 1-3 short
one-off requests overlaps it, which is where ``#running-req`` reaches 2-4.

Numbers are kept consistent where a reader could check them: ``#token`` grows by the
tokens generated, ``token usage`` is ``#token / max_total_num_tokens``, ``gen throughput``
is the tokens generated since the previous decode line over the time between them (after
an idle period the count starts at the new request's first decode step), ``accept rate``
is ``(accept len - 1) / (num_draft_tokens - 1)``, and the debug ``input hidden`` norm is the
norm of the concatenated captures.
"""

from __future__ import annotations

import argparse
import gzip
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

HIDDEN_SIZE = 7168
DECODE_LOG_INTERVAL = 40
GIB = 2**30
MLA_KV_BYTES = 61 * 576 * 2  # 61 layers x (512 latent + 64 rope) x bf16, per token
WARMUP_FORWARDS = 4
SYSTEM_PROMPT_TOKENS = 386  # shared chat system prompt: a prefix-cache hit after the first request
BATCH_SLOWDOWN = 0.06  # each extra running request makes a decode step 6% slower
THINK_SECONDS = (0.4, 2.5)  # a client's pause between its requests
ONE_OFF_OUTPUT = (40, 260)  # output tokens of a one-off request arriving in a burst
CLIENT = "127.0.0.1"
EMBED_NAME = "eagle3_embed_capture.log"


# ---------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class Model:
    """One set of weights a server loads: the target model or the speculative draft."""

    path: str
    arch: str
    role: str  # "target" or "draft"
    weights_gb: float
    load_seconds: float
    shards: int  # safetensors shards shown by the progress bar (0: no bar)
    kv_bytes_per_token: int  # per rank
    mla: bool  # one compressed KV buffer ("KV size") instead of K and V
    graph_seconds: float
    graph_gb: float


@dataclass(frozen=True)
class Spec:
    """Speculative decoding settings."""

    algorithm: str
    draft: Model
    num_steps: int
    topk: int
    draft_tokens: int


@dataclass(frozen=True)
class Server:
    """What one server start prints from: model(s), parallelism and memory."""

    target: Model
    tp_size: int = 8
    dp_size: int = 1
    spec: Spec | None = None
    start_avail_gb: float = 78.12
    dist_gb: float = 0.45
    kv_pool_gb: float = 6.85
    context_len: int = 163840
    chunked_prefill: int = 8192
    max_prefill: int = 16384
    max_running: int = 4096
    cuda_graph_bs: tuple[int, ...] = (1, 2, 4, 8)
    pid: int = 12345
    seed: int = 42
    extra_args: dict[str, object] = field(default_factory=dict)
    omit_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    """Traffic and speed of one serving phase."""

    minutes: float
    step_rate: float  # decode (or verify) steps per second for a single running request
    accept: tuple[float, float, float] | None = None  # accept len (low, mean, high)
    clients: int = 1  # closed-loop clients, each sending its next request after a pause
    burst_prob: float = 0.04  # chance that a request brings 1-3 one-off requests with it
    prompt: tuple[int, int] = (420, 3200)
    output: tuple[int, int] = (250, 1800)
    prefill_rate: float = 18000.0  # prompt tokens per second


def kv_tokens(srv: Server) -> int:
    """Size of the KV pool in tokens (the same on every rank)."""
    return int(srv.kv_pool_gb * GIB / srv.target.kv_bytes_per_token)


def spec_args(spec: Spec | None) -> dict[str, object]:
    """The speculative keys of server_args (None when speculation is off)."""
    if spec is None:
        return dict.fromkeys(
            (
                "speculative_algorithm",
                "speculative_draft_model_path",
                "speculative_num_steps",
                "speculative_eagle_topk",
                "speculative_num_draft_tokens",
            )
        )
    return {
        "speculative_algorithm": spec.algorithm,
        "speculative_draft_model_path": spec.draft.path,
        "speculative_num_steps": spec.num_steps,
        "speculative_eagle_topk": spec.topk,
        "speculative_num_draft_tokens": spec.draft_tokens,
    }


def server_args(srv: Server) -> dict[str, object]:
    """The server's arguments in ServerArgs order, as its first log line shows them."""
    path = srv.target.path
    args: dict[str, object] = {
        "model_path": path,
        "tokenizer_path": path,
        "tokenizer_mode": "auto",
        "skip_tokenizer_init": False,
        "load_format": "auto",
        "trust_remote_code": True,
        "context_length": None,
        "is_embedding": False,
        "revision": None,
        "model_impl": "auto",
        "host": "0.0.0.0",
        "port": 30000,
        "skip_server_warmup": False,
        "dtype": "auto",
        "quantization": None,
        "kv_cache_dtype": "auto",
        "mem_fraction_static": 0.87,
        "max_running_requests": None,
        "max_total_tokens": None,
        "chunked_prefill_size": srv.chunked_prefill,
        "max_prefill_tokens": srv.max_prefill,
        "schedule_policy": "fcfs",
        "schedule_conservativeness": 1.0,
        "page_size": 1,
        "device": "cuda",
        "tp_size": srv.tp_size,
        "pp_size": 1,
        "stream_interval": 1,
        "stream_output": False,
        "random_seed": srv.seed,
        "watchdog_timeout": 300,
        "download_dir": None,
        "base_gpu_id": 0,
        "log_level": "info",
        "log_requests": False,
        "show_time_cost": False,
        "enable_metrics": True,
        "decode_log_interval": DECODE_LOG_INTERVAL,
        "api_key": None,
        "served_model_name": path,
        "dp_size": srv.dp_size,
        "load_balance_method": "round_robin",
        "ep_size": 1,
        "dist_init_addr": None,
        "nnodes": 1,
        "node_rank": 0,
        "json_model_override_args": "{}",
        "lora_paths": None,
        "attention_backend": "fa3",
        "sampling_backend": "flashinfer",
        "grammar_backend": "xgrammar",
        **spec_args(srv.spec),
        "speculative_accept_threshold_single": 1.0,
        "speculative_accept_threshold_acc": 1.0,
        "enable_dp_attention": srv.dp_size > 1,
        "disable_radix_cache": False,
        "disable_cuda_graph": False,
        "cuda_graph_max_bs": max(srv.cuda_graph_bs),
        "cuda_graph_bs": list(srv.cuda_graph_bs),
        "enable_torch_compile": False,
        "torch_compile_max_bs": 32,
        "enable_mixed_chunk": False,
        "tool_call_parser": None,
        "reasoning_parser": None,
    }
    args.update(srv.extra_args)
    return {key: value for key, value in args.items() if key not in srv.omit_args}


# ---------------------------------------------------------------------------------------
# Batch statistics


@dataclass(frozen=True)
class PrefillStats:
    new_seq: int
    new_token: int
    cached_token: int
    hit_rate: float  # cumulative, percent
    usage: float
    running: int
    input_throughput: float
    iteration: int
    queue: int = 0

    def fields(self) -> dict[str, str]:
        return {
            "#new-seq": str(self.new_seq),
            "#new-token": str(self.new_token),
            "#cached-token": str(self.cached_token),
            "cache hit rate": f"{self.hit_rate:.2f}%",
            "token usage": f"{self.usage:.2f}",
            "#running-req": str(self.running),
            "#queue-req": str(self.queue),
            "#pending-token": "0",
            "cuda graph": "False",
            "input throughput (token/s)": f"{self.input_throughput:.2f}",
        }


@dataclass(frozen=True)
class DecodeStats:
    running: int
    tokens: int
    usage: float
    gen_throughput: float
    cuda_graph: bool
    iteration: int
    accept_len: float | None = None
    draft_tokens: int = 0
    queue: int = 0

    def fields(self) -> dict[str, str]:
        values = {
            "#running-req": str(self.running),
            "#token": str(self.tokens),
            "token usage": f"{self.usage:.2f}",
            "cuda graph": str(self.cuda_graph),
            "gen throughput (token/s)": f"{self.gen_throughput:.2f}",
            "#queue-req": str(self.queue),
        }
        if self.accept_len is not None:
            values["accept len"] = f"{self.accept_len:.2f}"
            # The 2026-04 definition: (accept_len - 1) / (num_draft_tokens - 1).
            values["accept rate"] = f"{(self.accept_len - 1) / (self.draft_tokens - 1):.2f}"
        return values


@dataclass(frozen=True)
class Limits:
    max_total: int
    chunked: int
    max_prefill: int
    max_running: int
    context_len: int
    avail: float


# ---------------------------------------------------------------------------------------
# Dialects: how one SGLang release words each record


class Dialect:
    """Late-2025/2026 wording, as in the main files. Older and newer releases subclass it."""

    time_format = "%Y-%m-%d %H:%M:%S"
    millis = False
    header_sep = ","
    body_end = ", "
    iteration_counter = False
    uvicorn_prefixed = True
    omit_unit_tags = True  # a parallelism tag whose size is 1 is not printed
    limits_on_all_ranks = False
    prefill_keys: tuple[str, ...] = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "token usage",
        "#running-req",
        "#queue-req",
        "input throughput (token/s)",
    )
    decode_keys: tuple[str, ...] = (
        "#running-req",
        "#token",
        "token usage",
        "accept len",
        "accept rate",
        "cuda graph",
        "gen throughput (token/s)",
        "#queue-req",
    )

    def stamp(self, ts: datetime) -> str:
        text = ts.strftime(self.time_format)
        return f"{text}.{ts.microsecond // 1000:03d}" if self.millis else text

    def prefix(self, ts: datetime, tag: str) -> str:
        return f"[{self.stamp(ts)} {tag}] " if tag else f"[{self.stamp(ts)}] "

    def tag(self, rank: int, tp_size: int, dp_size: int) -> str:
        parts = [f"DP{rank * dp_size // tp_size}"] if dp_size > 1 else []
        if tp_size > 1 or not self.omit_unit_tags:
            parts.append(f"TP{rank}")
        return " ".join(parts)

    def server_args(self, args: dict[str, object]) -> str | None:
        return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"

    def dist_begin(self, rank: int) -> str | None:
        return "Init torch distributed begin."

    def dist_end(self, rank: int, elapsed: float, usage: float) -> str | None:
        return f"Init torch distributed ends. mem usage={usage:.2f} GB"

    def load_begin(self, rank: int, avail: float) -> str | None:
        return f"Load weight begin. avail mem={avail:.2f} GB"

    def load_end(self, rank: int, model: Model, elapsed: float, avail: float) -> str | None:
        return (
            f"Load weight end. type={model.arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB, "
            f"mem usage={model.weights_gb:.2f} GB."
        )

    def kv_alloc(self, rank: int, tokens: int, model: Model) -> str | None:
        size = tokens * model.kv_bytes_per_token / GIB
        if model.mla:
            return f"KV Cache is allocated. #tokens: {tokens}, KV size: {size:.2f} GB"
        return (
            f"KV Cache is allocated. #tokens: {tokens}, K size: {size / 2:.2f} GB, V size: {size / 2:.2f} GB"
        )

    def pool_end(self, rank: int, avail: float) -> str | None:
        return f"Memory pool end. avail mem={avail:.2f} GB"

    def graph_label(self, role: str) -> str:
        return "cuda graph" if role == "target" else "draft cuda graph"

    def graph_begin(self, rank: int, role: str, avail: float) -> str | None:
        label = self.graph_label(role)
        return f"Capture {label} begin. This can take up to several minutes. avail mem={avail:.2f} GB"

    def graph_end(
        self, rank: int, role: str, elapsed: float, usage: float, avail: float, bs: Sequence[int]
    ) -> str | None:
        label = self.graph_label(role)
        return (
            f"Capture {label} end. Time elapsed: {elapsed:.2f} s. mem usage={usage:.2f} GB. "
            f"avail mem={avail:.2f} GB."
        )

    def limits(self, rank: int, lim: Limits) -> str | None:
        return (
            f"max_total_num_tokens={lim.max_total}, chunked_prefill_size={lim.chunked}, "
            f"max_prefill_tokens={lim.max_prefill}, max_running_requests={lim.max_running}, "
            f"context_len={lim.context_len}, available_gpu_mem={lim.avail:.2f} GB"
        )

    def body(self, keys: Sequence[str], values: dict[str, str]) -> str:
        return ", ".join(f"{key}: {values[key]}" for key in keys if key in values)

    def batch(self, header: str, keys: Sequence[str], values: dict[str, str], iteration: int) -> str:
        counter = f" [{iteration}]" if self.iteration_counter else ""
        return f"{header}{counter}{self.header_sep} {self.body(keys, values)}{self.body_end}"

    def prefill(self, stats: PrefillStats) -> str:
        return self.batch("Prefill batch", self.prefill_keys, stats.fields(), stats.iteration)

    def decode(self, stats: DecodeStats) -> str:
        return self.batch("Decode batch", self.decode_keys, stats.fields(), stats.iteration)


class Dialect2026May(Dialect):
    """May 2026 with SGLANG_LOG_MS=1: ms stamps, iteration counters, dict server_args."""

    millis = True
    iteration_counter = True
    body_end = ""
    prefill_keys = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "token usage",
        "#running-req",
        "#queue-req",
        "#pending-token",
        "cuda graph",
        "input throughput (token/s)",
    )

    def server_args(self, args: dict[str, object]) -> str | None:
        return f"server_args={args!r}"

    def dist_end(self, rank: int, elapsed: float, usage: float) -> str | None:
        return f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={usage:.2f} GB"

    def load_end(self, rank: int, model: Model, elapsed: float, avail: float) -> str | None:
        return (
            f"Load weight end. elapsed={elapsed:.2f} s, type={model.arch}, dtype=torch.bfloat16, "
            f"avail mem={avail:.2f} GB, mem usage={model.weights_gb:.2f} GB."
        )

    def graph_label(self, role: str) -> str:
        return "target verify CUDA graph" if role == "target" else "draft CUDA graph"

    def graph_end(
        self, rank: int, role: str, elapsed: float, usage: float, avail: float, bs: Sequence[int]
    ) -> str | None:
        return (
            f"Capture {self.graph_label(role)} end. bs={list(bs)}, elapsed={elapsed:.2f} s, "
            f"mem usage={usage:.2f} GB."
        )


class Dialect2025(Dialect):
    """May 2025 (v0.4.6-0.4.7): ``.`` headers, accept len without accept rate."""

    header_sep = "."
    body_end = ""
    prefill_keys = ("#new-seq", "#new-token", "#cached-token", "token usage", "#running-req", "#queue-req")
    decode_keys = (
        "#running-req",
        "#token",
        "token usage",
        "accept len",
        "cuda graph",
        "gen throughput (token/s)",
        "#queue-req",
    )

    def limits(self, rank: int, lim: Limits) -> str | None:
        return (
            f"max_total_num_tokens={lim.max_total}, chunked_prefill_size={lim.chunked}, "
            f"max_prefill_tokens={lim.max_prefill}, max_running_requests={lim.max_running}, "
            f"context_len={lim.context_len}"
        )


class Dialect2025Mar(Dialect2025):
    """March 2025 (v0.4.3): TP0 printed even at tp=1, cache hit rate, no cuda graph field."""

    omit_unit_tags = False
    prefill_keys = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "cache hit rate",
        "token usage",
        "#running-req",
        "#queue-req",
    )
    decode_keys = ("#running-req", "#token", "token usage", "gen throughput (token/s)", "#queue-req")


class Dialect2024Sep(Dialect2025Mar):
    """September 2024 (v0.3.0): time-only stamps, uvicorn lines unprefixed, fewer start lines."""

    time_format = "%H:%M:%S"
    uvicorn_prefixed = False
    limits_on_all_ranks = True
    prefill_keys = ("#new-seq", "#new-token", "#cached-token", "cache hit rate", "#running-req", "#queue-req")

    def dist_begin(self, rank: int) -> str | None:
        return "Init nccl begin."

    def dist_end(self, rank: int, elapsed: float, usage: float) -> str | None:
        return None

    def load_end(self, rank: int, model: Model, elapsed: float, avail: float) -> str | None:
        return f"Load weight end. type={model.arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB"

    def kv_alloc(self, rank: int, tokens: int, model: Model) -> str | None:
        return None

    def graph_begin(self, rank: int, role: str, avail: float) -> str | None:
        return "Capture cuda graph begin. This can take up to several minutes."

    def graph_end(
        self, rank: int, role: str, elapsed: float, usage: float, avail: float, bs: Sequence[int]
    ) -> str | None:
        return None

    def limits(self, rank: int, lim: Limits) -> str | None:
        return (
            f"max_total_num_tokens={lim.max_total}, max_prefill_tokens={lim.max_prefill}, "
            f"max_running_requests={lim.max_running}, context_len={lim.context_len}"
        )


class Dialect2024Aug(Dialect2024Sep):
    """August 2024 (v0.2.x): ``[gpu=N] `` on scheduler lines, nothing on the others."""

    def prefix(self, ts: datetime, tag: str) -> str:
        return f"[{tag}] " if tag else ""

    def tag(self, rank: int, tp_size: int, dp_size: int) -> str:
        return f"gpu={rank}"


class Dialect2024Jan(Dialect2024Aug):
    """January 2024 (v0.1.x): no prefix, ``Rank N: `` on some lines, pre-``Prefill batch`` wording."""

    decode_keys = ("#running-req", "#token", "token usage", "#queue-req")

    def prefix(self, ts: datetime, tag: str) -> str:
        return ""

    def server_args(self, args: dict[str, object]) -> str | None:
        return None

    def dist_begin(self, rank: int) -> str | None:
        return None

    def load_begin(self, rank: int, avail: float) -> str | None:
        return f"Rank {rank}: load weight begin."

    def load_end(self, rank: int, model: Model, elapsed: float, avail: float) -> str | None:
        return f"Rank {rank}: load weight end."

    def pool_end(self, rank: int, avail: float) -> str | None:
        return None

    def graph_begin(self, rank: int, role: str, avail: float) -> str | None:
        return None

    def limits(self, rank: int, lim: Limits) -> str | None:
        return (
            f"Rank {rank}: max_total_num_token={lim.max_total}, max_prefill_num_token={lim.max_prefill}, "
            f"context_len={lim.context_len}, model_mode=[]"
        )

    def prefill(self, stats: PrefillStats) -> str:
        return (
            f"new fill batch. #seq: {stats.new_seq}. #cached_token: {stats.cached_token}. "
            f"#new_token: {stats.new_token}. #remaining_req: {stats.queue}. #running_req: {stats.running}"
        )

    def decode(self, stats: DecodeStats) -> str:
        return self.body(self.decode_keys, stats.fields())


# ---------------------------------------------------------------------------------------
# The log being written


@dataclass
class Log:
    """One output file's records, kept with their times so that ranks interleave when sorted."""

    dialect: Dialect
    start: datetime
    tp_size: int = 8
    dp_size: int = 1
    records: list[tuple[float, int, str | None, str]] = field(default_factory=list)

    def emit(self, t: float, tag: str | None, text: str | None) -> None:
        """Add a record at ``t`` seconds; tag None means no prefix, "" the main process."""
        if text is not None:
            self.records.append((t, len(self.records), tag, text))

    def main(self, t: float, text: str | None) -> None:
        self.emit(t, "", text)

    def rank(self, t: float, rank: int, text: str | None) -> None:
        self.emit(t, self.tag(rank), text)

    def raw(self, t: float, text: str) -> None:
        self.emit(t, None, text)

    def tag(self, rank: int) -> str:
        return self.dialect.tag(rank, self.tp_size, self.dp_size)

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    def stamped(self) -> list[tuple[datetime, str]]:
        """Records in time order (ties keep insertion order) with their prefixes."""
        ordered = sorted(self.records, key=lambda record: (record[0], record[1]))
        return [
            (self.at(t), text if tag is None else self.dialect.prefix(self.at(t), tag) + text)
            for t, _, tag, text in ordered
        ]

    def lines(self) -> list[str]:
        return [line for _, line in self.stamped()]


def http(log: Log, t: float, text: str) -> None:
    """A uvicorn line (level text, no rank tag)."""
    log.emit(t, "" if log.dialect.uvicorn_prefixed else None, f"INFO:     {text}")


def access(log: Log, t: float, client: str, request: str) -> None:
    http(log, t, f'{client} - "{request} HTTP/1.1" 200 OK')


def as_text(lines: Sequence[str], newline: str = "\n") -> str:
    return newline.join(lines) + newline


# ---------------------------------------------------------------------------------------
# Hand-added EAGLE-3 debug prints

NORMS = {-1: (10.6277, 0.012), 2: (37.0, 0.8), 30: (39.5, 0.9), 58: (86.0, 1.9)}  # mean, sd
FIRST_LOGGED_FORWARDS = 50


def torch_size(*dims: int) -> str:
    return f"torch.Size([{', '.join(map(str, dims))}])"


@dataclass
class Eagle3Debug:
    """Debug prints an engineer added to the target (dsv2), logits processor and draft."""

    layer_ids: tuple[int, ...]
    rng: random.Random
    cut_draft_line: bool = False
    forward: int = 0
    next_logged: int = 0

    def model_init(self, log: Log, t: float, rank: int) -> None:
        capture = [layer + 1 for layer in self.layer_ids]
        log.rank(
            t,
            rank,
            f"EAGLE3_DEBUG[dsv2] set aux layers: layer_ids={list(self.layer_ids)}, "
            f"layers_to_capture={capture}",
        )

    def draft_init(self, log: Log, t: float, spec: Spec) -> None:
        line = (
            f"EAGLE3_DEBUG[eagle_worker] draft init: num_steps={spec.num_steps}, topk={spec.topk}, "
            f"num_draft_tokens={spec.draft_tokens}, aux_hidden_size={HIDDEN_SIZE * len(self.layer_ids)}"
        )
        log.raw(t, line[: len("EAGLE3_DEBUG[eagle")] if self.cut_draft_line else line)

    def forwards(self, log: Log, t0: float, t1: float, count: int) -> None:
        """``count`` forward passes between t0 and t1; prints for the first 50, then every ~40th."""
        for k in range(count):
            if self.forward == self.next_logged:
                self.capture(log, t0 + (t1 - t0) * (k + 0.5) / count)
                gap = 1 if self.forward < FIRST_LOGGED_FORWARDS else self.rng.randint(35, 45)
                self.next_logged = self.forward + gap
            self.forward += 1

    def capture(self, log: Log, t: float) -> None:
        one = torch_size(1, HIDDEN_SIZE)
        shapes = "[" + ", ".join([one] * len(self.layer_ids)) + "]"
        norms = [self.rng.gauss(*NORMS[layer]) for layer in self.layer_ids]
        for layer, norm in zip(self.layer_ids, norms, strict=True):
            kind = "embed" if layer == -1 else "aux"
            log.raw(t, f"EAGLE3_DEBUG[dsv2] {kind} capture: layer_id={layer} shape={one} norm={norm:.4f}")
        log.rank(t, 0, f"EAGLE3_DEBUG[dsv2] forward end: num_aux={len(norms)}, shapes={shapes}")
        log.raw(t, f"EAGLE3_DEBUG[logits] FULL cat: num_items={len(norms)}, shapes={shapes}")
        joined = torch_size(1, HIDDEN_SIZE * len(norms))
        total = math.sqrt(sum(norm * norm for norm in norms))
        log.rank(t, 0, f"EAGLE3_DEBUG[llama_eagle3] input hidden: shape={joined} norm={total:.1f}")


# ---------------------------------------------------------------------------------------
# Server start


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


# ---------------------------------------------------------------------------------------
# Serving


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


# ---------------------------------------------------------------------------------------
# Crash

SGL = "/sgl-workspace/sglang/python/sglang/srt"
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
OOM_FRAMES = (
    (f"{SGL}/managers/scheduler.py", 2100, "run_scheduler_process", "scheduler.event_loop_normal()"),
    (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    (f"{SGL}/managers/scheduler.py", 1004, "event_loop_normal", "result = self.run_batch(batch)"),
    (
        f"{SGL}/managers/scheduler.py",
        1851,
        "run_batch",
        "batch_result = self.model_worker.forward_batch_generation(batch)",
    ),
    (
        f"{SGL}/speculative/eagle_worker.py",
        296,
        "forward_batch_generation",
        "logits_output, next_token_ids, seq_lens_cpu = self.forward_target_extend(",
    ),
    (
        f"{SGL}/speculative/eagle_worker.py",
        372,
        "forward_target_extend",
        "batch_result = self.target_worker.forward_batch_generation(",
    ),
    (
        f"{SGL}/managers/tp_worker.py",
        402,
        "forward_batch_generation",
        "logits_output, can_run_cuda_graph = self.model_runner.forward(",
    ),
    (f"{SGL}/model_executor/model_runner.py", 2207, "forward", "output = self._forward_raw("),
    (f"{SGL}/model_executor/model_runner.py", 2268, "_forward_raw", "ret = self.forward_extend("),
    (f"{SGL}/model_executor/model_runner.py", 2149, "forward_extend", "return self.model.forward("),
    (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    (f"{SGL}/models/deepseek_v2.py", 3120, "forward", "return self.logits_processor("),
    (f"{TORCH}/nn/modules/module.py", 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
    (f"{TORCH}/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)"),
    (
        f"{SGL}/layers/logits_processor.py",
        412,
        "forward",
        "logits = self._get_logits(pruned_states, lm_head, logits_metadata)",
    ),
    (f"{SGL}/layers/logits_processor.py", 655, "_get_logits", "logits = torch.matmul("),
)


def oom_traceback(log: Log, rank: int, rng: random.Random) -> list[tuple[str | None, str]]:
    """One rank's traceback: a prefixed header, unprefixed frames, the error, a blank line."""
    lines: list[tuple[str | None, str]] = [
        (log.tag(rank), "Scheduler hit an exception: Traceback (most recent call last):")
    ]
    for path, line, func, code in OOM_FRAMES:
        lines.append((None, f'  File "{path}", line {line}, in {func}'))
        lines.append((None, f"    {code}"))
    free = 1.02 + rng.uniform(-0.08, 0.08)
    lines.append(
        (
            None,
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU {rank} "
            f"has a total capacity of 79.11 GiB of which {free:.2f} GiB is free.",
        )
    )
    lines.append((None, ""))
    return lines


def interleave(
    blocks: list[list[tuple[str | None, str]]], rng: random.Random
) -> list[tuple[str | None, str]]:
    """Runs of 1-6 lines from randomly chosen ranks; each rank's own lines stay in order."""
    queues = [list(block) for block in blocks]
    merged: list[tuple[str | None, str]] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        take = rng.randint(1, 6)
        merged.extend(queue[:take])
        del queue[:take]
    return merged


def crash(log: Log, t: float, srv: Server, rng: random.Random) -> None:
    """A long prompt's first chunk runs every rank out of memory; the main process quits."""
    chunk = PrefillStats(
        new_seq=1,
        new_token=srv.chunked_prefill,
        cached_token=0,
        hit_rate=0.0,
        usage=srv.chunked_prefill / kv_tokens(srv),
        running=0,
        input_throughput=srv.chunked_prefill / rng.uniform(0.4, 0.6),
        iteration=0,
    )
    log.rank(t, 0, log.dialect.prefill(chunk))
    t += rng.uniform(0.3, 0.9)
    for tag, text in interleave([oom_traceback(log, rank, rng) for rank in range(srv.tp_size)], rng):
        log.emit(t, tag, text)
    log.main(
        t + rng.uniform(0.2, 0.6), "Received sigquit from a child process. It usually means the child failed."
    )


# ---------------------------------------------------------------------------------------
# The DeepSeek-V3 story

V3 = Model(
    path="/models/DeepSeek-V3",
    arch="DeepseekV3ForCausalLM",
    role="target",
    weights_gb=61.87,
    load_seconds=600.0,
    shards=163,
    kv_bytes_per_token=MLA_KV_BYTES,
    mla=True,
    graph_seconds=32.0,
    graph_gb=1.27,
)
V3_EAGLE3 = Model(
    path="/models/DeepSeek-V3-EAGLE3",
    arch="LlamaForCausalLMEagle3",
    role="draft",
    weights_gb=1.21,
    load_seconds=9.0,
    shards=1,
    kv_bytes_per_token=2 * 128 * 2,
    mla=False,
    graph_seconds=14.0,
    graph_gb=0.38,
)
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


def single_run(log: Log, srv: Server, work: Workload, seed: int, layers: tuple[int, ...] = ()) -> Log:
    """One server start and one serving phase; ``layers`` turns the EAGLE3_DEBUG prints on."""
    rng = random.Random(seed)
    hook = Eagle3Debug(layers, random.Random(seed + 1)) if layers else None
    ready = start_server(log, srv, rng, 0.0, hook)
    serve(log, srv, work, rng, ready + rng.uniform(3.0, 15.0), hook=hook)
    return log


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


# ---------------------------------------------------------------------------------------
# Era samples

OLD_ARGS = (  # keys a 2024 ServerArgs did not have yet
    *spec_args(None),
    "speculative_accept_threshold_single",
    "speculative_accept_threshold_acc",
    "model_impl",
    "page_size",
    "skip_server_warmup",
    "enable_dp_attention",
    "cuda_graph_bs",
    "reasoning_parser",
    "tool_call_parser",
)


def llama(path: str, weights_gb: float, kv_bytes: int, shards: int, load_seconds: float) -> Model:
    return Model(
        path=path,
        arch="LlamaForCausalLM",
        role="target",
        weights_gb=weights_gb,
        load_seconds=load_seconds,
        shards=shards,
        kv_bytes_per_token=kv_bytes,
        mla=False,
        graph_seconds=11.0,
        graph_gb=0.52,
    )


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


# ---------------------------------------------------------------------------------------
# Wrappers added by users' tooling

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


# ---------------------------------------------------------------------------------------
# vLLM


@dataclass(frozen=True)
class Drafts:
    """One logging interval of vLLM speculative decoding: accepted counts per draft position."""

    drafts: int
    accepted_at: tuple[int, ...]

    @property
    def accepted(self) -> int:
        return sum(self.accepted_at)

    @property
    def drafted(self) -> int:
        return self.drafts * len(self.accepted_at)

    @property
    def mean_len(self) -> float:
        return 1 + self.accepted / self.drafts


def sample_drafts(rng: random.Random, probs: Sequence[float], drafts: int) -> Drafts:
    counts = [round(drafts * p * rng.uniform(0.96, 1.04)) for p in probs]
    return Drafts(drafts, tuple(min(c, drafts) for c in counts))


def vllm_line(ts: datetime, where: str, msg: str, *, bracket: bool = True, proc: str = "") -> str:
    location = f"[{where}]" if bracket else f"{where}]"
    return f"{proc}INFO {ts:%m-%d %H:%M:%S} {location} {msg}"


def engine_v1(d: Drafts | None, seconds: float, prompt_tokens: int) -> str:
    emitted = 0 if d is None else d.accepted + d.drafts
    running = 0 if d is None else 1
    return (
        f"Engine 000: Avg prompt throughput: {prompt_tokens / seconds:.1f} tokens/s, "
        f"Avg generation throughput: {emitted / seconds:.1f} tokens/s, Running: {running} reqs, "
        f"Waiting: 0 reqs, GPU KV cache usage: {0.1 if d is None else 0.4:.1f}%, Prefix cache hit rate: 50.0%"
    )


def spec_older(d: Drafts | None) -> str:
    if d is None:
        return "SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens"
    return (
        f"SpecDecoding metrics: Draft acceptance rate: {100 * d.accepted / d.drafted:.1f}%, "
        f"Accepted: {d.accepted} tokens, Drafted: {d.drafted} tokens"
    )


def per_position(d: Drafts) -> str:
    return ", ".join(f"{count / d.drafts:.3f}" for count in d.accepted_at)


def spec_with_positions(d: Drafts) -> str:
    return (
        f"SpecDecoding metrics: Draft acceptance rate: {100 * d.accepted / d.drafted:.1f}%, "
        f"Mean acceptance length: {d.mean_len:.2f}, Accepted: {d.accepted} tokens, "
        f"Drafted: {d.drafted} tokens, Per-position acceptance rate: {per_position(d)}"
    )


def spec_current(d: Drafts, seconds: float) -> str:
    return (
        f"SpecDecoding metrics: Mean acceptance length: {d.mean_len:.2f}, "
        f"Accepted throughput: {d.accepted / seconds:.2f} tokens/s, "
        f"Drafted throughput: {d.drafted / seconds:.2f} tokens/s, Accepted: {d.accepted} tokens, "
        f"Drafted: {d.drafted} tokens, Per-position acceptance rate: {per_position(d)}, "
        f"Avg Draft acceptance rate: {100 * d.accepted / d.drafted:.1f}%"
    )


def vllm_v0(rng: random.Random) -> list[str]:
    """V0 engine (early 2025): cumulative ``Speculative metrics`` with system efficiency."""
    ts = datetime(2025, 2, 3, 23, 1, 50)
    lines = [vllm_line(ts, "api_server.py:712", "vLLM API server version 0.7.1", bracket=False)]
    total = Drafts(0, (0, 0, 0))
    for _ in range(6):
        ts += timedelta(seconds=5)
        d = sample_drafts(rng, (0.81, 0.61, 0.42), rng.randint(150, 170))
        total = Drafts(
            total.drafts + d.drafts, tuple(map(sum, zip(total.accepted_at, d.accepted_at, strict=True)))
        )
        emitted = total.accepted + total.drafts
        lines.append(
            vllm_line(
                ts,
                "metrics.py:455",
                (
                    f"Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {(d.accepted + d.drafts) / 5:.1f} "
                    "tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.4%, "
                    "CPU KV cache usage: 0.0%."
                ),
                bracket=False,
            )
        )
        lines.append(
            vllm_line(
                ts,
                "metrics.py:477",
                (
                    f"Speculative metrics: Draft acceptance rate: {total.accepted / total.drafted:.3f}, "
                    f"System efficiency: {emitted / (4 * total.drafts):.3f}, Number of speculative tokens: 3, "
                    f"Number of accepted tokens: {total.accepted}, Number of draft tokens: {total.drafted}, "
                    f"Number of emitted tokens: {emitted}."
                ),
                bracket=False,
            )
        )
    return lines


def vllm_v1(
    rng: random.Random, start: datetime, version: str, render: Callable[[Drafts], str], idle_after: int
) -> list[str]:
    """V1 engine, ``[file.py:N]`` locations, 10 s intervals; idle intervals print nan%."""
    lines = [vllm_line(start, "api_server.py:1081", f"vLLM API server version {version}")]
    for n in range(8):
        ts = start + timedelta(seconds=10 * (n + 1))
        d = sample_drafts(rng, (0.84, 0.63, 0.40), rng.randint(280, 320)) if n < idle_after else None
        prompt_tokens = 0 if d is None else rng.choice((0, 0, rng.randint(200, 3000)))
        lines.append(vllm_line(ts, "loggers.py:87", engine_v1(d, 10.0, prompt_tokens)))
        lines.append(vllm_line(ts, "metrics.py:53", spec_older(d) if d is None else render(d)))
    return lines


def vllm_current(rng: random.Random) -> list[str]:
    """Late 2025: ``(APIServer pid=N) `` before the level, mean acceptance length first."""
    api, core = "(APIServer pid=1234) ", "(EngineCore_DP0 pid=1301) "
    ts = datetime(2025, 10, 14, 9, 30, 2)
    lines = [
        vllm_line(ts, "api_server.py:1885", "vLLM API server version 0.11.0", proc=api),
        vllm_line(
            ts + timedelta(seconds=9),
            "gpu_model_runner.py:2602",
            "Model loading took 14.9917 GiB and 6.254125 seconds",
            proc=core,
        ),
    ]
    for _ in range(8):
        ts += timedelta(seconds=10)
        d = sample_drafts(rng, (0.812, 0.503, 0.195), rng.randint(290, 310))
        prompt_tokens = rng.choice((0, 0, rng.randint(200, 3000)))
        lines.append(vllm_line(ts, "loggers.py:123", engine_v1(d, 10.0, prompt_tokens), proc=api))
        lines.append(vllm_line(ts, "metrics.py:96", spec_current(d, 10.0), proc=api))
    return lines


def build_vllm() -> str:
    rng = random.Random(707)
    lines = vllm_v0(rng)
    lines += vllm_v1(rng, datetime(2025, 4, 2, 18, 3, 1), "0.8.2", spec_older, idle_after=5)
    lines += vllm_v1(rng, datetime(2025, 6, 18, 7, 41, 12), "0.9.1", spec_with_positions, idle_after=8)
    lines += vllm_current(rng)
    return as_text(lines)


# ---------------------------------------------------------------------------------------
# Output

BUILDERS: dict[str, Callable[[], str]] = {
    "baseline_tp8.log": build_baseline,
    EMBED_NAME: build_embed_capture,
    "eagle3_fixed.log": build_fixed,
    "sweep_and_crash.log": build_sweep,
    "era_2024_rank.log": build_era_2024_rank,
    "era_2024_gpu.log": build_era_2024_gpu,
    "era_2024_timeonly.log": build_era_2024_timeonly,
    "era_2025_dp_attention.log": build_era_2025_dp_attention,
    "era_2026_comma.log": build_era_2026_comma,
    "vllm_spec_decode.log": build_vllm,
    "wrappers.log": build_wrappers,
}


def write_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in BUILDERS.items():
        data = build().encode("utf-8")
        (out / name).write_bytes(data)
        written.append(out / name)
        if name == EMBED_NAME:
            (out / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
            written.append(out / f"{name}.gz")
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the sample SGLang logs (deterministic).")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="folder to write into (default: this script's folder)",
    )
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(f"{path.stat().st_size:>9}  {path}")


if __name__ == "__main__":
    main()
