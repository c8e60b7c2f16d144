"""Headlines of pastes that hold less than a whole log: they never contradict the lines they have.
The lines are real lines from users' logs in issues."""

from __future__ import annotations

from test_chain import only
from test_detectors import run


def test_unprefixed_batch_lines_beside_a_request_log_are_server_lines() -> None:
    # a logging config without SGLang's prefix: request-log lines and prefill batch lines, no decode line
    lines = [
        "Finish: obj=GenerateReqInput(rid='cKuj', sampling_params={'temperature': 0.1, 'max_new_tokens': 500}, "
        "stream=True, priority=35), out={'meta_info': {'finish_reason': {'type': 'stop'}, 'prompt_tokens': 831, "
        "'completion_tokens': 49, 'e2e_latency': 12.09}}",
        "Receive: obj=GenerateReqInput(rid='fKuj', sampling_params={'temperature': 0.8}, stream=False, priority=35)",
        '127.0.0.1:51620 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "Prefill batch, #new-seq: 1, #new-token: 960, #cached-token: 0, token usage: 0.11, #running-req: 7, "
        "#queue-req: 1, input throughput (token/s): 432.99, cuda graph: False",
    ]
    verdict = only(run(lines))
    assert verdict.status == "healthy", verdict.headline
    assert "no server lines" not in verdict.headline, verdict.headline
