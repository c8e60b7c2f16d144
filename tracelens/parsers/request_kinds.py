"""Sample lines of the request-log and metrics-endpoint kinds (`parsers/requests.py`,
`parsers/endpoint_metrics.py`), with the fields they must parse to: part of `kinds.SAMPLES`, each a test
(`tests/test_kinds.py`). Each group names the engine source its format comes from."""

from __future__ import annotations

import datetime as dt

from tracelens.parsers.sample import Sample
from tracelens.tables.names import SERVER_INFO_ACCEPT
from tracelens.tables.schema import C, Kind

REQUEST_SAMPLES: dict[str, tuple[Sample, ...]] = {
    # SGLang `python/sglang/srt/utils/request_logger.py` (2026; the 0.5.7 `Finish:` shape is the corpus' 062
    # log); `spec_*` keys from `TokenizerManager._calculate_spec_decoding_metrics`, the histogram since early 2026.
    Kind.REQUEST: (
        Sample(
            "[2026-02-09 14:38:45] Receive: obj=GenerateReqInput(validation_time=None, received_time=None, "
            "rid='8fe07d727051441bb48b84b89060a797', http_worker_ipc=None, text='The capital city of France is', "
            "sampling_params={'temperature': 0, 'max_new_tokens': 8}, return_logprob=False)",
            {C.LAYOUT: "sglang_text", C.EVENT: "received", C.RID: "8fe07d727051441bb48b84b89060a797"},
        ),
        Sample(
            "[2026-03-02 10:00:05 TP0] Finish: obj=GenerateReqInput(rid='a1', text='Say \\'meta_info\\': {', "
            "sampling_params={'max_new_tokens': 64}), out={'text': ' Paris.', 'output_ids': [12366, 13], "
            "'meta_info': {'id': 'a1', 'finish_reason': {'type': 'length', 'length': 64}, 'prompt_tokens': 7, "
            "'weight_version': 'default', 'total_retractions': 0, 'queue_time': 0.0022, "
            "'prefill_launch_latency': 0.0091, 'completion_tokens': 64, 'cached_tokens': 0, "
            "'spec_accept_rate': 0.6, 'spec_accept_length': 2.8, 'spec_accept_token_num': 41, "
            "'spec_draft_token_num': 69, 'spec_verify_ct': 23, 'spec_accept_histogram': [2, 4, 7, 10], "
            "'e2e_latency': 0.41}}",
            {
                C.EVENT: "finished",
                C.RID: "a1",
                C.TP: 0,
                C.PROMPT_TOKENS: 7,
                C.COMPLETION_TOKENS: 64,
                C.FINISH_REASON: "length",
                C.SPEC_VERIFY_CT: 23,
                C.SPEC_ACCEPT_LENGTH: 2.8,
                C.SPEC_ACCEPT_RATE: 0.6,
                C.SPEC_ACCEPTED_TOKENS: 41,
                C.SPEC_DRAFT_TOKENS: 69,
                C.SPEC_ACCEPT_HISTOGRAM: [2, 4, 7, 10],
                C.E2E_LATENCY_S: 0.41,
                C.QUEUE_TIME_S: 0.0022,
            },
        ),
        Sample(
            '{"timestamp": "2026-03-02T10:00:05.123456", "event": "request.finished", "rid": "b2", '
            '"obj": {"rid": "b2", "text": "hi", "sampling_params": {"max_new_tokens": 16}}, '
            '"out": {"text": "hello", "meta_info": {"id": "b2", "finish_reason": {"type": "stop", "matched": 2}, '
            '"prompt_tokens": 3, "completion_tokens": 16, "cached_tokens": 1, "e2e_latency": 0.2, '
            '"spec_accept_rate": 0.5, "spec_accept_length": 2.0, "spec_accept_token_num": 8, '
            '"spec_draft_token_num": 16, "spec_verify_ct": 8, "spec_accept_histogram": [3, 2, 2, 1]}}}',
            {
                C.LAYOUT: "sglang_json",
                C.EVENT: "finished",
                C.RID: "b2",
                C.TS: dt.datetime(2026, 3, 2, 10, 0, 5, 123456),
                C.FINISH_REASON: "stop",
                C.SPEC_VERIFY_CT: 8,
                C.SPEC_ACCEPT_HISTOGRAM: [3, 2, 2, 1],
            },
        ),
        Sample(
            '{"timestamp": "2026-03-02T10:00:04", "event": "request.received", "rid": "b2", '
            '"obj": {"rid": "b2", "text": "hi"}}',
            {C.LAYOUT: "sglang_json", C.EVENT: "received", C.RID: "b2", C.SPEC_VERIFY_CT: None},
        ),
        # `python/sglang/srt/observability/request_metrics_exporter.py` (2026): request_parameters + meta_info
        Sample(
            '{"request_parameters": "{\\"rid\\": \\"c3\\", \\"stream\\": false}", "id": "c3", '
            '"finish_reason": {"type": "length", "length": 32}, "prompt_tokens": 12, "completion_tokens": 32, '
            '"cached_tokens": 0, "queue_time": 0.001, "prefill_launch_latency": 0.02, "e2e_latency": 0.9, '
            '"request_received_ts": 1772445600.5, "spec_verify_ct": 16, "spec_accept_length": 2.0, '
            '"spec_accept_rate": 0.333, "spec_accept_histogram": [6, 6, 4, 0]}',
            {
                C.LAYOUT: "sglang_metrics_file",
                C.EVENT: "finished",
                C.RID: "c3",
                C.TS: dt.datetime(2026, 3, 2, 10, 0, 0, 500000),
                C.PREFILL_LAUNCH_LATENCY_S: 0.02,
                C.SPEC_ACCEPT_HISTOGRAM: [6, 6, 4, 0],
            },
        ),
        # vLLM `--per-request-spec-decode-metrics detailed` (2026): `metrics.speculative_decoding` of a response
        Sample(
            '{"id": "cmpl-9f", "object": "text_completion", "created": 1772445600, "model": "m", '
            '"choices": [{"index": 0, "text": "x", "finish_reason": "length"}], '
            '"usage": {"prompt_tokens": 11, "completion_tokens": 24, "total_tokens": 35}, '
            '"metrics": {"speculative_decoding": {"num_spec_steps": 10, "num_draft_tokens": 30, '
            '"num_accepted_draft_tokens": 14, "mean_acceptance_length": 2.4, "draft_acceptance_rate": 0.4667, '
            '"acceptance_histogram": [3, 2, 2, 3], "per_step_accepted": [3, 0, 1, 2, 3, 1, 0, 3, 1, 0], '
            '"per_step_drafted": [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]}}}',
            {
                C.LAYOUT: "vllm_response",
                C.RID: "cmpl-9f",
                C.PROMPT_TOKENS: 11,
                C.COMPLETION_TOKENS: 24,
                C.FINISH_REASON: "length",
                C.SPEC_VERIFY_CT: 10,
                C.SPEC_ACCEPTED_TOKENS: 14,
                C.SPEC_DRAFT_TOKENS: 30,
                C.SPEC_ACCEPT_LENGTH: 2.4,
                C.SPEC_ACCEPT_HISTOGRAM: [3, 2, 2, 3],
                C.TS: dt.datetime(2026, 3, 2, 10, 0, 0),
            },
        ),
    ),
    # Prometheus text exposition (`prometheus_client`); SGLang `python/sglang/srt/metrics/collector.py`,
    # vLLM `vllm/v1/spec_decode/metrics.py` (2026); SGLang `/server_info` (`http_server.get_server_info`).
    Kind.ENDPOINT_METRIC: (
        Sample(
            'sglang:spec_accept_length{engine_type="unified",model_name="meta-llama/Llama-3.1-8B",'
            'pp_rank="0",tp_rank="0"} 2.83',
            {
                C.METRIC_ITEM: "sample",
                C.METRIC_NAME: "sglang:spec_accept_length",
                C.METRIC_VALUE: 2.83,
                C.METRIC_POSITION: None,
                C.METRIC_LABELS: [
                    {C.KEY: "engine_type", C.VALUE: "unified"},
                    {C.KEY: "model_name", C.VALUE: "meta-llama/Llama-3.1-8B"},
                    {C.KEY: "pp_rank", C.VALUE: "0"},
                    {C.KEY: "tp_rank", C.VALUE: "0"},
                ],
            },
        ),
        Sample(
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 1532.0',
            {C.METRIC_NAME: "vllm:spec_decode_num_accepted_tokens_per_pos_total", C.METRIC_POSITION: 2},
        ),
        Sample("vllm:spec_decode_num_drafts_total 4096.0", {C.METRIC_VALUE: 4096.0, C.METRIC_LABELS: None}),
        Sample(
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            {C.METRIC_ITEM: "type", C.METRIC_NAME: "vllm:spec_decode_num_drafts_total", C.DETAIL: "counter"},
        ),
        Sample(
            '{"model_path":"m","speculative_algorithm":"EAGLE3","speculative_num_steps":3,'
            '"internal_states":[{"avg_spec_accept_length":2.5,"last_gen_throughput":812.3},'
            '{"avg_spec_accept_length":3.0,"last_gen_throughput":790.1}],"version":"0.5.9"}',
            {
                C.METRIC_ITEM: "server_info",
                C.METRIC_NAME: SERVER_INFO_ACCEPT,
                C.METRIC_VALUE: 2.75,
                C.SPEC_NUM_STEPS: 3,
            },
        ),
        Sample(
            '[2026-03-02 10:05:00] {"model_path": "m", "speculative_num_steps": 3, "internal_states": '
            '[{"avg_spec_accept_length": 2.1, "speculative_num_steps": 2}]}',
            {C.TS: dt.datetime(2026, 3, 2, 10, 5), C.METRIC_VALUE: 2.1, C.SPEC_NUM_STEPS: 2},
        ),
    ),
}
