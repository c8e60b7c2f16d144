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

from tracelens.live.session import LiveSession, SourceState
from tracelens.live.spec import SourceSpec, command_spec, expand_recorded, parse_spec

__all__ = ["LiveSession", "SourceSpec", "SourceState", "command_spec", "expand_recorded", "parse_spec"]
