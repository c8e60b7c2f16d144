"""The failure catalog: what a log line of a failing (or stopping) server means, as data.

Each entry names a failure in words a user would search for, the component that reports it, how it
weighs in a verdict (`Weight`), what it usually sets off (the consequences it explains) and a fix
where a general one exists. Its pattern is a Rust regex (linear time: no look-around, no
back-references) tested on one line's text without its prefix; the first entry that matches a line is
the line's. Every entry carries sample lines, and `tests/test_catalog.py` checks that each sample is
read as its entry. The fatal entries are in `catalog_fatal`. `docs/verdicts.md` is the user's reference. Graceful stops, noise and the notes
that must be read first are in `catalog_stops`; a fix in vLLM's flags, where they differ, is `vllm_fix`.

Unknown failures need no entry: an exception line of a traceback is a fatal event of its own, and its
place in the chain (the earliest fatal event is the cause) decides what it explains.
"""

from __future__ import annotations

from tracelens.analysis.catalog_fatal import FATAL, VLLM_ATTN, VLLM_KV_CONNECTOR
from tracelens.analysis.catalog_stops import STOPS_AND_NOTES
from tracelens.analysis.failure_kinds import Failure, Weight

__all__ = ["CODES", "FAILURES", "HANG", "Failure", "Weight"]

_F, _E, _C = Weight.FATAL, Weight.ERROR, Weight.CONSEQUENCE

FAILURES: tuple[Failure, ...] = (
    *STOPS_AND_NOTES,
    *FATAL,
    # --- errors: the server goes on, worse off
    Failure(
        "nan-logits",
        "NaN in the logits during sampling",
        "sampling",
        _E,
        r"NaN in the logits|(?i)nan (?:or inf )?(?:in|found in) (?:the )?(?:logits|probs)",
        ("Detected errors during sampling! NaN in the logits.",),
        "the model produces NaN: check the dtype, the quantization and the KV cache dtype (try "
        "--kv-cache-dtype auto or another --attention-backend)",
        vllm_fix="the model produces NaN: check --dtype, the quantization and the KV cache dtype (try "
        "--kv-cache-dtype auto), or " + VLLM_ATTN,
    ),
    Failure(
        "kv-transfer",
        "KV cache transfer failed (PD disaggregation)",
        "Mooncake",
        _E,
        r"writeBody failed|readBody failed|transport retry counter exceeded|KVTransferError|"
        r"(?:Decode|Prefill) transfer failed|(?i)handshake.*(?:reset|fail)|Failed to (?:send|transfer) kv|"
        # vLLM's Mooncake connector (and vllm-ascend's)
        r"Mooncake transfer failed|"
        # Mooncake's transfer engine and store in their own glog lines: an RDMA work request the NIC
        # refused, a NIC taken out of service, a peer's segment its metadata server does not know, a batch
        # or a put that never completed
        r"local protection error|Context is not active|Worker: Process failed for slice|"
        r"Failed to retrieve segment descriptor|Failed to complete transfers after|TRANSFER_FAIL",
        (
            "E0528 06:26:02.123 tcp_transport.cpp:120] Session::writeBody failed. Error: Bad address",
            "Decode transfer failed for request rank=0 req_rid='abc' with exception KVTransferError",
            "ERROR 03-31 02:49:30 [mooncake_connector.py:547] Mooncake transfer failed for request chatcmpl-1",
            "Failed to transfer KV cache for request cmpl-1-0: Mooncake transfer failed, ret: -1",
            "Worker: Process failed for slice (opcode: 1, source_addr: 0x7f): transport retry counter exceeded",
            "E0724 03:14:20.707079 104002 rdma_context.cpp:261] Context is not active: mlx5_bond_2",
            "f00, local_nic: mlx5_bond_2, peer_nic: 10.0.2.98:15992@mlx5_bond_1, dest_rkey: 2146656, "
            "retry_cnt: 0): local protection error",
            "W0414 03:56:41.856264 77969 transfer_metadata.cpp:153] Failed to retrieve segment descriptor, name "
            "10.6.131.6_58f33e4e",
            "E1120 11:10:27.133715 203020 transfer_task.cpp:305] Failed to complete transfers after 60 seconds "
            "for batch 2586731328",
            "E0523 06:50:40.085733   223 store_py.cpp:367] Put operation failed with error: TRANSFER_FAIL",
        ),
        "the KV transfer between prefill and decode fails: check the RDMA devices "
        "(--disaggregation-ib-device), that both nodes reach each other, and the transfer backend",
        vllm_fix="the KV transfer between prefill and decode fails: " + VLLM_KV_CONNECTOR,
    ),
    Failure(
        "torch-recompile",
        "torch.compile recompiles on every new shape",
        "torch.compile",
        _E,
        r"cache_size_limit|torch\._dynamo hit config\.\w+|Recompiling function",
        ("W0101 torch._dynamo hit config.accumulated_cache_size_limit (64)",),
        "dynamic shapes recompile the graph: lower --torch-compile-max-bs or run without --enable-torch-compile",
        vllm_fix="dynamic shapes recompile the graph: narrow the compiled sizes in --compilation-config, or run "
        "with --enforce-eager",
    ),
    Failure(
        "health-check",
        "health check failed",
        "server",
        _E,
        r"Health check failed",
        (
            "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
            "tic start time: 1733300000.12. last_heartbeat time: 1733299970.45",
            "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
            "tic start time: 10:47:07. last_heartbeat time: 09:44:42",
        ),
        "the server stopped answering: the lines before the first failure show what the scheduler was doing",
    ),
    Failure(
        "asgi-error",
        "request failed in the HTTP server",
        "uvicorn",
        _E,
        r"Exception in ASGI application",
        ("ERROR:    Exception in ASGI application",),
        "one request failed inside the server: the traceback below it names the handler",
    ),
    Failure(
        # NIXL moves the KV cache over UCX: UCX's own error lines, and the blocks a prefill node
        # released because no decode worker read them (SGLang's and vLLM's NIXL connectors alike)
        "nixl-transfer",
        "KV cache transfer failed over NIXL / UCX (PD disaggregation)",
        "NIXL",
        _E,
        r"\bUCX\s+ERROR\b|Releasing expired KV blocks for request",
        (
            "[1784621081.896649] [kimi-k2-7-disagg-on-sp-v1-prefill-92c6hc-07210529-x04q3qgn-pod:537  :1]       "
            "srd_iface.c:221  UCX  ERROR send completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request "
            "Flushed Error, vendor_err 0x1 wr_id 0x7f8b20022480",
            "[1749803291.555759] [vllm-lmcache-zxy-977866c79-jxjnw:7053 :0]          tcp_ep.c:1260 UCX  ERROR "
            "tcp_ep 0x3c502370 (state=CONNECTED): send(110) failed: Input/output error",
            "(APIServer pid=32) (EngineCore_0 pid=296) (VllmWorker TP0 pid=302) WARNING 09-07 11:25:27 "
            "[nixl_connector.py:1049] Releasing expired KV blocks for request cmpl-9258f785-7c6f-4b9b-bf83-"
            "9170fd2a0081-0 which were retrieved by 0 decode worker(s) within 120 seconds.",
        ),
        "the KV transfer between prefill and decode fails: check that the decode side is up and reaches this "
        "node, the UCX transport (UCX_TLS, UCX_NET_DEVICES: the RDMA devices both nodes use), and that both "
        "sides run the same NIXL version",
    ),
    Failure(
        # a router's own errors: the worker it sent a request to answered an error (SGLang's Rust router)
        "router-upstream-error",
        "a router's worker answered an error",
        "router",
        _E,
        r"server returned error status|request failed with server error",
        (
            "2025-09-04 07:15:26 ERROR http_request{method=POST uri=/v1/completions version=HTTP/1.1}: "
            "sglang_router_rs::routers::pd_router: src/routers/pd_router.rs:565: Decode server returned error "
            "status decode_url=http://10.160.1.22:50000 status=500 Internal Server Error",
            "2025-09-04 07:15:26 ERROR http_request{method=POST uri=/v1/completions version=HTTP/1.1 "
            "request_id=cmpl-hvNcVSx9FaPb13dmSHtom1fF status=500 Internal Server Error latency=2.041450065s}: "
            "sglang_router_rs::response: src/middleware.rs:159: request failed with server error",
        ),
        "the workers behind the router fail requests: the log of the worker named (a prefill or decode node) "
        "says why",
    ),
    Failure(
        # a router with no worker to send a request to: every worker's circuit breaker is open or its health
        # check fails, and the router turns the request away (at its start, waiting for workers is no failure)
        "router-no-workers",
        "the router has no healthy worker for a request",
        "router",
        _E,
        r"Failed to select PD pair|No available (?:prefill |decode )?workers?\b",
        (
            '2025-10-29 21:49:19 ERROR http_request{method=POST uri=/generate version=HTTP/1.1 request_id="gnt-1"}: '
            "sglang_router_rs::routers::http::pd_router: src/routers/http/pd_router.rs:142: Failed to select PD "
            "pair error=No available prefill workers (all circuits open or unhealthy)",
        ),
        "the workers behind the router are down or fail their health checks (circuit breakers open): look at "
        "each worker's log and /health, and at the router's health-check and circuit-breaker settings",
    ),
    Failure(
        # a client's own log: httpx (under the openai client, in benchmark scripts and test harnesses) logs
        # each request with the status it got
        "client-server-error",
        "a client's requests answered with a server error (5xx)",
        "client",
        _E,
        r'HTTP Request: [A-Z]+ \S+ "HTTP/[\d.]+ 5\d\d\b',
        (
            "2025-04-09 12:04:36,150 - INFO - HTTP Request: POST http://192.168.50.13/v1/chat/completions "
            '"HTTP/1.1 503 Service Unavailable"',
        ),
        "the server (or the gateway in front of it) failed these requests: its log at that time says why (503: "
        "overloaded or not ready; 500/502: a failure behind it)",
    ),
    Failure(
        # vLLM's API server logs a request that failed in its handler under its own head line: the traceback
        # below it is that request's (`request_scope`)
        "request-error",
        "request failed in the API server",
        "API server",
        _E,
        r"^Error in [\w ]*stream generator\.?$|^Error in preprocessing prompt inputs",
        ("Error in chat completion stream generator.", "Error in preprocessing prompt inputs"),
        "one request failed in the API server's handler: the traceback below it names the step (a parser, a "
        "template, the request's own arguments)",
    ),
    Failure(
        "router-log",
        "a router's log",
        "router",
        Weight.NOTE,
        r"Starting router on|sglang_router|\bsmg::|Workers initialized: \d+ total",
        (
            "2026-02-26 13:55:38  INFO smg::server: src/server.rs:794: Starting router on 0.0.0.0:8000",
            "2025-10-15 10:45:11 INFO sglang_router_rs::routers::http::router: Waiting for 2 workers",
        ),
        None,
    ),
    Failure(
        "nccl-warn",
        "NCCL warning",
        "NCCL",
        Weight.NOTE,
        r"NCCL WARN",
        ("node1:123:456 [0] NCCL WARN NET/Socket : peer 10.0.0.2<1234> shutdown",),
        None,
    ),
    # --- consequences: what a failure elsewhere sets off
    Failure(
        "sigquit",
        "SIGQUIT from a child process",
        "server",
        _C,
        r"(?i)Received sigquit|SIGQUIT received|sigquit",
        ("Received sigquit from a child process. It usually means the child failed.",),
    ),
    Failure(
        "pipe-closed",
        "connection to another process lost (EOFError)",
        "Python",
        _C,
        r"^EOFError\b|(?i)connection closed by peer|connection reset by peer|BrokenPipeError|broken pipe",
        ("EOFError", "EOFError: connection closed by peer"),
    ),
    Failure(
        # SGLang's launcher on a scheduler that exited before it was ready: its exit code is minus the
        # signal that ended it. The message names SIGKILL as a hint only: -9 stays `killed`.
        "scheduler-died",
        "a scheduler process died during start-up",
        "server",
        _C,
        r"scheduler died during initialization \(exit code: -?(?:[0-8]|\d\d+)\)",
        (
            "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3). If exit code is -9 "
            "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
            "RuntimeError: Rank 3 scheduler died during initialization (exit code: 1).",
        ),
        "the rank's own error is above this line; without one it ended on a signal (exit code -N is signal N: "
        "-11 a segfault, -6 an abort, -3 SIGQUIT after another process failed): look there, or at dmesg",
        rank_in_text=r"\bRank (\d+) scheduler died",
    ),
    Failure(
        "killed",
        "process killed",
        "server",
        _C,
        r"\bKilled\b|kill_process_tree|exit ?code[=: ]*-?9\b|exitcode=-9\b|signal 9\b|SIGKILL",
        (
            "./entrypoint.sh: line 47: 28 Killed python3 -m sglang.launch_server",
            "Child process unexpectedly failed with exitcode=9. pid=4321",
        ),
        "killed from outside (the host's OOM killer, a container memory limit, a job scheduler): check "
        "dmesg and the container's limits",
    ),
    Failure(
        "child-failed",
        "engine or worker process failed",
        "server",
        _C,
        r"exitcode=-?\d+|died unexpectedly|EngineDeadError|Engine core proc .* died|Possible solutions|"
        r"ChildFailedError|terminate called after throwing|Engine core initialization failed|"
        r"MQLLMEngine is already dead|(?:EngineCore|WorkerProc) failed to start|Engine core .*failed to start|"
        r"WorkerProc initialization failed|"  # vLLM's executor: a worker's own traceback holds the cause
        # vLLM's engine core on an exception in its step (the traceback under it holds it), and its executor
        # on a worker process that died (that worker's own lines do)
        r"EngineCore encountered a fatal error|got fatal signal from worker processes|"
        # V1 dumps the step's input when its engine core's step raised (`dump_engine_exception`)
        r"Dumping input data for V1 LLM engine",
        (
            "Exception: WorkerProc initialization failed due to an exception in a background process. See "
            "stack trace for root cause.",
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
            "{'EngineCore_0': 1}",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
            "MQLLMEngine is already dead, terminating server process",
            "EngineCore failed to start.",
            "WorkerProc failed to start.",
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            "Child process unexpectedly failed with exitcode=1. pid=4321",
            "Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
            "EngineCore encountered a fatal error.",
            "ERROR 05-01 14:39:06 [dump_input.py:72] Dumping input data for V1 LLM engine (v0.19.2rc1) with config: "
            "model='/models/qwen3', speculative_config=SpeculativeConfig(method='mtp', num_spec_tokens=3)",
            "MulitprocExecutor got fatal signal from worker processes, shutting down. See stack trace above for "
            "root cause issue.",
        ),
        # vLLM's multiproc executor names each worker process `VllmWorker-{rank}`
        rank_in_text=r"\bWorker proc VllmWorker-(\d+) died",
    ),
    Failure(
        # Ray hands the driver a worker's exception wrapped (`RayTaskError(ValueError): ray::...`); the worker's
        # own traceback follows it, and its exception line is the failure
        "ray-task-error",
        "a Ray worker's exception, carried to the engine (RayTaskError)",
        "Ray",
        _C,
        r"RayTaskError\(\w+\)",
        (
            "ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.execute_method() (pid=7106, "
            "ip=192.168.10.10, actor_id=ad5a2b63ebdb1b232073aa1b03000000, repr=<vllm.v1.executor.ray_utils."
            "RayWorkerWrapper object at 0x7f9440a4fc80>)",
        ),
        "a Ray worker raised it: its own exception line, at the end of the traceback under this line (or in "
        "that node's log, at the pid and ip named), is the failure",
    ),
)

CODES = {f.code: f for f in FAILURES}

# A hang: health checks that fail while the scheduler's heartbeat stays at one value.
HANG = Failure(
    "hang",
    "server hung (health checks fail, the scheduler's heartbeat is frozen)",
    "server",
    _F,
    r"last_heartbeat time: ([0-9][0-9:.]*[0-9])",
    (
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: 1733300000.12. last_heartbeat time: 1733299970.45",
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: 10:47:07. last_heartbeat time: 09:44:42",
    ),
    "the scheduler stopped at its last heartbeat: the lines just before it show what it was doing "
    "(py-spy dump the scheduler; --watchdog-timeout makes it dump its stack)",
    hangs=True,
)
