"""Log text is untrusted on a terminal too: escape sequences a log carries (the window title, a clipboard
write by OSC 52, a screen clear) never reach it, whichever command prints the text. Each command runs
on a real pty, as a user's terminal would see it."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
TITLE = "\x1b]0;PWNED-TITLE\x07"
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x1b\\"  # OSC 52: write "pwned" into the clipboard
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = TITLE + CLIPBOARD + CLEAR + "\r\x08"
# What rich itself may send to a terminal: SGR colours and nothing else.
_ONLY_STYLES = re.compile(r"\x1b\[[0-9;]*m")


def _hostile_log(folder: Path, in_model: bool = True) -> Path:
    """A real log whose model path (unless not ``in_model``: `compare --baseline` compares runs of one
    model), a server arg, a fault line and an unparsed line carry the sequences."""
    clean = (SAMPLE_LOGS / "eagle3_fixed.log").read_text().splitlines()
    lines = list(clean)
    # Inside a quoted server arg the OSCs end by BEL (a backslash would be an escape of the quote).
    osc = TITLE + CLIPBOARD.replace("\x1b\\", "\x07")
    lines[0] = lines[0].replace("attention_backend='fa3'", f"attention_backend='fa3{osc}'")
    if in_model:
        lines[0] = lines[0].replace(
            "model_path='/models/DeepSeek-V3'", f"model_path='/models/{osc}DeepSeek-V3-hostile'"
        )
    when = next(line for line in reversed(lines) if line.startswith("[2"))[1:20]
    lines += [
        f"[{when} TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/scheduler.py", line 1, in event_loop',
        f"RuntimeError: {osc} boom",
        "",
        f"garbage {HOSTILE} line",
    ]
    path = folder / "hostile.log"
    path.write_text("\n".join(lines) + "\n")
    # A second run of the plain log, so that `compare` prints the server args that differ.
    (folder / "plain.log").write_text("\n".join(clean) + "\n")
    return path


def on_a_pty(args: list[str], cwd: Path, columns: int = 100, timeout: float = 180) -> tuple[int, str]:
    """Run ``args`` with stdin, stdout and stderr on a new pty of ``columns``; its exit code and all
    it wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("TRACELENS_DEBUG", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the pty
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, out.decode("utf-8", errors="replace")


def _assert_clean(text: str) -> None:
    assert "\x1b]" not in text, "an OSC sequence reached the terminal"
    assert "\x07" not in text and "\x08" not in text
    rest = _ONLY_STYLES.sub("", text)
    assert "\x1b" not in rest, (
        f"an escape sequence reached the terminal: {rest[rest.index(chr(27)) :][:40]!r}"
    )


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["summary"], "hostile"),
        (["check"], "boom"),
        (["compare", "--baseline", "plain.log#1"], "attention_backend"),
        (["sql", "select text from unparsed"], "garbage"),
        (["sql", "--csv", "select text from unparsed"], "garbage"),
    ],
    ids=["summary", "check", "compare", "sql", "sql-csv"],
)
@pytest.mark.parametrize("columns", [80, 200])
def test_commands_on_a_terminal_send_no_escape_sequence_from_the_log(
    tmp_path: Path, command: list[str], shown: str, columns: int
) -> None:
    log = _hostile_log(tmp_path, in_model=command[0] != "compare")
    logs = [str(log), str(tmp_path / "plain.log")]
    code, text = on_a_pty([*TRACELENS, *command, "--no-cache", "-q", *logs], tmp_path, columns)
    assert code in (0, 1), text
    assert shown in text, text
    _assert_clean(text)


def test_explain_on_a_terminal_sends_no_escape_sequence(tmp_path: Path) -> None:
    log = _hostile_log(tmp_path)
    lines = log.read_bytes().split(b"\n")
    hostile = [i + 1 for i, line in enumerate(lines) if b"\x1b]" in line]
    assert len(hostile) == 3
    for where in (f"{log}:{n}" for n in hostile):
        code, text = on_a_pty([*TRACELENS, "explain", where], tmp_path)
        assert code == 0, text
        assert "kind" in text
        _assert_clean(text)


def test_follow_on_a_terminal_sends_no_escape_sequence(tmp_path: Path) -> None:
    log = _hostile_log(tmp_path)
    code, text = on_a_pty(
        [*TRACELENS, "follow", "--no-cache", "--cmd", f"cat {log}", "--stats-every", "0"], tmp_path
    )
    assert code == 0, text
    assert "boom" in text, text
    _assert_clean(text)
