"""The failure catalog's first entries (`catalog` puts them before every other): graceful stops, noise
and the notes whose words would otherwise read as failures. A SIGTERM line that mentions an error is
still a stop; torch's advice under a CUDA error is no device-side assert."""

from __future__ import annotations

from tracelens.analysis.failure_kinds import Failure, Weight

_S, _N = Weight.SHUTDOWN, Weight.NOISE

STOPS_AND_NOTES: tuple[Failure, ...] = (
    # --- graceful stops and noise first: a SIGTERM line that mentions an error is still a stop
    Failure(
        "shutdown-signal",
        "graceful shutdown (SIGTERM / SIGINT)",
        "server",
        _S,
        # `shutting down` inside a sentence is no stop (`proc died unexpectedly, shutting down client`):
        # only a line that starts with it, as uvicorn's and vLLM's stop lines do.
        r"^(?:INFO:\s+)?(?:Shutting down|Finished server process)|^\^C|^Terminated\b|"
        r"(?i)SIGTERM received|received SIGTERM|received signal (?:15|SIGTERM|SIGINT|2)\b|Draining requests|"
        r"Gracefully (?:exiting|shutting down)|shutdown triggered|^KeyboardInterrupt\b|Ctrl-C|Aborted by user|"
        r"trigger received signal=SIG(?:TERM|INT)\b|"
        # vLLM's engine core says so only when SIGTERM or SIGINT reached it (its handler raises SystemExit)
        r"^EngineCore exiting\.",
        (
            "SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
            "Received SIGTERM, shutting down",
            "INFO:     Shutting down",
            "INFO:     Finished server process [1234]",
            "Shutting down FastAPI HTTP server.",
            "KeyboardInterrupt",
            "[shutdown] API server: shutdown triggered",
            "Gracefully exiting...",
            "[shutdown] EngineCore: trigger received signal=SIGINT",
            "EngineCore exiting.",
            "^C",
        ),
    ),
    Failure(
        "child-terminated",
        "child process stopped by SIGTERM (exit -15)",
        "server",
        _S,
        r"exit ?code[=: ]*-15\b|exited with code -15|killed by signal 15",
        ("Child process unexpectedly failed with exitcode=-15. pid=4321",),
    ),
    Failure(
        "monitor-noise",
        "monitor thread error after its processes were gone",
        "Python",
        _N,
        r"psutil\.NoSuchProcess|NoSuchProcess|leaked semaphore|resource_tracker|"
        r"There appear to be \d+ leaked",
        (
            "psutil.NoSuchProcess: process no longer exists (pid=1234)",
            "UserWarning: resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown",
        ),
    ),
    # The advice torch prints under every CUDA or HIP error: part of that error, never an event of its own
    # (`Compile with TORCH_USE_CUDA_DSA` is no device-side assert). Anchored: a line that starts with it.
    Failure(
        "gpu-error-advice",
        "the advice torch prints under a CUDA or HIP error",
        "torch",
        Weight.NOTE,
        r"^(?:CUDA|HIP) kernel errors might be asynchronously reported|^For debugging consider passing "
        r"(?:CUDA|HIP|AMD)_\w+|^Compile with .TORCH_USE_(?:CUDA|HIP)_DSA|^Search for .\w+. in https?://",
        (
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
            "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
            "group__CUDART__TYPES.html for more information.",
        ),
    ),
)
