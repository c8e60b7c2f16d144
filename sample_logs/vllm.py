"""``vllm_spec_decode.log``: vLLM engine and speculative-decoding metrics in each layout (V0
``Speculative metrics``, V1 ``Draft acceptance rate`` with and without per-position rates, and the
current ``Mean acceptance length`` first layout with ``(APIServer pid=N) ``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from .log import as_text


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
