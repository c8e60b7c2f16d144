"""`explain` costs what a line's length costs: rich's wrapping of a long text is quadratic (a 10 MB line
took 138 s), so a long text is left to the terminal to wrap. Measured as a ratio of two lengths, so
that the machine's speed cancels out."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def _explain_seconds(tmp_path: Path, mib: int) -> float:
    words = random.Random(mib)
    text = " ".join(f"word{words.randrange(100_000)}" for _ in range(mib * 100_000))[: mib << 20]
    log = tmp_path / f"long{mib}.log"
    log.write_text(f"[2026-11-20 14:03:26 TP0] {text}\n")
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    env["TRACELENS_MAX_LINE_BYTES"] = str(16 << 20)  # the line whole, not cut at the default 1 MiB
    started = time.perf_counter()
    done = subprocess.run([*TRACELENS, "explain", f"{log}:1"], capture_output=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > (mib << 20)
    return time.perf_counter() - started


def test_explain_on_a_long_line_is_linear(tmp_path: Path) -> None:
    short = _explain_seconds(tmp_path, 1)
    long = _explain_seconds(tmp_path, 4)
    # linear: about 4x at most (less: the start-up is the same); quadratic was 11x
    assert long < 5 * short, f"1 MiB {short:.1f} s, 4 MiB {long:.1f} s"
