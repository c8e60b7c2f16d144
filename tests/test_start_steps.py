"""A start-up failure is said with its step (`analysis/start_steps.py`): each step's sample frame names it,
the deepest step of a traceback wins, a serving loop's weight update stays serving, and a log's last
start-up milestone names the step of a failure whose frames do not."""

from __future__ import annotations

import re

import polars as pl
import pytest
from test_chain import broken, serving
from test_detectors import server_args, stamp

from tracelens.analysis.start_steps import START_STEPS, frame_step


@pytest.mark.parametrize("step", START_STEPS, ids=lambda s: s.words)
def test_each_steps_sample_frame_names_it(step) -> None:
    function = re.search(r", in (\w+)$", step.sample)
    assert function is not None, step.sample
    named = pl.select(frame_step(pl.lit(function.group(1)))).item()
    assert named == step.words


def test_a_function_of_no_step_names_none() -> None:
    for function in ("run_scheduler_process", "__init__", "forward", "event_loop_normal"):
        assert pl.select(frame_step(pl.lit(function))).item() is None, function


def test_a_vllm_cut_traceback_is_in_the_step_its_deepest_call_names() -> None:
    # vLLM V1's engine core logs its traceback one ERROR line a line; the copy stops at the source line
    # of a call that is an assignment: the call is the step
    lead = "(EngineCore_DP0 pid=6506) ERROR 01-08 11:19:33 [core.py:866]"
    core = "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py"
    lines = [
        f"{lead} EngineCore failed to start.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "{core}", line 857, in run_engine_core',
        f"{lead}     engine_core = EngineCoreProc(*args, **kwargs)",
        f'{lead}   File "{core}", line 109, in __init__',
        f"{lead}     num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(",
        f'{lead}   File "{core}", line 240, in _initialize_kv_caches',
        f"{lead}     available_gpu_memory = self.model_executor.determine_available_memory()",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed at start-up while sizing the KV cache: "), verdict.headline


def test_the_deepest_step_of_a_traceback_names_it() -> None:
    # vLLM captures its CUDA graphs inside its warm-up: the capture is the step that failed
    worker = "/usr/lib/python3.12/site-packages/vllm/v1/worker"
    lines = [
        f"{stamp(30)} Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{worker}/gpu_worker.py", line 283, in compile_or_warm_up_model',
        "    self.model_runner.capture_model()",
        f'  File "{worker}/gpu_model_runner.py", line 2140, in capture_model',
        "    self._dummy_run(num_tokens)",
        f'  File "{worker}/gpu_model_runner.py", line 1820, in _dummy_run',
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    ]
    verdict = broken([server_args(0, spec=False), *lines])
    assert "at start-up during CUDA graph capture: " in verdict.headline, verdict.headline


def test_a_weight_update_of_a_serving_loop_is_serving_with_no_step() -> None:
    srt = "/sgl-workspace/sglang/python/sglang/srt"
    lines = [
        *serving(),
        f"{stamp(60)} Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{srt}/managers/scheduler.py", line 2410, in event_loop_normal',
        f'  File "{srt}/managers/scheduler.py", line 2980, in update_weights_from_tensor',
        f'  File "{srt}/model_executor/model_runner.py", line 820, in load_weights',
        "KeyError: 'model.layers.0.mlp.experts.w2_weight_scale'",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed while serving: "), verdict.headline
    assert "during weight loading" not in verdict.headline, verdict.headline


def test_a_failure_with_no_step_frame_is_in_the_last_milestones_step() -> None:
    lines = [
        server_args(0, spec=False),
        f"{stamp(2)} Load weight begin. avail mem=78.94 GB",
        f"{stamp(40)} Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.1 GB",
        f"{stamp(41)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 312, in __init__',
        "ValueError: unsupported attention backend for this model",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed at start-up after weight loading: ValueError"), (
        verdict.headline
    )
