"""`tracelens follow` as a stream of the current answer: a finding that grows is sent again under its id,
every event carries its run's verdict, and text lines fit the terminal's width. Real subprocesses on
real files, lines appended while `follow` reads them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from live_support import wait_for
from tui_support import START, TRACEBACK, append, decode

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(180)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def crash(rank: int) -> list[str]:
    """One rank's scheduler traceback: the ranks of one crash print the same one."""
    return [TRACEBACK[0].replace(" TP0]", f" TP{rank}]"), *TRACEBACK[1:]]


class Followed:
    """`tracelens follow --json` on a file, its events read as they are printed."""

    def __init__(self, *args: str) -> None:
        self.events: list[dict] = []
        self.process = subprocess.Popen(
            [*TRACELENS, "follow", "--json", "--interval", "0.2", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def of(self, code: str) -> list[dict]:
        return [e for e in list(self.events) if e.get("code") == code]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(timeout=10)


def test_a_crash_that_reaches_more_ranks_is_sent_again_under_its_id(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(START + [decode(i, 2.5) for i in range(20)] + crash(0) + crash(1)) + "\n")
    follow = Followed(str(log))
    try:
        said = lambda ranks: any(f"{ranks} rank(s)" in e["message"] for e in follow.of("fault-oom"))  # noqa: E731
        assert wait_for(lambda: said(2), timeout=90), follow.events
        first = follow.of("fault-oom")[0]
        assert first["event"] == "finding" and first["message"].startswith("2 rank(s) (TP0, TP1)")
        # the finding carries its run's verdict, fix included
        assert first["verdict"]["run"] == first["label"] == "server.log#1"
        assert first["verdict"]["status"] == "broken"
        assert "ranks 0, 1)" in first["verdict"]["headline"]  # the cause names the ranks it reached
        assert "fix" in first["verdict"]
        append(log, *crash(2))
        assert wait_for(lambda: said(3), timeout=60), follow.events
        append(log, *crash(3))
        assert wait_for(lambda: said(4), timeout=60), follow.events
        events = follow.of("fault-oom")
        assert [e["event"] for e in events] == ["finding", "update", "update"]
        assert {e["id"] for e in events} == {first["id"]}
        assert events[-1]["message"].startswith("4 rank(s) (TP0, TP1, TP2, TP3)")
        assert "ranks 0-3)" in events[-1]["verdict"]["headline"]
        # the run's stats say the newer verdict too
        stats = lambda: [e for e in list(follow.events) if e["event"] == "stats"]  # noqa: E731
        assert wait_for(lambda: "ranks 0-3)" in (stats()[-1]["headline"] or ""), timeout=30)
        assert not [e for e in follow.events if e["event"] == "retract"]
    finally:
        follow.stop()


def test_text_lines_fit_the_terminal_width(tmp_path: Path) -> None:
    log = SAMPLE_LOGS / "sweep_and_crash.log"
    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run(
        [*TRACELENS, "follow", "--cmd", f"cat {log}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    # a wrapped line goes on indented under its time; every run's verdict is in the stream, ended or not
    assert any(line.startswith("         ") for line in lines)
    text = " ".join(line.strip() for line in lines)
    for run in (1, 2, 3):
        assert f"sweep_and_crash.log#{run} ·" in text
    assert "BROKEN: crashed while serving: GPU out of memory" in text
