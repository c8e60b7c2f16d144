"""Whether a run decodes speculatively, and with what: one decision (`runs.with_speculation`) that every
view reads, so `summary`, `compare`, the report and the live screen never disagree about a run.

The server args name the algorithm and its settings. A log that starts after them (a tail, a rotated
file) or whose args line was cut still shows a drafting server by its stats lines: SGLang prints an
accept len in its decode lines only when it drafts, vLLM its spec-decoding metrics lines. Such a run is
speculative with its algorithm unknown. No polars here: `formatting` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracelens.tables.names import A, C

SERVER_ARGS = "server args"
DECODE_LINES = "decode lines"
METRICS_LINES = "metrics lines"
# The places a run's acceptance comes from when it has no decode or metrics lines (`A.RATE_FROM`), most
# exact first: vLLM's counters (the server's own totals), the requests (request logs, per-request metrics
# files, vLLM responses: pooled over those logged), SGLang's gauges, `/server_info`'s mean. A run with
# figures from one of them drafts, and says so by it.
FROM_COUNTERS = "/metrics counters"
FROM_REQUESTS = "requests"
FROM_GAUGES = "/metrics gauges"
FROM_SERVER_INFO = "/server_info"
LINES = (DECODE_LINES, METRICS_LINES)

# (summary JSON key, run column) of the speculative settings
SPEC_PARTS = (
    ("num_steps", C.SPEC_NUM_STEPS),
    ("eagle_topk", C.SPEC_EAGLE_TOPK),
    ("num_draft_tokens", C.SPEC_NUM_DRAFT_TOKENS),
)


def speculative_spec(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The summary JSON's `speculative` of a row of `Analysis.runs`: algorithm, settings, draft model and
    `seen_in` (what says the run drafts: server args, decode lines or metrics lines); None when it
    does not draft."""
    if not run.get(A.SPECULATIVE):
        return None
    spec: dict[str, Any] = {"algorithm": run.get(C.SPEC_ALGORITHM)}
    spec |= {key: run.get(column) for key, column in SPEC_PARTS}
    spec["draft_model"] = run.get(C.SPEC_DRAFT_MODEL)
    spec["seen_in"] = run.get(A.SPECULATIVE_FROM)
    return spec
