"""How one SGLang release words each record: the batch statistics a scheduler prints, and one
``Dialect`` per release (late-2025/2026 in the base class, older and newer releases as subclasses)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .config import GIB, Model


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
    prefill_keys: tuple[str, ...] = (
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
    prefill_keys: tuple[str, ...] = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "token usage",
        "#running-req",
        "#queue-req",
    )
    decode_keys: tuple[str, ...] = (
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
    prefill_keys: tuple[str, ...] = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "cache hit rate",
        "token usage",
        "#running-req",
        "#queue-req",
    )
    decode_keys: tuple[str, ...] = (
        "#running-req",
        "#token",
        "token usage",
        "gen throughput (token/s)",
        "#queue-req",
    )


class Dialect2024Sep(Dialect2025Mar):
    """September 2024 (v0.3.0): time-only stamps, uvicorn lines unprefixed, fewer start lines."""

    time_format = "%H:%M:%S"
    uvicorn_prefixed = False
    limits_on_all_ranks = True
    prefill_keys: tuple[str, ...] = (
        "#new-seq",
        "#new-token",
        "#cached-token",
        "cache hit rate",
        "#running-req",
        "#queue-req",
    )

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

    decode_keys: tuple[str, ...] = ("#running-req", "#token", "token usage", "#queue-req")

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
