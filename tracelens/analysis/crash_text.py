"""How a crash finding is said in a headline: its message without the `... hit an exception:` head, a
traceback cut before its exception line said so, and when it came (while serving, at start-up)."""

from __future__ import annotations

import re

# the head, behind the vLLM lead a traceback's lines keep (`ERROR 01-04 17:21:04 [executor.py:401] `, or
# a path there: `parsers.prefix.VLLM_FILE_INFO`)
_HIT = re.compile(
    r"^(?:exception: )?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?[\w./-]+:\d+\] )?\w+ hit an exception: "
)
TRACEBACK_HEAD = "Traceback (most recent call last)"
CUT_TRACEBACK = "a traceback with no exception line in the log"

# start-up events after which the server answers requests: the HTTP server is up
_SERVING_PHASES = frozenset({"ready", "app_startup", "uvicorn_running"})


def in_phase(headline: str, served: bool, last_phase: str | None) -> str:
    """`crashed ...` said with when: while serving once the run served or was ready, at start-up when
    it was starting (the chain's headline says it the same way)."""
    if not headline.startswith("crashed"):
        return headline
    up = last_phase in _SERVING_PHASES
    when = "while serving" if served or up else "at start-up" if last_phase else ""
    return headline.replace("crashed", f"crashed {when}", 1) if when else headline


def crash_what(text: str) -> str:
    """A fault's message without the `Scheduler hit an exception:` head; a traceback whose exception
    line is not in the log is said so, never shown by its first line."""
    text = _HIT.sub("", text)
    # a paste that stops inside the header line itself (`Traceback (most recent call`)
    if len(text.strip()) > len("Traceback") and f"{TRACEBACK_HEAD}:".startswith(text.strip()):
        return CUT_TRACEBACK
    # the header may sit behind a prefix the message kept (vLLM's `ERROR 01-11 03:46:48 [core.py:936]`)
    # or a printf placeholder (`WorkerProc hit an exception: %s`): nothing after it is no exception
    head = text.find(TRACEBACK_HEAD)
    rest = text[head + len(TRACEBACK_HEAD) :] if head >= 0 else text
    if not rest.strip(" :").removeprefix("%s").strip():
        return CUT_TRACEBACK
    return text
