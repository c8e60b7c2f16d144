"""What a server start is made of: the models it loads, its parallelism and memory, the traffic it
serves, and the ``server_args`` line it prints first. Shared by every SGLang story."""

from __future__ import annotations

from dataclasses import dataclass, field

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
