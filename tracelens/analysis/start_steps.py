"""The step of a start a failure struck in, said in words: from a traceback's frames (the deepest frame
that is a step's own function: a cut paste still names it) or, with no frames, from the last start-up
milestone the log printed before the failure (`startup.STOPPED_AT`'s words). Each step is data: the
functions SGLang and vLLM run it in, and its words."""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from tracelens.tables.first_match import first_match


class StartStep(NamedTuple):
    functions: str  # a frame's function name (`in load_weights`), leading underscores taken off
    words: str  # the step as a headline says it, after "at start-up"
    sample: str  # a frame line of the step, as SGLang or vLLM prints it (a test reads it)


# Deepest first wins, so a step run inside another (graph capture inside vLLM's warm-up, a profile run
# inside KV sizing) is named by its own; the order here only breaks ties on one frame.
START_STEPS: tuple[StartStep, ...] = (
    StartStep(
        r"^_*(?:load_model|load_weights|get_model|load_weights_and_postprocess|download_model|"
        r"prepare_weights|load_checkpoint\w*)$",
        "during weight loading",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 361, in load_model',
    ),
    StartStep(
        r"^_*(?:init_cuda_graphs|capture_model|capture_one_batch_size|capture_graph\w*|capture)$",
        "during CUDA graph capture",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 392, in '
        "capture_one_batch_size",
    ),
    StartStep(
        r"^_*(?:initialize_kv_cache\w*|determine_available_memory|determine_num_available_blocks|profile_run|"
        r"dummy_sampler_run|init_memory_pool|profile_max_num_token)$",
        "while sizing the KV cache",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 240, in _initialize_kv_caches',
    ),
    StartStep(
        r"^_*(?:init_distributed_environment|initialize_model_parallel|init_torch_distributed|"
        r"init_process_group|init_worker_distributed_environment|ensure_model_parallel_initialized)$",
        "during distributed init",
        '  File "/sgl-workspace/sglang/python/sglang/srt/distributed/parallel_state.py", line 1090, in '
        "init_distributed_environment",
    ),
    StartStep(
        r"^_*(?:init_device|init_device_env)$",
        "while setting up the device",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 166, in init_device',
    ),
    StartStep(
        r"^_*(?:init_worker|init_workers\w*|init_executor)$",
        "while starting the workers",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker_base.py", line 597, in init_worker',
    ),
    StartStep(
        r"^_*(?:compile_or_warm_up_model|wait_and_warmup|execute_server_warmup|warmup\w*)$",
        "during warm-up",
        '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 1125, in _wait_and_warmup',
    ),
)


def frame_step(function: pl.Expr) -> pl.Expr:
    """The step a frame's function (null for a line that is no frame) is its own, in words, else null."""
    return first_match((function.str.contains(s.functions), pl.lit(s.words)) for s in START_STEPS)
