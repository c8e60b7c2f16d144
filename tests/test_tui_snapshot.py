"""Snapshots of the live screen (Textual pinned in pyproject.toml, so a change here is a real change).
Update them with `pytest tests/test_tui_snapshot.py --snapshot-update` and look at the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_support import EMBED, append, until, write_start

from tracelens.live import LiveSession, parse_spec
from tracelens.tui.app import TraceLensApp

pytestmark = pytest.mark.timeout(120)
SIZE = (140, 44)


def _app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TraceLensApp:
    monkeypatch.chdir(tmp_path)  # labels are relative: the same on every machine
    write_start(Path("server.log"), decodes=40)
    append(Path("server.log"), EMBED)
    spec = parse_spec("server.log")
    session = LiveSession(
        [spec], interval=0.1, follower_options={spec.label: {"poll": 0.01}}, clock=lambda: 0.0
    )
    return TraceLensApp(session, clock=lambda: 0.0)


async def _settled(pilot) -> None:
    app = pilot.app
    assert await until(lambda: app.session.analyses >= 1 and app.session.idle() and app.findings.findings)
    await pilot.pause(0.2)


def test_live_screen(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=_settled)


def test_help_screen(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def run_before(pilot) -> None:
        await _settled(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)

    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=run_before)


def test_filtered_log(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracelens.live.index import LineFilter

    async def run_before(pilot) -> None:
        await _settled(pilot)
        pilot.app.log_view.set_filter(LineFilter(kinds=frozenset({"debug", "lifecycle"})))
        await pilot.pause(0.2)

    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=run_before)
