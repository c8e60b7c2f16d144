"""Live sources and incremental analysis, headless (no Textual): what `tracelens tui` and
`tracelens follow` are built on.

    from tracelens.live import LiveSession, parse_spec
    session = LiveSession([parse_spec("server.log"), parse_spec("gpu1:/var/log/sglang.log")])
    session.subscribe(print)
    session.start()

Modules: `spec` (source names), `tail` (local files), `remote` (ssh), `command` (`--cmd`, stdin),
`replay`, `merge` (several sources by time), `store` (line text), `index` (the log view's model),
`session` (parse as lines arrive, analyse at a bounded rate), `status` (what the screen shows), `events`.
"""

from tracelens.live.session import LiveSession, SourceState
from tracelens.live.spec import SourceSpec, command_spec, parse_spec

__all__ = ["LiveSession", "SourceSpec", "SourceState", "command_spec", "parse_spec"]
