"""Live sessions: followed sources (`tracelens.sources`) parsed as lines arrive and analysed at a
bounded rate, headless (no view library): what `tracelens tui` and `tracelens follow` are built on.

    from tracelens.live import LiveSession, parse_spec
    session = LiveSession([parse_spec("server.log"), parse_spec("gpu1:/var/log/sglang.log")])
    session.subscribe(print)
    session.start()

Modules: `spec` (what the user names as a source, and its follower), `pace` (a replay's timing),
`session` (parse as lines arrive, analyse at a bounded rate), `worker` (the parsing and analysing
process), `store` (line text), `index` (the log view's model), `merge` (several sources by time),
`status` (what a live view shows), `events` (what a session reports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracelens.lazy import lazy_names

if TYPE_CHECKING:
    from tracelens.live.session import LiveSession, SourceState
    from tracelens.live.spec import SourceSpec, command_spec, expand_recorded, parse_spec

__all__ = ["LiveSession", "SourceSpec", "SourceState", "command_spec", "expand_recorded", "parse_spec"]

# name -> its module. Imported on first use: a module of the package (the text `store`, whose
# scroll-back default a CLI option shows) does not load the session and its analysis.
_HOMES = {
    "LiveSession": ".session",
    "SourceState": ".session",
    "SourceSpec": ".spec",
    "command_spec": ".spec",
    "expand_recorded": ".spec",
    "parse_spec": ".spec",
}

__getattr__ = lazy_names(__name__, _HOMES)
