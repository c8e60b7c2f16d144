"""The failure catalog's fatal entries: the known causes that stop a server, most specific first.

`catalog` puts them between the graceful stops and the errors; the first entry that matches a line
is the line's, so the order here is part of the data.
"""

from __future__ import annotations

from tracelens.analysis.failure_kinds import Failure, Weight

__all__ = ["FATAL", "OOM_FIX", "VLLM_ATTN", "VLLM_KV_CONNECTOR"]

OOM_FIX = (
    "lower --mem-fraction-static (or --cuda-graph-max-bs / --max-running-requests), or spread the model "
    "over more GPUs"
)
_F = Weight.FATAL
# vLLM picks its attention kernels with --attention-backend (VLLM_ATTENTION_BACKEND before late 2025)
VLLM_ATTN = "try another attention backend (--attention-backend, or VLLM_ATTENTION_BACKEND on older releases)"
# vLLM's KV connectors take their transport from --kv-transfer-config (Mooncake: its config's device and protocol)
VLLM_KV_CONNECTOR = (
    "check the connector's transport in --kv-transfer-config (the Mooncake config's RDMA device and protocol), "
    "that both nodes reach each other, and the connector's version on both"
)

FATAL: tuple[Failure, ...] = (
    # --- fatal: known causes, most specific first
    Failure(
        "nvshmem-transport",
        "NVSHMEM transport cannot reach a peer GPU",
        "NVSHMEM",
        _F,
        # NVSHMEM's error macro prints `<its source file>:<line>: non-zero status: <code> <message>`: a path
        # under its own tree names it even when the message is empty (an IBRC queue pair that failed)
        r"(?i)Peer GPU \d+ is not accessible|building transport map failed|nvshmem\w*.*(?:error|failed|abort)|"
        r"nvshmem\S*/src/\S+:\d+: non-zero status: \d+",
        (
            "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/host/transport/transport.cpp:420: "
            "non-zero status: 7 Peer GPU 8 is not accessible, exiting ...",
            "src/host/init/init.cu:nvshmemi_common_init:997: building transport map failed",
            "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1433: non-zero status: 7 ",
        ),
        "NVSHMEM (DeepEP) needs GPUDirect RDMA between the nodes: mlx5 NICs with IBGDA, nvidia_peermem "
        "loaded, NVSHMEM_HCA_LIST / NVSHMEM_IB_ENABLE_IBGDA set for this NIC; or run without DeepEP",
    ),
    Failure(
        # the kernel's OOM killer (dmesg): host memory, not the GPU's; before `oom`, whose `out of memory:`
        # would take its line
        "host-oom",
        "host out of memory (the kernel's OOM killer)",
        "kernel",
        _F,
        r"Out of memory: Killed process|invoked oom-killer|oom-kill:constraint=|Memory cgroup out of memory",
        (
            "[ 2448.628970] Out of memory: Killed process 16014 (cicc) total-vm:3069420kB, anon-rss:2111980kB, "
            "file-rss:2412kB, shmem-rss:0kB, UID:1000 pgtables:5204kB oom_score_adj:0",
            "[ 2457.202332] VLLM::EngineCor invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
            "order=0, oom_score_adj=0",
        ),
        "the host ran out of RAM and the kernel killed a process: give the host or container more memory, or use "
        "less of it (fewer parallel compile jobs with MAX_JOBS, less CPU offload or swap space, fewer workers)",
    ),
    Failure(
        "oom",
        "GPU out of memory",
        "CUDA",
        _F,
        r"(?i)(?:CUDA|HIP|NPU|GPU) out of memory|OutOfMemoryError|out of memory\b(?: error)?(?:$|[.,:])|"
        r"Cuda failure 'out of memory'",  # NCCL's, after its `Last error:`
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB.",
            "Cuda failure 'out of memory'",
        ),
        OOM_FIX,
        vllm_fix="lower --max-num-seqs or --max-num-batched-tokens (activations), or --gpu-memory-utilization "
        "when another process shares the GPU, or spread the model over more GPUs (--tensor-parallel-size)",
    ),
    Failure(
        "kv-pool-too-small",
        "not enough memory left for the KV cache",
        "server",
        _F,
        r"Not enough memory\. Please try to increase --mem-fraction-static|(?i)not enough memory for (?:the )?kv|"
        # a negative profiled capacity: the weights (and graphs) took more than the static fraction
        r"larger than the profiled value -\d+",
        (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            "max_total_tokens=65536 is larger than the profiled value -1520. Use the profiled value instead.",
        ),
        "the weights leave too little for the KV cache: raise --mem-fraction-static, or use more GPUs (TP)",
    ),
    Failure(
        "triton-shared-memory",
        "Triton kernel needs more shared memory than the GPU has (OutOfResources)",
        "Triton",
        _F,
        r"OutOfResources|out of resource: shared memory",
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
            "Hardware limit: 65536.",
        ),
        "the kernel's block sizes exceed this GPU's shared memory: try another --attention-backend or a "
        "release whose kernel configs cover this GPU",
        vllm_fix="the kernel's block sizes exceed this GPU's shared memory: " + VLLM_ATTN,
    ),
    Failure(
        "flashinfer-head-dim",
        "FlashInfer cannot dispatch this head_dim",
        "FlashInfer",
        _F,
        r"failed to dispatch head_dim|Unsupported head_dim|head_dim \d+ (?:is )?not supported",
        ("RuntimeError: BatchDecodeWithPagedKVCache::BeginForward failed to dispatch head_dim 80",),
        "this FlashInfer build has no kernel for the model's head size: use --attention-backend triton",
        vllm_fix="this FlashInfer build has no kernel for the model's head size: " + VLLM_ATTN,
    ),
    Failure(
        "jit-compile",
        "kernel JIT compile failed (FlashInfer / Triton / ninja)",
        "FlashInfer",
        _F,
        r"ninja: build stopped|CompilationError|Error building extension|nvcc fatal|Ninja build failed|"
        r"CalledProcessError: Command '\['ninja'|(?i)jit.*compil\w* (?:failed|error)",
        (
            "ninja: build stopped: subcommand failed.",
            "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/0.5.3/80/"
            "cached_ops']' returned non-zero exit status 1.",
            "RuntimeError: Ninja build failed. Ninja output:",
            "triton.compiler.errors.CompilationError: at 12:4:",
            "RuntimeError: Error building extension 'batch_prefill'",
        ),
        "the kernel failed to build: check that nvcc and the CUDA headers match the torch build, or use a "
        "prebuilt wheel / another --attention-backend",
        vllm_fix="the kernel failed to build: check that nvcc and the CUDA headers match the torch build, or "
        + VLLM_ATTN,
    ),
    Failure(
        "illegal-memory-access",
        "CUDA illegal memory access",
        "CUDA",
        _F,
        r"(?i)illegal memory access|memory access fault|HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x7f. Reason: Unknown.",
        ),
        "rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; try --disable-cuda-graph or another "
        "--attention-backend to narrow it down",
        vllm_fix="rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; try --enforce-eager (no CUDA graphs) "
        "or another attention backend (VLLM_ATTENTION_BACKEND) to narrow it down",
    ),
    Failure(
        "illegal-instruction",
        "CUDA illegal instruction",
        "CUDA",
        _F,
        r"(?i)illegal instruction",
        ("RuntimeError: CUDA error: an illegal instruction was encountered",),
        "a kernel built for another GPU architecture or a kernel bug: rerun with CUDA_LAUNCH_BLOCKING=1",
    ),
    Failure(
        "device-assert",
        "CUDA device-side assert",
        "CUDA",
        _F,
        # the error is `device-side assert triggered`; torch's hint under every CUDA error (`Compile with
        # TORCH_USE_CUDA_DSA to enable device-side assertions.`) is none
        r"device-side assert triggered|\.cu:\d+: .*Assertion .* failed|Assertion `[^`]*` failed",
        (
            "RuntimeError: CUDA error: device-side assert triggered",
            "../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [0,0,0], thread: "
            "[0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
        ),
        "an index or probability out of range in a kernel: rerun with CUDA_LAUNCH_BLOCKING=1; invalid "
        "token ids or NaN probabilities are the usual source",
    ),
    Failure(
        "cublas",
        "cuBLAS error",
        "cuBLAS",
        _F,
        r"CUBLAS_STATUS_\w+",
        ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmul( ... )`",),
        "cuBLAS rejects this GEMM's shape or dtype (often FP8 with an unaligned size): try another "
        "quantization or kernel backend",
    ),
    Failure(
        "segfault",
        "segmentation fault",
        "native",
        _F,
        # `!!!!!!! Segfault encountered !!!!!!!`: the banner a native signal handler prints above its
        # frames (seen under vLLM, SpecForge and Megatron runs alike)
        r"Segmentation fault|SIGSEGV|signal 11\b|Segfault encountered",
        (
            "Fatal Python error: Segmentation fault",
            "Caught signal 11 (SIGSEGV)",
            "!!!!!!! Segfault encountered !!!!!!!",
        ),
        "a native crash: the frames under `Fatal Python error` name the library (NCCL, a kernel, a "
        "tokenizer); update it or run without the feature it serves",
    ),
    Failure(
        "nccl",
        "NCCL error",
        "NCCL",
        _F,
        r"NCCL error|ncclUnhandled\w+|ncclInternalError|ncclSystemError|ncclInvalidUsage|"
        r"unhandled system error|unhandled cuda error",
        (
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, ncclUnhandledCudaError",
        ),
        "run with NCCL_DEBUG=INFO: the NCCL WARN lines before the error name the interface; check "
        "NCCL_SOCKET_IFNAME / NCCL_IB_HCA and that every node reaches the others",
        trailer=True,
    ),
    Failure(
        "dist-store-timeout",
        "torch.distributed / gloo store timed out",
        "gloo",
        _F,
        r"DistStoreError|Timed out after \d+ seconds waiting for clients|wait timeout after \d+|"
        r"gloo.*(?:[Tt]imed out|Connection refused)|"
        # c10d's TCPStore client: a rank that cannot reach the master's store (torch 2.x)
        r"DistNetworkError|client socket has timed out after \d+m?s while trying to connect|"
        r"waitForInput: socket .* timed out after \d+m?s",
        (
            "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0",
            "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying "
            "to connect to (10.0.0.1, 5000).",
            "[W socket.cpp:697] [c10d] The client socket has timed out after 900s while trying to connect to "
            "(node-0, 29500).",
            "[rank1]:[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket SocketImpl(fd=100, "
            "addr=[node-1]:50216, remote=[node-0]:20000) timed out after 1800000ms",
        ),
        "the nodes never all joined: check --dist-init-addr, --nnodes and --node-rank on every node and "
        "that the port is open between them",
        waits=True,
        vllm_fix="the nodes never all joined: check that every node reaches the head node's address and port "
        "(the Ray cluster: `ray status`; without Ray: --master-addr / --data-parallel-address) and that the "
        "port is open between them",
    ),
    Failure(
        "watchdog-timeout",
        "NCCL watchdog collective timeout",
        "NCCL",
        _F,
        r"Watchdog caught collective operation timeout|watchdog thread terminated with exception|"
        r"Timeout at NCCL work: \d+|detected by watchdog at work: \d+|Some NCCL operations have failed or timed out",
        (
            "[Rank 15] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran "
            "for 600000 milliseconds before timing out.",
            "[rank3]:[E227 16:30:43.526301625 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3 Rank 3] Timeout at "
            "NCCL work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.",
            "[Rank 3] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
            "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        ),
        "a rank stopped answering a collective: look for the first error of the other ranks or nodes",
        waits=True,
    ),
    Failure(
        "scheduler-watchdog",
        "scheduler watchdog timeout (the scheduler hung)",
        "server",
        _F,
        # `Scheduler debug info:` heads the dump SGLang's watchdog prints when it fires, before its timeout
        # line (a paste may hold the dump alone)
        r"(?i)watchdog timeout|Scheduler watchdog|^Scheduler debug info:\s*$",
        ("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "Scheduler debug info:"),
        "the scheduler made no progress: the stack dump above names the hung call (often a collective)",
        hangs=True,
    ),
    Failure(
        # vLLM's engine waits on its workers through a shared-memory queue and says so each minute; while
        # serving, a wait that repeats is a worker stuck in a call (start-up compiles are slow steps)
        "worker-hang",
        "vLLM workers stopped answering the engine (no shared-memory broadcast block)",
        "vLLM",
        _F,
        r"No available shared memory broadcast block found in \d+ seconds?",
        (
            "(EngineCore_DP0 pid=47415) INFO 10-24 16:26:27 [shm_broadcast.py:466] No available shared memory "
            "broadcast block found in 60 seconds. This typically happens when some processes are hanging or "
            "doing some time-consuming work (e.g. compilation).",
        ),
        "a worker is stuck in a call (often a collective or a kernel): py-spy dump the worker processes; the "
        "lines before the first wait show what the engine last ran",
        hangs=True,
        serving_only=True,
    ),
    Failure(
        # Ray tells the caller that an actor's process died; it says nothing of why (its own log does)
        "ray-actor-died",
        "a Ray actor's process died",
        "Ray",
        _F,
        r"ActorDiedError|The actor died unexpectedly|The actor is dead because",
        (
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
            "detail: Worker unexpectedly exits with a connection error code 2. End of file.",
        ),
        "the actor's process ended without a Python error (the OOM killer, a SIGKILL, a segfault): its own "
        "log in the Ray session's logs (worker-*.err on the node at the ip named) and dmesg say which",
    ),
    Failure(
        "ray",
        "Ray error",
        "Ray",
        _F,
        # `RayTaskError(ValueError)` carries a worker's own exception: `ray-task-error`, a consequence
        r"RayChannelTimeoutError|RayTaskError(?:$|[^(])|RaySystemError|raylet .*died",
        (
            "ray.exceptions.RayChannelTimeoutError: System error: If the execution is expected to take a long "
            "time, increase RAY_CGRAPH_get_timeout which is currently 10 seconds.",
        ),
        "a Ray worker or channel timed out: raise RAY_CGRAPH_get_timeout, or check the other node's workers",
    ),
    Failure(
        "port-in-use",
        "port already in use",
        "server",
        _F,
        r"(?i)address already in use|port \d+ is (?:already )?in use|Can not bind|bind failed",
        ("OSError: [Errno 98] Address already in use",),
        "another process holds the port: stop it or pick another --port",
    ),
    Failure(
        "shm-too-small",
        "/dev/shm too small",
        "Python",
        _F,
        r"(?i)No space left on device.*shm|insufficient shared memory|Bus error|shm_open.*fail",
        (
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        ),
        "the container's /dev/shm is too small: run it with --shm-size 32g or --ipc=host",
    ),
    Failure(
        "weight-key",
        "weight loading KeyError (checkpoint and model disagree)",
        "model loader",
        _F,
        r"KeyError: '[^']*\.(?:weight|bias|\w*scale\w*|qweight|qzeros|g_idx)'",
        ("KeyError: 'model.layers.78.mlp.gate_up_proj.input_scale'",),
        "the checkpoint's parameter names do not match the model class: check --quantization, the "
        "checkpoint's revision and that this release supports the model",
    ),
    Failure(
        "warmup-failed",
        "warmup request failed",
        "server",
        _F,
        r"Initialization failed\. warmup error|warmup error",
        ("Initialization failed. warmup error: ",),
        "the first request failed: the scheduler's error above (or its absence) says why",
        wraps=True,
    ),
    Failure(
        "mooncake-fatal",
        "Mooncake transfer engine failed",
        "Mooncake",
        _F,
        r"Mooncake Transfer Engine Return Error|Failed to (?:initialize|register) .*(?:Mooncake|transfer engine)",
        ("Exception: Mooncake Transfer Engine Return Error.",),
        "check the Mooncake transport (--disaggregation-ib-device, RDMA reachability between the nodes)",
        vllm_fix="check the Mooncake transport: " + VLLM_KV_CONNECTOR,
    ),
    Failure(
        "kv-no-memory",
        "no GPU memory left for the KV cache after the weights",
        "vLLM",
        _F,
        r"No available memory for the cache blocks",
        (
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine.",
        ),
        "the weights and activations take all of the memory vLLM may use: raise --gpu-memory-utilization, "
        "free the GPU of other processes, or spread the model over more GPUs (--tensor-parallel-size)",
    ),
    Failure(
        "kv-cache-too-small",
        "KV cache too small for the model's max length",
        "vLLM",
        _F,
        r"larger than the maximum number of tokens that can be stored in KV cache|"
        r"To serve at least one request with the models's max seq len",
        (
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can "
            "be stored in KV cache (45000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
        ),
        "raise --gpu-memory-utilization, lower --max-model-len, or spread the model over more GPUs",
    ),
    Failure(
        "model-not-found",
        "model files not found",
        "model loader",
        _F,
        r"does not appear to have a file named|Repository Not Found|is not a local folder and is not a valid "
        r"model identifier|Can't load (?:the )?(?:configuration|tokenizer) for",
        ("OSError: /models/llama does not appear to have a file named config.json.",),
        "check --model-path (mounted in the container? a Hugging Face id, a token for a gated model?)",
        vllm_fix="check the model given to `vllm serve` (--model): mounted in the container? a Hugging Face id, "
        "a token (HF_TOKEN) for a gated model?",
    ),
    Failure(
        "no-kernel-image",
        "no kernel image for this GPU",
        "CUDA",
        _F,
        r"no kernel image is available for execution|CUDA driver version is insufficient|"
        r"(?i)not compiled for (?:this|the) (?:gpu|architecture)",
        ("RuntimeError: CUDA error: no kernel image is available for execution on the device",),
        "the torch or kernel build does not cover this GPU's architecture or driver: install a build for it",
    ),
    Failure(
        "npu-error",
        "Ascend NPU error",
        "torch_npu",
        _F,
        # CANN's own log lines: `[ERROR] <module>(<pid>,<process>):<date>-<time> [<file>:<line>]...` (the graph
        # engine GE, ASCENDCL, RUNTIME, HCCL, ...), printed to the console with ASCEND_SLOG_PRINT_TO_STDOUT
        r"\bE[ZEIH]9999\b|ACL_ERROR_\w+|(?i)npu (?:function|kernel) error|aclnn\w+ failed|"
        r"^\[ERROR\] [A-Z][A-Z_]*\(\d+,[^)]*\):\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d",
        (
            "RuntimeError: The Inner error is reported as above. EZ9999: Inner Error!",
            "[ERROR] GE(173913,):2025-12-25-17:14:00.937.954 [tiling.cc:312]174006 BuildTilingParseOutputs: "
            "ErrorNo: 1343225857(Parameter invalid!) Failed to find func by type TransData",
            "[ERROR] RUNTIME(2861,python):2025-03-04-10:12:01.514.206 [stream.cc:1148]2861 GetError: "
            "report error module_type=1, module_name=EZ9999",
        ),
        "look up the error code in the CANN error reference; check that CANN, torch_npu and the driver match",
    ),
    Failure(
        "router-failed",
        "router found no healthy worker",
        "router",
        _F,
        r"Failed to create router|Timeout \d+s waiting for workers|(?i)no healthy workers? (?:available|found)",
        (
            "Failed to create router: Timeout 300s waiting for workers to become healthy",
            "Timeout 600s waiting for workers [http://10.0.0.1:30000] to become healthy",
        ),
        "the router cannot reach its workers: check their URLs and that each answers /health",
    ),
    Failure(
        "missing-module",
        "missing Python module",
        "Python",
        _F,
        r"^(?:ModuleNotFoundError|ImportError)\b",
        ("ModuleNotFoundError: No module named 'sgl_kernel'",),
        "install the missing package, in the version this release asks for (a wheel built for this torch/CUDA)",
    ),
    Failure(
        "native-abort",
        "process aborted (core dumped)",
        "native",
        _F,
        r"Aborted \(core dumped\)|Fatal Python error: Aborted",
        ("Aborted (core dumped)",),
        "a native library aborted: the lines just before name it (NCCL, a kernel, a C++ assert)",
    ),
    Failure(
        "hip-error",
        "HIP error",
        "HIP",
        _F,
        r"HIP error|hipError\w+",
        ("RuntimeError: HIP error: invalid device function",),
        "a ROCm kernel failed: check that the ROCm build matches this GPU (gfx) and the torch build",
    ),
    Failure(
        "cuda-error",
        "CUDA error",
        "CUDA",
        _F,
        r"CUDA error|CUDA driver error|cudaError\w+|no CUDA-capable device",
        ("RuntimeError: CUDA error: invalid argument",),
        "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing call",
    ),
    Failure(
        # a rank that reports another rank's failure (gloo's monitoredBarrier, SGLang's load barrier): the
        # other rank's own error, when the log holds it, is the cause
        "peer-failed",
        "another rank failed (this rank waited on it)",
        "torch.distributed",
        _F,
        r"received errors while waiting for send/recv from rank \d+|failed to pass monitoredBarrier|"
        r"could finish the model loading, but there are other ranks that didn't finish loading",
        (
            "[rank3]:[E421 04:13:43.426633564 ProcessGroupGloo.cpp:143] Rank 3 successfully reached "
            "monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 "
            "logs for faulty rank.",
            "[E ProcessGroupGloo.cpp:138] [Rank 0]: Rank 2 failed to pass monitoredBarrier in 30000 ms",
            "ValueError: TP rank 1 could finish the model loading, but there are other ranks that didn't finish "
            "loading. It is likely due to unexpected failures (e.g., OOM) or a slow node.",
        ),
        "another rank (or node) stopped first: its own log names the cause (an out-of-memory, a crash, a node "
        "still loading its weights); read the first error of the rank named, on every node",
        waits=True,
    ),
    Failure(
        # vLLM's engine gives its workers a deadline for each call: a worker that misses it is stuck
        "worker-rpc-timeout",
        "vLLM workers did not answer the engine's call in time (RPC timed out)",
        "vLLM",
        _F,
        r"RPC call to \w+ timed out",
        ("TimeoutError: RPC call to execute_model timed out.",),
        "a worker is stuck in a call (often a collective or a kernel): py-spy dump the worker processes; the "
        "lines before the timeout show what the engine last ran",
        hangs=True,
    ),
    Failure(
        # V0's AsyncLLMEngine waits VLLM_ENGINE_ITERATION_TIMEOUT_S (60 s) for one step of its engine
        "engine-iteration-timeout",
        "vLLM's engine step did not return in time (Engine iteration timed out)",
        "vLLM",
        _F,
        r"Engine iteration timed out",
        (
            "ERROR 08-29 02:12:22 async_llm_engine.py:658] Engine iteration timed out. This should never happen!",
        ),
        "a step is stuck in a worker (often a collective or a kernel): py-spy dump the workers; a step that is "
        "only slow (a long prefill) needs a larger VLLM_ENGINE_ITERATION_TIMEOUT_S",
        hangs=True,
    ),
    Failure(
        "gpu-memory-in-use",
        "GPU memory already held by another process",
        "CUDA",
        _F,
        r"Free memory on device .* is less than desired GPU memory utilization",
        (
            "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
        ),
        "another process holds this GPU's memory (an earlier server still running?): free the GPU (nvidia-smi "
        "shows who holds it), or lower --gpu-memory-utilization to the share that is free",
    ),
    Failure(
        # DeepEP's all-to-all gives up on a rank that does not answer: a wait on that rank
        "deepep-timeout",
        "DeepEP all-to-all timed out waiting on other ranks",
        "DeepEP",
        _F,
        r"DeepEP error: (?:CPU recv )?timeout",
        (
            "RuntimeError: DeepEP error: CPU recv timeout",
            "RuntimeError: DeepEP error: timeout (dispatch CPU)",
        ),
        "a rank stopped answering DeepEP's dispatch/combine: the other ranks' or nodes' first error is the "
        "cause; at start-up one rank still compiling kernels (DeepGEMM's JIT) does it: precompile them",
        waits=True,
    ),
    Failure(
        # ROCm's runtime reports a GPU kernel fault as an HSA status (its memory-aperture form is an illegal
        # memory access, above); torch sees it later as `unspecified launch failure`, the process aborts
        "hsa-exception",
        "GPU kernel fault on ROCm (HSA exception)",
        "HIP",
        _F,
        r"HSA_STATUS_ERROR_\w+",
        (
            ":0:rocdevice.cpp            :3586: 1183357978 us:  Callback: Queue 0x7f35e8100000 aborting with error "
            ": HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
            "HSA_STATUS_ERROR_EXCEPTION:",
        ),
        "a kernel faulted on the GPU: rerun with AMD_SERIALIZE_KERNEL=3 to find it; try --disable-cuda-graph or "
        "another --attention-backend to narrow it down, and a newer ROCm / AITER (graph-capture faults of ROCm "
        "runtimes up to 7.2.0 are known)",
        vllm_fix="a kernel faulted on the GPU: rerun with AMD_SERIALIZE_KERNEL=3 to find it; try --enforce-eager "
        "(no graphs) or " + VLLM_ATTN + ", and a newer ROCm / AITER",
    ),
)
