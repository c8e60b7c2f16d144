"""Request logs and metrics-endpoint snapshots into `requests` and `endpoint_metrics`, nothing lost.

Every file here is written in the exact format of the engine code that writes it (2026 sources):

- SGLang `python/sglang/srt/utils/request_logger.py` (`RequestLogger`): text `Receive: obj=` / `Finish: obj=`
  through the server's logger, or with `--log-requests-format json` `json.dumps({"timestamp":
  datetime.now().isoformat(), "event": ..., "rid": ..., "obj": ..., "out": ...}, ensure_ascii=False)` through a
  `%(message)s` handler, to stdout or to `{hostname}_{rank}.log` under a folder (`TimedRotatingFileHandler`,
  `when="H"`: rotated files get the suffix `.%Y-%m-%d_%H`).
- SGLang `python/sglang/srt/managers/tokenizer_manager.py` (`_calculate_spec_decoding_metrics`): the
  `meta_info` keys `spec_accept_rate`, `spec_accept_length`, `spec_accept_token_num`, `spec_draft_token_num`,
  `spec_verify_ct`, and `spec_accept_histogram` (early 2026).
- SGLang `python/sglang/srt/observability/request_metrics_exporter.py` (`FileRequestMetricsExporter`):
  `json.dump({"request_parameters": json.dumps(params), **meta_info})` + newline per request, in
  `sglang-request-metrics-%Y%m%d_%H.log`.
- vLLM 2026 `--per-request-spec-decode-metrics detailed`: `response["metrics"]["speculative_decoding"]`
  (its e2e test checks `num_spec_steps == sum(acceptance_histogram)` and the other identities used below);
  a streamed response carries it in its last `data: {...}` chunk.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from tracelens.engine.ingest import parse_paths, parse_text
from tracelens.tables.accounting import reconcile
from tracelens.tables.schema import C, Kind, T


def _meta(rid: str, histogram: list[int], completion: int) -> dict[str, object]:
    """meta_info as SGLang's tokenizer manager builds it for a finished speculative request (topk 1, k=3)."""
    verify = sum(histogram)
    accepted = sum(i * n for i, n in enumerate(histogram))
    draft = verify * 3  # spec_verify_ct * (speculative_num_draft_tokens - 1)
    return {
        "id": rid,
        "finish_reason": {"type": "length", "length": completion},
        "prompt_tokens": 21,
        "weight_version": "default",
        "num_retractions": 0,
        "completion_tokens": completion,
        "cached_tokens": 0,
        "e2e_latency": 0.5,
        "spec_accept_rate": accepted / draft,
        "spec_accept_length": completion / verify,
        "spec_accept_token_num": accepted,
        "spec_draft_token_num": draft,
        "spec_verify_ct": verify,
        "spec_accept_histogram": histogram,
    }


def _json_event(event: str, rid: str, stamp: str, meta: dict[str, object] | None = None) -> str:
    data: dict[str, object] = {
        "rid": rid,
        "obj": {"rid": rid, "text": "Traceback (most recent call last) ünï"},
    }
    if meta is not None:
        data["out"] = {"text": '"POST /generate HTTP/1.1" 200', "output_ids": [1, 2], "meta_info": meta}
    return json.dumps({"timestamp": stamp, "event": event, **data}, ensure_ascii=False)


def _assert_accounted(paths: list[Path]) -> None:
    tables = parse_paths(paths)
    expected = {str(p): p.read_bytes().count(b"\n") for p in paths}
    result = reconcile(tables, expected)
    assert result.ok, result.problems


def test_a_folder_of_rotated_per_rank_json_request_logs(tmp_path: Path) -> None:
    folder = tmp_path / "requests"
    folder.mkdir()
    files = {
        "node1_0.log.2026-03-02_09": [
            _json_event("request.received", "r1", "2026-03-02T09:59:58.000001"),
            _json_event("request.finished", "r1", "2026-03-02T09:59:59.5", _meta("r1", [1, 2, 3, 4], 30)),
        ],
        "node1_0.log": [_json_event("request.received", "r2", "2026-03-02T10:00:00")],
        "node1_1.log": [
            _json_event("request.finished", "r2", "2026-03-02T10:00:01", _meta("r2", [5, 1, 0, 0], 7))
        ],
    }
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    tables = parse_paths([folder])
    requests = tables[T.REQUESTS].sort(C.TS)
    assert requests[C.LAYOUT].unique().to_list() == ["sglang_json"]
    assert requests[C.EVENT].to_list() == ["received", "finished", "received", "finished"]
    assert requests[C.RID].to_list() == ["r1", "r1", "r2", "r2"]
    finished = requests.filter(pl.col(C.EVENT) == "finished")
    assert finished[C.SPEC_ACCEPT_HISTOGRAM].to_list() == [[1, 2, 3, 4], [5, 1, 0, 0]]
    assert finished[C.SPEC_VERIFY_CT].to_list() == [10, 6]
    assert finished[C.SPEC_ACCEPTED_TOKENS].to_list() == [20, 1]
    # A prompt that holds a traceback banner and an access line stays a request line.
    assert tables[T.FAULTS].height == 0 and tables[T.HTTP].height == 0
    _assert_accounted(sorted(folder.iterdir()))


def test_text_and_json_request_lines_inside_a_server_log(tmp_path: Path) -> None:
    meta = _meta("t1", [0, 1, 1, 6], 29)
    out = {"text": " Paris.", "output_ids": [12366, 13], "meta_info": meta}
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-03-02 10:00:00] server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE3', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4)\n"
        "[2026-03-02 10:00:01] Receive: obj=GenerateReqInput(rid='t1', text=\"Finish: obj= 'meta_info': {\")\n"
        "[2026-03-02 10:00:02 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.01, accept len: 3.1, "
        "accept rate: 0.78, cuda graph: True, gen throughput (token/s): 120.5, #queue-req: 0\n"
        f"[2026-03-02 10:00:03] Finish: obj=GenerateReqInput(rid='t1', text='x'), out={out!r}\n"
        + _json_event("request.finished", "j1", "2026-03-02T10:00:04", _meta("j1", [2, 2, 0, 0], 6))
        + "\n",
        encoding="utf-8",
    )
    tables = parse_paths([log])
    requests = tables[T.REQUESTS]
    assert requests[C.LAYOUT].to_list() == ["sglang_text", "sglang_text", "sglang_json"]
    assert requests[C.RUN].to_list() == [1, 1, 1]  # joined to the run the server_args line started
    text_finish = requests.row(1, named=True)
    assert text_finish[C.SPEC_ACCEPT_HISTOGRAM] == [0, 1, 1, 6]
    assert text_finish[C.SPEC_VERIFY_CT] == 8
    assert text_finish[C.SPEC_ACCEPT_LENGTH] == 29 / 8
    assert text_finish[C.RID] == "t1"
    _assert_accounted([log])


def test_the_per_request_metrics_file(tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    path = folder / "sglang-request-metrics-20260302_10.log"
    with path.open("w", encoding="utf-8") as fh:
        for i, hist in enumerate(([3, 3, 2, 2], [9, 1, 0, 0])):
            params = {"rid": f"m{i}", "sampling_params": {"max_new_tokens": 16}, "stream": False}
            record = {"request_parameters": json.dumps(params), **_meta(f"m{i}", hist, 16)}
            record["request_received_ts"] = 1772445600.0 + i
            json.dump(record, fh)
            fh.write("\n")
    tables = parse_paths([folder])
    requests = tables[T.REQUESTS]
    assert requests[C.LAYOUT].to_list() == ["sglang_metrics_file"] * 2
    assert requests[C.EVENT].to_list() == ["finished"] * 2
    assert requests[C.RID].to_list() == ["m0", "m1"]
    assert requests[C.TS].is_not_null().all()
    assert requests[C.SPEC_ACCEPT_HISTOGRAM].to_list() == [[3, 3, 2, 2], [9, 1, 0, 0]]
    _assert_accounted([path])


def _vllm_response(rid: str, histogram: list[int], k: int = 3) -> dict[str, object]:
    steps = sum(histogram)
    accepted = sum(i * n for i, n in enumerate(histogram))
    spec = {
        "num_spec_steps": steps,
        "num_draft_tokens": steps * k,
        "num_accepted_draft_tokens": accepted,
        "mean_acceptance_length": 1 + accepted / steps,
        "draft_acceptance_rate": accepted / (steps * k),
        "acceptance_histogram": histogram,
        "per_step_accepted": [i for i, n in enumerate(histogram) for _ in range(n)],
        "per_step_drafted": [k] * steps,
    }
    return {
        "id": rid,
        "object": "text_completion",
        "created": 1772445600,
        "model": "Qwen/Qwen3-0.6B",
        "choices": [{"index": 0, "text": "alpha", "logprobs": None, "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": steps + accepted,
            "total_tokens": 12 + steps + accepted,
        },
        "metrics": {"speculative_decoding": spec},
    }


def test_vllm_responses_saved_as_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    stream_last = {**_vllm_response("cmpl-s", [1, 1, 1, 1]), "object": "text_completion"}
    path.write_text(
        json.dumps(_vllm_response("cmpl-a", [4, 3, 2, 1]))
        + "\n"
        + json.dumps(_vllm_response("cmpl-b", [0, 0, 1, 9]), separators=(",", ":"))
        + "\n"
        + "data: "
        + json.dumps(stream_last)
        + "\n",
        encoding="utf-8",
    )
    tables = parse_paths([path])
    requests = tables[T.REQUESTS]
    assert requests[C.LAYOUT].to_list() == ["vllm_response"] * 3
    assert requests[C.RID].to_list() == ["cmpl-a", "cmpl-b", "cmpl-s"]
    assert requests[C.SPEC_VERIFY_CT].to_list() == [10, 10, 4]
    assert requests[C.SPEC_ACCEPTED_TOKENS].to_list() == [10, 29, 6]
    assert requests[C.SPEC_DRAFT_TOKENS].to_list() == [30, 30, 12]
    assert requests[C.SPEC_ACCEPT_LENGTH].to_list() == [2.0, 3.9, 2.5]
    _assert_accounted([path])


def test_a_json_line_cut_short_is_unparsed_and_the_others_kept(tmp_path: Path) -> None:
    good = _json_event("request.finished", "ok", "2026-03-02T10:00:00", _meta("ok", [1, 1, 1, 1], 10))
    cut = good[: len(good) // 2]
    typed_wrong = good.replace('"prompt_tokens": 21', '"prompt_tokens": "many"')
    path = tmp_path / "node_0.log"
    path.write_text("\n".join([good, cut, typed_wrong, good]) + "\n", encoding="utf-8")
    tables = parse_paths([path])
    assert tables[T.REQUESTS][C.LINE_NO].to_list() == [1, 4]
    assert tables[T.UNPARSED][C.LINE_NO].to_list() == [2, 3]
    _assert_accounted([path])


def test_a_saved_metrics_page_and_server_info(tmp_path: Path) -> None:
    """A `/metrics` page as prometheus_client writes it (text format 0.0.4), with vLLM's spec-decode counters
    (`vllm/v1/spec_decode/metrics.py`) and SGLang's gauges (`python/sglang/srt/metrics/collector.py`)."""
    page = tmp_path / "metrics.prom"
    page.write_text(
        "# HELP python_gc_objects_collected_total Objects collected during gc\n"
        "# TYPE python_gc_objects_collected_total counter\n"
        'python_gc_objects_collected_total{generation="0"} 1234.0\n'
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 180.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 90.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 60.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 30.0\n'
        'sglang:spec_accept_length{engine_type="unified",model_name="m",tp_rank="0"} 2.8\n'
        'sglang:spec_accept_rate{engine_type="unified",model_name="m",tp_rank="0"} 0.45\n',
        encoding="utf-8",
    )
    info = tmp_path / "server_info.json.log"
    info.write_text(
        json.dumps(
            {
                "model_path": "m",
                "speculative_num_steps": 3,
                "internal_states": [{"avg_spec_accept_length": 2.5}],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    tables = parse_paths([page, info])
    metrics = tables[T.ENDPOINT_METRICS]
    per_pos = metrics.filter(pl.col(C.METRIC_POSITION).is_not_null())
    assert per_pos[C.METRIC_POSITION].to_list() == [0, 1, 2]
    assert per_pos[C.METRIC_VALUE].to_list() == [90.0, 60.0, 30.0]
    assert metrics.filter(pl.col(C.METRIC_ITEM) == "type").height == 2
    server = metrics.filter(pl.col(C.METRIC_ITEM) == "server_info").row(0, named=True)
    assert (server[C.METRIC_VALUE], server[C.SPEC_NUM_STEPS]) == (2.5, 3)
    assert tables[T.LINES].filter(pl.col(C.KIND) == Kind.UNPARSED).height == 0
    _assert_accounted([page, info])


def test_the_real_log_requests_sample(real_corpus: Path) -> None:
    """The corpus' SGLang 0.5.7 log with `log_requests=True` (lines up to 228 KB): three requests."""
    path = real_corpus / "062_llama32-3b-debug-log-requests-200kb-lines-2026.log"
    tables = parse_paths([path])
    requests = tables[T.REQUESTS]
    assert requests[C.EVENT].value_counts().sort(C.EVENT).rows() == [("finished", 3), ("received", 3)]
    finished = requests.filter(pl.col(C.EVENT) == "finished")
    received = requests.filter(pl.col(C.EVENT) == "received")
    assert sorted(finished[C.RID].to_list()) == sorted(received[C.RID].to_list())
    assert sorted(finished[C.COMPLETION_TOKENS].to_list()) == [8, 128, 128]
    assert finished[C.FINISH_REASON].to_list() == ["length"] * 3
    assert finished[C.SPEC_VERIFY_CT].is_null().all()  # no speculative decoding in that run
    _assert_accounted([path])


def test_one_line_in_memory_is_one_row() -> None:
    tables = parse_text(_json_event("request.received", "x", "2026-03-02T10:00:00"))
    assert tables[T.REQUESTS].height == 1
