"""A crash: a long prompt runs every rank out of memory, the ranks' tracebacks interleave, and the
main process prints its sigquit line."""

from __future__ import annotations

import random

from .config import Server, kv_tokens
from .dialects import PrefillStats
from .log import Log

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
