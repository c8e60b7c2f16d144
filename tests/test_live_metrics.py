"""The live metrics source `http://HOST:PORT`: a real HTTP server process on 127.0.0.1 (the standard
library's `http.server`, serving files named `metrics` and `server_info` whose texts the test rewrites
between polls) followed by `follow --json`, alone and beside a log.

The texts are the engines' 2026 formats: vLLM's `/metrics` counters (`vllm/v1/spec_decode/metrics.py`:
`vllm:spec_decode_num_drafts_total`, `vllm:spec_decode_num_accepted_tokens_per_pos_total{position}`) in
Prometheus text, SGLang's `/server_info` (`internal_states` per DP rank with `avg_spec_accept_length` and,
with adaptive speculation, the `speculative_num_steps` in force).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_support import write_start

from tracelens.errors import InputError
from tracelens.live.spec import HTTP, parse_spec
from tracelens.sources.events import LinesAppended, SourceConnected, SourceDisconnected
from tracelens.sources.metrics_http import MetricsFollower

TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _page(drafts: float, accepted: list[float]) -> str:
    rows = [
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}',
    ]
    rows += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{i}"}} {v}'
        for i, v in enumerate(accepted)
    ]
    return "\n".join(rows) + "\n"


def _write(path: Path, text: str) -> None:
    """Replace a served file whole, so that a poll never reads half of it."""
    part = path.with_suffix(".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "served"
    root.mkdir()
    _write(root / "metrics", _page(100, [80, 50, 20]))
    _write(
        root / "server_info",
        json.dumps({"internal_states": [{"avg_spec_accept_length": 2.4, "speculative_num_steps": 3}]}),
    )
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until it answers
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.05)
    try:
        yield base, root
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_url_is_a_source_of_its_own() -> None:
    spec = parse_spec("http://127.0.0.1:30000?every=0.5")
    assert (spec.kind, spec.label, spec.every) == (HTTP, "http://127.0.0.1:30000", 0.5)
    for bad in ("http://127.0.0.1:30000/metrics", "http://127.0.0.1:30000?every=0", "http://h:1?often=2"):
        with pytest.raises(InputError):
            parse_spec(bad)


def test_the_follower_polls_both_endpoints_and_reports_a_dead_server(server: tuple[str, Path]) -> None:
    base, root = server
    events: list[object] = []
    stop = threading.Event()
    follower = MetricsFollower(base, every=0.1)
    thread = threading.Thread(target=follower.run, args=(events.append, stop))
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and sum(isinstance(e, LinesAppended) for e in events) < 2:
            time.sleep(0.02)
        data = next(e for e in events if isinstance(e, LinesAppended)).data.decode()
        assert isinstance(events[0], SourceConnected)
        assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100' in data
        info = [line for line in data.splitlines() if '"internal_states":' in line]
        assert len(info) == 1 and info[0].startswith("[20") and info[0].endswith("}")  # stamped, one line
        os.remove(root / "server_info")  # an engine without /server_info (vLLM): asked no more
        while time.monotonic() < deadline and "/server_info" not in follower.missing:
            time.sleep(0.02)
        assert "/server_info" in follower.missing
    finally:
        stop.set()
        thread.join(timeout=10)
    dead = MetricsFollower(f"http://127.0.0.1:{_free_port()}", every=0.05)
    seen: list[object] = []
    stop = threading.Event()
    thread = threading.Thread(target=dead.run, args=(seen.append, stop))
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not seen:
        time.sleep(0.02)
    stop.set()
    thread.join(timeout=10)
    assert isinstance(seen[0], SourceDisconnected)


_READERS: dict[int, queue.Queue[str | None]] = {}


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """The stdout lines of ``process``, read on a thread of their own (None at the end): a wait for a
    line that never comes ends at its deadline instead of hanging the test."""
    lines = _READERS.get(process.pid)
    if lines is None:
        lines = _READERS[process.pid] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def pump() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
    return lines


def _stats(process: subprocess.Popen[str], wanted, timeout: float = 60.0) -> dict:
    """The first `stats` event of ``process`` (follow --json) that ``wanted`` accepts."""
    lines = _lines(process)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        event = json.loads(line)
        if event.get("event") == "stats" and wanted(event):
            return event
    raise AssertionError("no such stats line")


def test_follow_shows_acceptance_and_depth_as_they_change(server: tuple[str, Path], tmp_path: Path) -> None:
    base, root = server
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    process = subprocess.Popen(
        [*TRACELENS, "follow", "--json", "--interval", "0.3", f"{base}?every=0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        first = _stats(process, lambda e: e.get("positions"))
        # nothing drafted between the polls yet: the totals since the server started
        assert first["positions"] == [0.8, 0.5, 0.2]
        assert (first["engine"], first["positions_basis"], first["depth"]) == ("vllm", "vllm_counters", 3)
        # 200 drafts more, accepted 100, 40, 10 more: the counters are differenced
        _write(root / "metrics", _page(300, [180, 90, 30]))
        _write(
            root / "server_info",
            json.dumps({"internal_states": [{"avg_spec_accept_length": 1.9, "speculative_num_steps": 2}]}),
        )
        changed = _stats(process, lambda e: e.get("positions") == [0.5, 0.2, 0.05] and e.get("depth") == 2)
        assert "per position 50% 20% 5% (vllm, vllm counters)" in changed["acceptance"]
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_a_server_restart_in_the_counters_starts_a_new_run(server: tuple[str, Path], tmp_path: Path) -> None:
    """The served counters go back (the server behind the address started again): `follow --json`, the
    address beside a log, shows a second run, whose figures count from its start, while the first ends
    with its differenced figures; each change of a run's curve is sent, its verdict the same or not."""
    base, root = server
    os.remove(root / "server_info")  # vLLM's: its lines carry no time, and nothing else moves
    log = tmp_path / "server.log"
    write_start(log)
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    process = subprocess.Popen(
        [
            *TRACELENS,
            "follow",
            "--json",
            "--interval",
            "0.3",
            "--stats-every",
            "0",
            str(log),
            f"{base}?every=0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    seen: list[dict] = []  # the address' stats, in order

    def stats(run: int, wanted) -> dict:
        def mine(event: dict) -> bool:
            if event.get("source") != base:
                return False
            seen.append(event)
            return event.get("run") == run and wanted(event)

        return _stats(process, mine)

    try:
        stats(0, lambda e: e.get("positions") == [0.8, 0.5, 0.2])
        _write(root / "metrics", _page(300, [180, 90, 30]))
        first = stats(0, lambda e: e.get("positions") == [0.5, 0.2, 0.05])
        # the restart: 50 drafts since the new server started, accepted 20, 10, 5
        _write(root / "metrics", _page(50, [20, 10, 5]))
        second = stats(1, lambda e: bool(e.get("positions")))
        assert second["positions"] == [0.4, 0.2, 0.1]
        assert second["label"] != first["label"] and not second["ended"]
        # 100 drafts more on the new server: its run counts from its start, 150 drafts in all
        _write(root / "metrics", _page(150, [75, 45, 30]))
        stats(1, lambda e: e.get("positions") == [0.5, 0.3, 0.2])
        # 100 more, accepted better: the same verdict, a new curve
        _write(root / "metrics", _page(250, [150, 95, 60]))
        stats(1, lambda e: e.get("positions") == [0.6, 0.38, 0.24])
        over = [e for e in seen if e.get("run") == 0 and e.get("ended")]
        ended = over[0] if over else stats(0, lambda e: e.get("ended"))
        assert ended["positions"] == [0.5, 0.2, 0.05] and ended["label"] == first["label"]
        # never a figure of the two servers mixed
        assert all(e["positions"] in ([], [0.8, 0.5, 0.2], [0.5, 0.2, 0.05]) for e in seen if e["run"] == 0)
    finally:
        process.terminate()
        process.wait(timeout=20)


def _sglang_page(accept_len: float, rate: float) -> str:
    """SGLang's gauges as `python/sglang/srt/metrics/collector.py` (2026) exposes them, one series per rank."""
    labels = 'engine_type="unified",model_name="m",tp_rank="0",pp_rank="0",dp_rank="0"'
    return (
        "# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\n"
        "# TYPE sglang:spec_accept_length gauge\n"
        f"sglang:spec_accept_length{{{labels}}} {accept_len}\n"
        "# HELP sglang:spec_accept_rate The average acceptance rate of speculative decoding.\n"
        "# TYPE sglang:spec_accept_rate gauge\n"
        f"sglang:spec_accept_rate{{{labels}}} {rate}\n"
    )


def test_an_sglang_server_shows_its_acceptance_against_the_depth_in_force(server: tuple[str, Path]) -> None:
    """SGLang's gauges taken as they are, normalised by the depth `/server_info` says is in force
    (`get_server_info`: the server args, `model_path` first, then `internal_states` per DP rank)."""
    base, root = server
    _write(root / "metrics", _sglang_page(2.8, 0.7))
    _write(
        root / "server_info",
        json.dumps(
            {
                "model_path": "m",
                "speculative_num_steps": 3,
                "internal_states": [{"avg_spec_accept_length": 2.6, "speculative_num_steps": 4}],
            }
        ),
    )
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    process = subprocess.Popen(
        [*TRACELENS, "follow", "--json", "--interval", "0.3", "--stats-every", "0", f"{base}?every=0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        first = _stats(process, lambda e: e.get("served_accept_len") == 2.8 and e.get("depth") == 4)
        assert (first["engine"], first["served_from"]) == ("sglang", "sglang /metrics")
        assert first["served_rate"] == pytest.approx(1.8 / 4)
        assert "accept len 2.80, rate 45% (sglang /metrics) · depth 4" in first["acceptance"]
        # adaptive speculation lowered the depth; the gauge fell: the rate is against the new depth
        _write(root / "metrics", _sglang_page(2.2, 0.55))
        _write(
            root / "server_info",
            json.dumps(
                {
                    "model_path": "m",
                    "speculative_num_steps": 3,
                    "internal_states": [{"avg_spec_accept_length": 2.1, "speculative_num_steps": 2}],
                }
            ),
        )
        later = _stats(process, lambda e: e.get("served_accept_len") == 2.2 and e.get("depth") == 2)
        assert later["served_rate"] == pytest.approx(1.2 / 2)
    finally:
        process.terminate()
        process.wait(timeout=20)
