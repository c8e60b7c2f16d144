"""The shape of a failure catalog entry (`catalog`) and how it weighs in a verdict."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Weight(StrEnum):
    """How an event weighs in its run's verdict."""

    FATAL = "fatal"  # stops a process: the earliest one of a run is its cause
    ERROR = "error"  # the server goes on, worse off (NaN logits, failed transfers): degraded
    CONSEQUENCE = "consequence"  # what a failure elsewhere sets off: the cause only when nothing else shows
    SHUTDOWN = "shutdown"  # a graceful stop was asked for: what follows it is the stop, not a crash
    NOISE = "noise"  # never a failure (monitor threads after a stop, leaked semaphores)
    NOTE = "note"  # a detail another failure may explain (NCCL WARN): never a cause or a status


@dataclass(frozen=True)
class Failure:
    code: str  # stable id, used in the verdict's cause codes
    name: str  # in words a user would search for
    component: str
    weight: Weight
    pattern: str
    samples: tuple[str, ...]
    fix: str | None = None
    # a timeout waiting on another process (a collective, a rendezvous): the cause only when no other
    # fatal event shows that process's own failure
    waits: bool = False
    # the fix in vLLM's own flags, where they differ from SGLang's (`fix` is SGLang's)
    vllm_fix: str | None = None
    # a failure that reports another (a warm-up request that failed): a named error carried in the
    # same traceback is the cause, the wrapper what it explains
    wraps: bool = False
    # a sign that the serving loop stopped: the headline says the run hung
    hangs: bool = False
    # an event only once the run served: at start-up the same line is a slow step (a long compile)
    serving_only: bool = False
    # a failure whose cause is named in the lines right after it (NCCL's `Last error:` trailer: `Cuda
    # failure 'out of memory'`): a named fatal event there is the cause, this one what it explains
    trailer: bool = False
    # where the line names the failing rank in its words, not in a prefix (vLLM's `Worker proc
    # VllmWorker-1 died`): a pattern whose first group is the rank, read when the line has none
    rank_in_text: str | None = None

    def fix_for(self, engine: str) -> str | None:
        """The fix in the flags of ``engine`` (`sglang` or `vllm`)."""
        return self.vllm_fix if engine == "vllm" and self.vllm_fix else self.fix
