"""The failure chain on more excerpts users paste into issues: a launcher's word on how a child died,
a traceback pasted from its middle, a benchmark client whose requests failed. Each test is a small log
in the form the programs print; the lines that name a failure are real lines from users' logs."""

from __future__ import annotations

from test_chain import broken

# SGLang (0.5.x) raises this in the launcher when a scheduler process exits before it is ready; the
# exit code is minus the signal that ended the process.
_DIED = (
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: {code}). If exit code is -9 "
    "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
)
_LAUNCHER_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 647, in wait_for_ready',
    "    infos = _wait_for_scheduler_ready(scheduler_pipe_readers, scheduler_procs)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 1277, in '
    "_wait_for_scheduler_ready",
    "    raise _scheduler_died_error(i, scheduler_procs[i])",
]


def test_a_scheduler_that_died_of_another_signal_was_not_killed() -> None:
    # the message names SIGKILL only as a hint: exit code -3 is a SIGQUIT, not the OOM killer
    verdict = broken([*_LAUNCHER_FRAMES, _DIED.format(code=-3)])
    assert verdict.causes == ["scheduler-died"], (verdict.causes, verdict.headline)
    assert "killed" not in verdict.headline, verdict.headline


def test_a_scheduler_that_died_of_sigkill_was_killed() -> None:
    verdict = broken([*_LAUNCHER_FRAMES, _DIED.format(code=-9)])
    assert verdict.causes == ["killed"], (verdict.causes, verdict.headline)
