"""A realistic, deterministic EAGLE-3 debugging-session log of any size, for the throughput benchmark.

The mix follows what such a session writes: server restarts (`server_args=` and the startup lines),
then mostly Decode/Prefill statistics from several TP ranks, hand-added `EAGLE3_DEBUG[...]` prints
(with and without SGLang's prefix), HTTP access lines, warnings (SGLang's own, Python's, vLLM-style),
tqdm bars, and now and then a crash: interleaved tracebacks from every rank. Same size and seed, same
bytes.

`generate_mix` writes the second bench log, the mix of issue 11: by lines 60% `Decode batch`, 10%
`Prefill batch`, 20% `EAGLE3_DEBUG`, 10% access lines, and a few warnings and tracebacks.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

RANKS = 8
_START = dt.datetime(2026, 11, 20, 9, 0, 0)


def _server_args(run: int, steps: int) -> str:
    args = [
        "model_path='/models/DeepSeek-V3'",
        "tokenizer_path='/models/DeepSeek-V3'",
        "tokenizer_mode='auto'",
        "trust_remote_code=True",
        "dtype='auto'",
        "kv_cache_dtype='auto'",
        "mem_fraction_static=0.82",
        f"tp_size={RANKS}",
        "dp_size=1",
        "ep_size=1",
        "speculative_algorithm='EAGLE3'",
        "speculative_draft_model_path='/models/DeepSeek-V3-EAGLE3'",
        f"speculative_num_steps={steps}",
        "speculative_eagle_topk=1",
        f"speculative_num_draft_tokens={steps + 1}",
        "disable_cuda_graph=False",
        "enable_dp_attention=False",
        f"random_seed={run}",
        *(f"flag_{i}=None" for i in range(120)),
    ]
    return "server_args=ServerArgs(" + ", ".join(args) + ")"


def _startup(ts: str, run: int, steps: int) -> list[str]:
    lines = [f"[{ts}] {_server_args(run, steps)}"]
    for tp in range(RANKS):
        p = f"[{ts} TP{tp}] "
        lines += [
            p + "Init torch distributed begin.",
            p + "Init torch distributed ends. mem usage=0.45 GB",
            p + "Load weight begin. avail mem=78.12 GB",
            p + "EAGLE3_DEBUG[dsv2] set aux layers: layer_ids=[2, 30, 58], layers_to_capture=[3, 31, 59]",
            p
            + "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=16.25 GB, mem usage=61.87 GB.",
            p + "KV Cache is allocated. #tokens: 94734, KV size: 6.20 GB",
            p + "Memory pool end. avail mem=10.04 GB",
            p + "Capture cuda graph begin. This can take up to several minutes. avail mem=9.80 GB",
            p + "Capture cuda graph end. Time elapsed: 31.42 s. mem usage=1.20 GB. avail mem=8.60 GB.",
            p
            + "max_total_num_tokens=94734, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=163840",
        ]
    lines += [
        "Loading safetensors checkpoint shards: 100% Completed | 163/163 [02:30<00:00,  1.09it/s]",
        f"[{ts}] INFO:     Started server process [{4000 + run}]",
        f"[{ts}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        f"[{ts}] The server is fired up and ready to roll!",
    ]
    return lines


def _crash(ts: str) -> list[str]:
    lines = []
    for tp in range(RANKS):
        lines += [
            f"[{ts} TP{tp}] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process',
            "    scheduler.event_loop_normal()",
            '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 412, in forward_batch_speculative_generation',
            "    logits_output, next_token_ids = self.draft(batch)",
        ]
    lines += [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB",
        "",
        f"[{ts}] Received sigquit from a child process. It usually means the child failed.",
    ]
    return lines


def _decode_line(p: str, rng: random.Random, running: int, steps: int) -> str:
    accept = 1.5 + rng.random() * 2
    return (
        f"{p}Decode batch, #running-req: {running}, #token: {running * rng.randint(300, 900)}, "
        f"token usage: {rng.random():.2f}, accept len: {accept:.2f}, accept rate: {accept / (steps + 1):.2f}, "
        f"cuda graph: True, gen throughput (token/s): {rng.uniform(40, 120):.2f}, #queue-req: {rng.randint(0, 5)}, "
    )


def _prefill_line(p: str, rng: random.Random, running: int) -> str:
    return (
        f"{p}Prefill batch, #new-seq: 1, #new-token: {rng.randint(10, 4000)}, #cached-token: {rng.randint(0, 500)}, "
        f"token usage: {rng.random():.2f}, #running-req: {running}, #queue-req: 0, "
    )


def generate(path: Path, size: int, seed: int = 3, run_seconds: int = 40_000) -> None:
    """Write about ``size`` bytes of log to ``path``: a server start every ``run_seconds`` seconds of
    log time (a huge ``run_seconds`` makes one long run, as a production server writes)."""
    rng = random.Random(seed)
    written = 0
    second = 0
    run = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        while written < size:
            if second % run_seconds == 0:
                run += 1
                steps = 2 + run % 4
                chunk = _startup(
                    (_START + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S"), run, steps
                )
                fh.write("\n".join(chunk) + "\n")
                written += sum(len(c) + 1 for c in chunk)
            ts = (_START + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")
            out: list[str] = []
            for tp in range(RANKS):
                p = f"[{ts} TP{tp}] "
                running = rng.randint(1, 48)
                out.append(_decode_line(p, rng, running, steps))
                if rng.random() < 0.15:
                    out.append(_prefill_line(p, rng, running))
                if tp == 0:
                    for layer in (2, 30, 58):
                        out.append(
                            f"EAGLE3_DEBUG[dsv2] aux capture: layer_id={layer} shape=torch.Size([1, 7168]) norm={rng.uniform(5, 50):.4f}"
                        )
                    out.append(
                        f"{p}EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), torch.Size([1, 7168])]"
                    )
                    out.append(
                        "EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), torch.Size([1, 7168])]"
                    )
                    out.append(
                        f"{p}EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 21504]) norm={rng.uniform(40, 70):.2f}"
                    )
            for _ in range(rng.randint(1, 4)):
                out.append(
                    f'[{ts}] INFO:     10.0.{rng.randint(0, 9)}.{rng.randint(1, 250)}:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK'
                )
            roll = rng.random()
            if roll < 0.01:
                out.append(
                    f"[{ts} TP{rng.randint(0, 7)}] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4321 -> 0.5000"
                )
            elif roll < 0.02:
                out.append(
                    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: UserWarning: pynvml is deprecated"
                )
            elif roll < 0.03:
                out.append(
                    f"WARNING 11-20 09:{second % 60:02d}:00 [scheduler.py:88] Prefill is slow for this batch"
                )
            elif roll < 0.035:
                out.append(
                    f"[{ts}] The following error message 'operation scheduled before its operands' can be ignored."
                )
            if second % 9_000 == 8_999:
                out += _crash(ts)
            text = "\n".join(out) + "\n"
            fh.write(text)
            written += len(text)
            second += 1


# The issue-11 mix, by lines: (share, kind). What is left (about 0.3%) is warnings and crashes.
MIX = ((0.60, "decode"), (0.10, "prefill"), (0.20, "debug"), (0.097, "access"))


def _mix_line(kind: str, rng: random.Random, ts: str, steps: int) -> str:
    tp = rng.randrange(RANKS)
    p = f"[{ts} TP{tp}] "
    running = rng.randint(1, 48)
    if kind == "decode":
        return _decode_line(p, rng, running, steps)
    if kind == "prefill":
        return _prefill_line(p, rng, running)
    if kind == "debug":
        which = rng.randrange(4)
        if which == 0:
            return f"EAGLE3_DEBUG[dsv2] aux capture: layer_id={rng.choice((2, 30, 58))} shape=torch.Size([1, 7168]) norm={rng.uniform(5, 50):.4f}"
        if which == 1:
            return f"{p}EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), torch.Size([1, 7168])]"
        if which == 2:
            return "EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), torch.Size([1, 7168])]"
        return f"{p}EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 21504]) norm={rng.uniform(40, 70):.2f}"
    return f'[{ts}] INFO:     10.0.{rng.randint(0, 9)}.{rng.randint(1, 250)}:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK'


def generate_mix(path: Path, size: int, seed: int = 5) -> None:
    """Write about ``size`` bytes of the issue-11 mix to ``path``: a server start now and then, then
    lines drawn by the shares of `MIX`, the rest warnings and, rarely, a crash from every rank."""
    rng = random.Random(seed)
    kinds = [kind for _, kind in MIX]
    weights = [share for share, _ in MIX]
    written = 0
    second = 0
    run = 0
    steps = 3
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        while written < size:
            ts = (_START + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")
            out: list[str] = []
            if second % 40_000 == 0:
                run += 1
                steps = 2 + run % 4
                out += _startup(ts, run, steps)
            out += [_mix_line(kind, rng, ts, steps) for kind in rng.choices(kinds, weights, k=20)]
            roll = rng.random()
            if roll < 0.04:
                out.append(
                    f"[{ts} TP{rng.randrange(RANKS)}] WARNING: Decode out of memory happened. #retracted_reqs: 2"
                )
            elif roll < 0.06:
                out.append(
                    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: UserWarning: pynvml is deprecated"
                )
            if second % 20_000 == 19_999:
                out += _crash(ts)
            text = "\n".join(out) + "\n"
            fh.write(text)
            written += len(text)
            second += 1
