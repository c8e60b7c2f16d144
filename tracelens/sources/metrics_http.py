"""Follow a server's metrics endpoints: `http://HOST:PORT` polled every few seconds for `/metrics`
(Prometheus text, both engines) and `/server_info` (SGLang; vLLM answers 404 and is not asked again).

Each poll's answers become lines, parsed like any log's (`parsers/endpoint_metrics.py`): the exposition's
lines as they are, and the `/server_info` object on one line behind a `[YYYY-MM-DD HH:MM:SS]` stamp of
the poll (local time, as SGLang stamps its own lines), which dates the depth in force. A counter that
goes back is a restart of the server and starts a run (`parsers/restarts.py`); the analysis differences
the counters over the snapshots of a run (`analysis/positions.counter_positions`) and takes gauges as
they are. Standard library only: a source knows no
parser.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import urllib.error
import urllib.request

from tracelens.sources.events import LinesAppended, SourceConnected, SourceDisconnected
from tracelens.sources.protocol import Emit

DEFAULT_EVERY_SECONDS = 5.0
TIMEOUT_SECONDS = 5.0
ENDPOINTS = ("/metrics", "/server_info")
MAX_BYTES = 64 << 20  # an answer larger than this is not a metrics page


class MetricsFollower:
    """Polls ``base`` (`http://HOST:PORT`) every ``every`` seconds until stopped."""

    def __init__(self, base: str, label: str | None = None, every: float = DEFAULT_EVERY_SECONDS) -> None:
        self.base = base.rstrip("/")
        self.label = label or self.base
        self.every = every
        self.missing: set[str] = set()  # endpoints the server does not have (404)

    def close(self) -> None:
        """Nothing held between polls: `run` returns at its next wake-up once stopped."""

    def run(self, emit: Emit, stop: threading.Event) -> None:
        connected = False
        while not stop.is_set():
            try:
                data = self.poll()
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                emit(SourceDisconnected(self.label, f"{self.base}: {reason}", retry_in=self.every))
                connected = False
            else:
                if not connected:
                    asked = ", ".join(e for e in ENDPOINTS if e not in self.missing)
                    emit(SourceConnected(self.label, f"polling {asked} every {self.every:g} s"))
                    connected = True
                if data:
                    emit(LinesAppended(self.label, data))
            stop.wait(self.every)

    def poll(self) -> bytes:
        """One poll's lines: the exposition as it is, the `/server_info` object stamped, on one line."""
        stamp = dt.datetime.now().strftime("[%Y-%m-%d %H:%M:%S] ")
        out = bytearray()
        for endpoint in ENDPOINTS:
            if endpoint in self.missing:
                continue
            try:
                with urllib.request.urlopen(self.base + endpoint, timeout=TIMEOUT_SECONDS) as answer:
                    body = answer.read(MAX_BYTES)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    self.missing.add(endpoint)
                    continue
                raise
            if endpoint == "/server_info":
                one_line = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False)
                out += (stamp + one_line + "\n").encode()
            else:
                out += body if body.endswith(b"\n") or not body else body + b"\n"
        return bytes(out)
