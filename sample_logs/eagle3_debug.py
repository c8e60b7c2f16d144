"""Hand-added ``EAGLE3_DEBUG[...]`` prints: what an engineer chasing the aux layer ids added to the
target (dsv2), the logits processor and the draft."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .config import HIDDEN_SIZE, Spec
from .log import Log

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
