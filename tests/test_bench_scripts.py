"""The bench's own scripts run on today's code: `bench/throughput.py` calls `bench/stages.py` for its
stage table, and a stage script that no longer fits the engine (its writer's API) breaks the bench."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, SAMPLE_LOGS


def test_the_stage_bench_measures_every_stage_of_a_real_log() -> None:
    log = SAMPLE_LOGS / "eagle3_embed_capture.log"
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stages.py"), str(log), "--mb", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout)
    assert figures["bytes"] == min(log.stat().st_size, 1 << 20)
    assert set(figures["stages"]) == {"read", "split", "parse", "write"}
    assert all(stage["cpu_s"] > 0 for stage in figures["stages"].values())
