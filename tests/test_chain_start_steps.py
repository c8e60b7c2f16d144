"""When a failure struck, and what it was, from what a paste of it holds: a start-up step's frames, an
engine's own word that it failed to start, a kernel build's failed `ninja` command. The lines that
name each are real lines from users' logs in issues."""

from __future__ import annotations

from test_chain import broken

_CI = "2025-10-09T04:13:06.6371779Z [rank0]: "


def test_a_cut_traceback_in_cuda_graph_capture_is_at_start_up() -> None:
    # frames only (cut at both ends), torch's `[rank0]:` output prefix behind a CI runner's stamps: the
    # capture of CUDA graphs is a step of a server's start
    frames = [
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 485, in capture',
        "    ) = self.capture_one_batch_size(bs, forward)",
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 661, in capture_one_batch_size',
        "    run_once()",
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 650, in run_once',
        "    logits_output_or_pp_proxy_tensors = forward(",
    ]
    verdict = broken([_CI + f for f in frames])
    assert "start-up" in verdict.headline, verdict.headline


def test_an_engine_that_failed_to_start_failed_at_start_up() -> None:
    # vLLM says the engine core failed to start, then its traceback, cut before any frame of a start step
    lead = "ERROR 07-10 14:49:36 [core.py:515] "
    lines = [
        "DEBUG 07-10 14:49:33 [utils.py:485] Waiting for 1 local, 0 remote core engine proc(s) to start.",
        f"{lead}EngineCore failed to start.",
        f"{lead}Traceback (most recent call last):",
        f'{lead}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 506, in run_engine_core',
        f"{lead}    engine_core = EngineCoreProc(*args, **kwargs)",
    ]
    verdict = broken(lines)
    assert "start-up" in verdict.headline, verdict.headline


def test_a_kernel_builds_failed_ninja_command_is_a_jit_compile_failure() -> None:
    lines = [
        "[2026-01-04 01:42:55 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/envs/slime/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py", line 299, in run_ninja',
        "    subprocess.run(",
        "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/0.5.3/80/"
        "cached_ops', '-f', '/root/.cache/flashinfer/0.5.3/80/cached_ops/batch_prefill/build.ninja']' returned "
        "non-zero exit status 1.",
    ]
    verdict = broken(lines)
    assert verdict.causes[0] == "jit-compile", (verdict.causes, verdict.headline)


def test_torchs_rank_prefix_on_its_glog_lines_names_the_ranks() -> None:
    # c10d's watchdog lines behind torch's per-rank prefix, which on glog lines has no space (`[rank2]:[E`)
    def timeout(rank: int) -> str:
        return (
            f"[rank{rank}]:[E1001 16:06:04.537131842 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out."
        )

    verdict = broken([timeout(2), timeout(0), timeout(1)])
    assert "ranks 0-2" in verdict.headline, verdict.headline


def test_torchs_rank_prefix_names_the_rank_of_a_c10d_line() -> None:
    # a c10d line no catalog phrase routes as a fault is read in its own format: its rank prefix too
    lines = [
        "[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] Exception "
        "(either an error or timeout) detected by watchdog at work: 32, last enqueued NCCL work: 32, last "
        "completed NCCL work: 31.",
    ]
    verdict = broken(lines)
    assert "rank 3" in verdict.headline, verdict.headline


def test_a_cut_traceback_through_a_kernel_build_is_a_jit_compile_failure() -> None:
    # cut before its exception line, but its frames run ninja for a kernel build: the build failed
    lead = "ERROR 07-02 07:04:46 [core.py:500] "
    lines = [
        f"{lead}EngineCore failed to start.",
        f"{lead}Traceback (most recent call last):",
        f'{lead}  File "/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2506, in '
        "_run_ninja_build",
        f"{lead}    subprocess.run(",
        f'{lead}  File "/usr/lib/python3.12/subprocess.py", line 571, in run',
    ]
    verdict = broken(lines)
    assert verdict.causes[0] == "jit-compile", (verdict.causes, verdict.headline)


def test_a_traceback_cut_at_the_schedulers_construction_is_at_start_up() -> None:
    # the scheduler process failed while its `Scheduler` was being built; the paste ends at that call
    lines = [
        "[2025-09-08 18:19:22 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2586, in run_scheduler_process',
        "    scheduler = Scheduler(",
        "                ^^^^^^^^^^",
    ]
    verdict = broken(lines)
    assert "at start-up" in verdict.headline, verdict.headline


def test_a_traceback_cut_inside_a_model_step_is_while_serving() -> None:
    # no serving loop's frame in the paste: the model runner's sampling step (vLLM) and a worker's
    # generation step (SGLang's overlap thread) run only on requests
    lead = "(EngineCore_DP0 pid=6819) ERROR 01-27 01:24:41 [core.py:937] "
    vllm = [
        f'{lead}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 579, in sample_tokens',
        f"{lead}    return self.model_runner.sample_tokens(grammar_output)",
        f'{lead}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 3656, in '
        "sample_tokens",
        f"{lead}    propose_draft_token_ids(sampled_token_ids)",
    ]
    assert "while serving" in broken(vllm).headline, broken(vllm).headline
    sglang = [
        "[2025-03-10 10:46:09 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/tp_worker_overlap_thread.py", line 109, in forward_thread_func',
        "    self.forward_thread_func_()",
        '  File "/sglang/srt/managers/tp_worker_overlap_thread.py", line 140, in forward_thread_func_',
        "    logits_output, next_token_ids = self.worker.forward_batch_generation(",
    ]
    assert "while serving" in broken(sglang).headline, broken(sglang).headline
