"""Verdicts judge each process by its job, give every run one, and refuse a file that is no log."""

from __future__ import annotations

import json
from pathlib import Path

from test_chain import only, serving
from test_cli import run as cli
from test_detectors import decode, run, stamp

from tracelens.formatting import status_tag


def prefill_node(batches: int) -> list[str]:
    args = (
        f"{stamp(0, '')} server_args=ServerArgs(model_path='/m', tp_size=1, dp_size=1, "
        "disaggregation_mode='prefill', speculative_algorithm=None)"
    )
    prefill = (
        "Prefill batch. #new-seq: 1, #new-token: 900, #cached-token: 0, token usage: 0.01, "
        "#running-req: 0, #queue-req: 0"
    )
    return [args, f"{stamp(5, '')} The server is fired up and ready to roll!"] + [
        f"{stamp(10 + i)} {prefill}" for i in range(batches)
    ]


def test_a_prefill_node_is_judged_by_its_prefill_batches() -> None:
    verdict = only(run(prefill_node(20)))
    assert verdict.status == "healthy", verdict.headline
    assert verdict.headline.startswith("prefill node runs well")


def prefill_lines(running: int, count: int = 3) -> list[list[str]]:
    """``count`` prefill batch lines of two eras, counting from ``running`` requests in the running batch."""
    return [
        [
            f"{stamp(10 + i)} Prefill batch. #new-seq: 1, #new-token: 8, #cached-token: 0, cache hit rate: "
            f"0.00%, #running-req: {running + i}, #queue-req: 0"
            for i in range(count)
        ],
        [
            f"[gpu_id=0] new fill batch. #seq: 1. #cached_token: 0. #new_token: 646. #remaining_req: 0. "
            f"#running_req: {running + i}. tree_cache_hit_rate: 0.00%."
            for i in range(count)
        ],
    ]


def test_prefill_lines_with_requests_running_are_serving() -> None:
    # `#running-req` on a prefill line is the running batch: requests being decoded, whose decode lines
    # were filtered out of the excerpt or come rarer than it is long
    for lines in prefill_lines(running=3):
        verdict = only(run(lines))
        assert verdict.status == "healthy", verdict.headline
        assert verdict.headline.startswith("serving: prefill batches beside up to 5 running request(s)")
    # with none running, nothing was decoded yet: the log ends as serving began
    for lines in prefill_lines(running=0, count=1):
        assert only(run(lines)).status == "incomplete"


def bootstrap_batches(queues: list[int], queued: int = 0) -> list[str]:
    """A prefill node's batch lines in SGLang's prefill-mode form: its bootstrap queue as #prealloc-req."""
    return [
        f"{stamp(60 + i)} Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
        f"#running-req: 0, #queue-req: {queued}, #prealloc-req: {q}, #inflight-req: 1, cuda graph: False, "
        "input throughput (token/s): 1.00"
        for i, q in enumerate(queues)
    ]


def test_a_prefill_node_whose_bootstrap_queue_only_grows_is_stuck() -> None:
    # the decode side takes none of the requests: they pile up in the prefill node's bootstrap queue
    verdict = only(run([*prefill_node(3), *bootstrap_batches([18, 22, 27, 28, 35])]))
    assert verdict.status == "broken", verdict.headline
    assert verdict.causes == ["pd-bootstrap-stuck"], verdict.causes
    assert verdict.headline == "prefill node stuck: 35 requests wait for the decode side (18 -> 35)"
    assert verdict.fix is not None and "--disaggregation-bootstrap-port" in verdict.fix
    # an excerpt of the same lines alone (no start line) is the same node
    assert only(run(bootstrap_batches([18, 22, 27, 28, 35]))).causes == ["pd-bootstrap-stuck"]


def test_a_bootstrap_queue_that_drains_or_waits_behind_prefill_work_is_no_hang() -> None:
    drained = [18, 22, 27, 28, 35, 3, 0]  # handed off in the end
    assert only(run([*prefill_node(3), *bootstrap_batches(drained)])).status == "healthy"
    # requests wait to be prefilled too: a busy node, not a stuck hand-off
    busy = only(run([*prefill_node(3), *bootstrap_batches([18, 22, 27, 28, 35], queued=40)]))
    assert "pd-bootstrap-stuck" not in busy.causes, busy.headline


def decode_node_batches(
    queues: list[int], running: list[int] | None = None, transfer: int = 0, usage: float = 0.05
) -> list[str]:
    """A decode node's batch lines in SGLang's decode-mode form (`log_decode_stats`): its pre-allocation
    queue as #prealloc-req, the requests getting their KV as #transfer-req."""
    running = running or [2] * len(queues)
    return [
        f"{stamp(60 + i)} Decode batch, #running-req: {r}, #token: 2765, token usage: {usage:.2f}, "
        f"pre-allocated usage: 0.00, #prealloc-req: {q}, #transfer-req: {transfer}, #retracted-req: 0, "
        "cuda graph: True, gen throughput (token/s): 15.02, #queue-req: 0, "
        for i, (q, r) in enumerate(zip(queues, running, strict=True))
    ]


def decode_node_args() -> str:
    return (
        f"{stamp(0, '')} server_args=ServerArgs(model_path='/m', tp_size=1, dp_size=1, "
        "disaggregation_mode='decode', speculative_algorithm=None)"
    )


def test_a_decode_node_whose_prealloc_queue_only_grows_is_stuck() -> None:
    # no request gets its KV from the prefill side: they pile up in the decode node's pre-allocation
    # queue while its running batch takes none of them
    lines = [decode_node_args(), *decode_node_batches([18, 22, 27, 28, 35])]
    verdict = only(run(lines))
    assert verdict.status == "broken", verdict.headline
    assert verdict.causes == ["pd-decode-stuck"], verdict.causes
    assert verdict.headline == "decode node stuck: 35 requests wait for KV from the prefill side (18 -> 35)"
    assert verdict.fix is not None and "--disaggregation-bootstrap-port" in verdict.fix
    # an excerpt of the same lines alone (no start line) is the same node
    assert only(run(decode_node_batches([18, 22, 27, 28, 35]))).causes == ["pd-decode-stuck"]


def test_a_decode_nodes_queue_that_drains_moves_or_waits_for_memory_is_no_hang() -> None:
    healthy = [
        decode_node_batches([18, 22, 27, 28, 35, 3, 0]),  # handed off in the end
        decode_node_batches([18, 22, 27, 28, 35], transfer=12),  # their KV is on its way
        decode_node_batches([18, 22, 27, 28, 35], running=[2, 8, 14, 20, 26]),  # decoding takes them in
    ]
    for lines in healthy:
        verdict = only(run([decode_node_args(), *lines]))
        assert "pd-decode-stuck" not in verdict.causes, verdict.headline
    # a full KV pool holds the queue for memory: load, not a stopped hand-off
    full = only(run([decode_node_args(), *decode_node_batches([18, 22, 27, 28, 35], usage=0.97)]))
    assert "pd-decode-stuck" not in full.causes, full.headline


def test_a_log_without_a_start_line_is_one_run_with_a_verdict() -> None:
    verdict = only(run([decode(3, accept=None)]))
    assert verdict.status == "healthy"
    assert verdict.start_line == 1


def test_a_decode_of_zero_tokens_a_second_never_runs_well() -> None:
    lines = [*serving(0), *(decode(10 + i, accept=None, tput=0.0) for i in range(30))]
    verdict = only(run(lines))
    assert verdict.status == "degraded"
    assert "runs well" not in verdict.headline and "0.0 tok/s" in verdict.headline


def test_the_status_column_is_always_followed_by_a_space() -> None:
    assert all(status_tag(s).endswith(" ") for s in ("broken", "degraded", "incomplete", "healthy"))


def test_a_file_that_is_no_server_log_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}, indent=2))
    prose = tmp_path / "notes.txt"
    prose.write_text("We started the server yesterday.\nIt was fine.\n")
    report = tmp_path / "report.html"
    # every command that analyses its inputs refuses them alike, so no gate passes on the wrong file
    commands = (["check", "--json"], ["summary", "--json"], ["compare"], ["report", "-o", str(report)])
    for path in (config, prose):
        for command in commands:
            done = cli(*command, str(path))
            assert done.returncode == 2, (command, done.stdout)
            assert done.stderr.strip() == f"tracelens: error: not a server log: {path}", command
            assert "Traceback" not in done.stderr
    assert not report.exists()


def test_a_non_log_beside_a_log_is_named_and_the_log_is_judged(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(serving()) + "\n")
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 4096}\n')
    done = cli("check", "--json", str(log), str(config))
    assert done.returncode == 0, done.stderr
    assert f"not a server log: {config}" in done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    assert [Path(v["source"]).name for v in verdicts] == ["server.log"]


def test_a_vllm_draft_at_zero_acceptance_is_useless_without_debug_lines() -> None:
    metrics = (
        "INFO 09-12 10:0{i}:00 metrics.py:396] Speculative metrics: Draft acceptance rate: 0.000, System "
        "efficiency: 0.059, Number of speculative tokens: 16, Number of accepted tokens: 0, Number of draft "
        "tokens: 3200, Number of emitted tokens: 200."
    )
    lines = ["INFO 09-12 10:00:00 api_server.py:495] vLLM API server version 0.6.1"]
    lines += [metrics.format(i=i) for i in range(1, 5)]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert verdict.causes == ["acceptance-useless"]
    # V0's acceptance length is emitted / (drafted / k): 200 / (3200 / 16)
    assert "acceptance 0.0% over 16 speculative tokens, accept len 1.00" in verdict.headline


def test_a_clock_jump_of_days_in_a_start_up_is_no_stall() -> None:
    # a dated line, then lines whose date was guessed from the file (57 days later, same time of day)
    lines = [
        f"{stamp(0, '')} server_args=ServerArgs(model_path='/m', tp_size=1, speculative_algorithm=None)",
        f"{stamp(57 * 86_400 + 60)} Load weight begin. avail mem=70.00 GB",
        f"{stamp(57 * 86_400 + 90)} Load weight end. type=LlamaForCausalLM, avail mem=50.00 GB",
    ]
    analysis = run(lines)
    assert not [f for f in analysis.findings if f.code == "startup-stall"]
    assert "4924" not in only(analysis).headline


def test_speculation_slower_than_the_plain_decode_beside_it_is_degraded() -> None:
    plain = [decode(i, accept=None, tput=97.5) for i in range(8)]
    spec = [decode(100 + i, accept=2.2, tput=78.0) for i in range(8)]
    verdict = only(run(plain + spec))
    assert verdict.status == "degraded"
    assert verdict.headline.startswith("speculation is slower than plain decode here: 78 vs 98 tok/s (0.80x)")
    # as fast or faster: nothing to say
    assert only(run(plain + [decode(100 + i, accept=2.2, tput=150.0) for i in range(8)])).status == "healthy"


BENCH = """============ Serving Benchmark Result ============
Backend:                                 sglang
Successful requests:                     1000
Output token throughput (tok/s):         1715.29
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   9912.73
==================================================""".splitlines()


def test_a_benchmark_clients_output_alone_is_judged_as_the_clients() -> None:
    verdict = only(run(BENCH))
    assert verdict.status == "healthy"
    assert (
        verdict.headline
        == "a benchmark client's results: 1000 requests succeeded, 1715 output tok/s (no server lines)"
    )
    failed = only(run([line.replace("1000", "0") for line in BENCH]))
    assert failed.status == "broken"


def test_a_routers_log_is_a_log_judged_by_its_job() -> None:
    start = (
        "2026-02-26 13:55:38  INFO smg::server: src/server.rs:794: Starting router on 0.0.0.0:8000 | mode: "
        "PrefillDecode"
    )
    assert only(run([start])).status == "healthy"
    failed = "2026-02-26 14:05:38  ERROR smg::server: Timeout 600s waiting for workers [http://a:30000] to become healthy"
    verdict = only(run([start, failed]))
    assert verdict.status == "broken"
    assert verdict.causes == ["router-failed"]


def test_a_pasted_segfault_without_timestamps_is_a_log_that_crashed(tmp_path: Path) -> None:
    pasted = tmp_path / "crash.txt"
    pasted.write_text("Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n")
    done = cli("check", "--json", str(pasted))
    assert done.returncode == 1, done.stderr
    (verdict,) = json.loads(done.stdout)["verdicts"]
    assert verdict["status"] == "broken" and verdict["causes"] == ["segfault"]


def test_an_unfinished_log_says_where_it_stopped() -> None:
    args = f"{stamp(0, '')} server_args=ServerArgs(model_path='/m', tp_size=1, speculative_algorithm=None)"
    ready = only(run([args, f"{stamp(5, '')} The server is fired up and ready to roll!"]))
    assert (ready.status, ready.headline) == ("incomplete", "ready, but served no request in the log")
    capture = only(run([args, f"{stamp(5)} Capture cuda graph begin. This can take up to several minutes."]))
    assert capture.headline.startswith("the log ends during CUDA graph capture with no error")
    assert capture.evidence[-1].line_no == 2
