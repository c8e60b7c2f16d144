"""The failure chain on more shapes users paste into issues: torch's per-rank line prefix, NIXL/UCX
transfer errors, a rank reporting another rank's failure, workers that stop answering vLLM's engine,
a router's errors, one request's failure in vLLM's API server. Each test is a small log in the form
the programs print; the lines that name a failure are real lines from users' logs."""

from __future__ import annotations

from test_chain import broken, only
from test_detectors import run


def test_torchs_per_rank_line_prefix_is_peeled() -> None:
    # torch (2.2+) prefixes each line of a rank's uncaught exception with `[rankN]: `: the traceback
    # under it is the crash, and the worker stopped by SIGTERM (-15) after it is its teardown
    lines = [
        "INFO 07-13 02:56:20 llm_engine.py:100] Initializing an LLM engine (v0.5.1) with config: model='m'",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/x/vllm/model_executor/layers/linear.py", line 300, in __init__',
        "[rank0]:     divide(self.output_size, tp_size)",
        "[rank0]: AssertionError: 32768 is not divisible by 3",
        "ERROR 07-13 02:56:30 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 382811 died, exit "
        "code: -15",
    ]
    verdict = broken(lines)
    assert "AssertionError: 32768 is not divisible by 3" in verdict.headline, verdict.headline

