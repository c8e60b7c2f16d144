"""The live screen driven by Textual's pilot: state and messages as lines arrive, and every key."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from test_metric_restarts import page
from tui_support import EMBED, TRACEBACK, append, decode, session_for, until, write_start

from tracelens import analyze
from tracelens.analysis.expectations import Expectations
from tracelens.live import events as ev
from tracelens.live.index import KIND_CODES, LineFilter
from tracelens.sources import events as src
from tracelens.tables.schema import Kind
from tracelens.tui.app import SessionReported, TraceLensApp
from tracelens.tui.screens import FilterScreen, HelpScreen, VerdictScreen

from conftest import SAMPLE_LOGS

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]
SIZE = (150, 50)


def _app(path: Path, **kwargs) -> TraceLensApp:
    return TraceLensApp(session_for(path, **kwargs), report_path=path.parent / "report.html")


async def test_a_growing_file_shows_new_accept_len_values(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(
            lambda: app.acceptance.run is not None and app.acceptance.run.accept_len is not None
        )
        assert app.acceptance.current_accept_len == pytest.approx(2.54)
        points = app.acceptance.run.series.height
        append(log, decode(30, 3.41, 120.0))
        # the newest decode line shows at once, before the next analysis
        assert await until(lambda: app.acceptance.current_accept_len == pytest.approx(3.41))
        assert await until(lambda: app.acceptance.run.series.height == points + 1)
        assert app.acceptance.run.accept_len == pytest.approx(3.41)
        assert "3.41" in str(app.acceptance.render_text())
        assert "LinesParsed" in app.events_seen and "AnalysisUpdated" in app.events_seen
        await pilot.pause()


async def test_an_embed_capture_line_flips_the_capture_panel(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log, expectations=Expectations(embed_capture=False))
    async with app.run_test(size=SIZE):
        assert await until(lambda: app.capture.embed_state == "as expected")
        assert "as expected" in str(app.capture.render_text())
        append(log, EMBED, decode(40, 1.7))
        assert await until(lambda: app.capture.embed_state == "unexpected")
        text = app.capture.render_text()
        assert "unexpected embedding capture (layer_id -1) (error)" in str(text)
        assert any("red" in str(span.style) for span in text.spans)


async def test_capture_errors_are_said_in_red_and_never_beside_as_expected(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    # The draft expects the embedding, so the embed state alone reads "as expected".
    nan = "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 7168]) norm=nan"
    append(log, EMBED, nan, decode(40, 1.05))
    app = _app(log, expectations=Expectations(embed_capture=True))
    async with app.run_test(size=SIZE):
        assert await until(lambda: bool(getattr(app.capture, "problems", None)))
        text = app.capture.render_text()
        assert "NaN/zero norms" in str(text)
        assert "1 NaN/inf/zero norm(s)" in str(text)
        assert "as expected" not in str(text)
        assert any("red" in str(span.style) for span in text.spans)
        assert app.capture.border_title == "EAGLE-3 capture · server.log#1"
        # The verdict strip names the run and says it is broken, and the error comes first in the list.
        assert await until(lambda: "BROKEN" in str(app.verdicts.render_text()))
        assert "server.log#1" in str(app.verdicts.render_text())
        assert app.findings.findings[0].severity == "error"
        # Opening a log that already holds errors raises no toast: the strip says it.
        assert not app._notifications


async def test_a_key_switches_the_run_the_panels_show(tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    write_start(first)
    write_start(second)
    app = TraceLensApp(session_for(first, second), report_path=tmp_path / "report.html")
    async with app.run_test(size=SIZE) as pilot:
        assert await until(
            lambda: (
                sum(r.label is not None for r in app.session.snapshot.runs) == 2
                and "#1" in str(app.acceptance.border_title)
            )
        )
        before = app.acceptance.border_title
        await pilot.press("s")
        assert await until(lambda: app.acceptance.border_title != before)
        assert {before, app.acceptance.border_title} == {"acceptance · a.log#1", "acceptance · b.log#1"}
        assert app.capture.border_title.endswith(app.acceptance.border_title.split(" · ")[1])


async def test_the_panels_open_on_the_worst_run_of_any_source(tmp_path: Path) -> None:
    healthy, crashed = tmp_path / "a.log", tmp_path / "b.log"
    write_start(healthy)
    write_start(crashed)
    append(crashed, *TRACEBACK)
    app = TraceLensApp(session_for(healthy, crashed), report_path=tmp_path / "report.html")
    async with app.run_test(size=(80, 24)):
        strip = lambda: str(app.verdicts.render_text())  # noqa: E731
        assert await until(lambda: "BROKEN" in strip() and "HEALTHY" in strip())  # both sources judged
        lines = strip().splitlines()
        assert "BROKEN" in lines[0] and "b.log#1" in lines[0] and lines[0].startswith("▶")
        assert "a.log#1" in lines[1]
        assert app.current_run == (str(crashed), 1)
        assert app.acceptance.border_title.endswith("b.log#1")


async def test_an_ended_broken_run_keeps_its_verdict_and_fix_at_80x24(tmp_path: Path) -> None:
    """Run 1 captures the embedding for a draft not trained with it (broken, with a fix); runs 2 and 3
    start the server again, fixed. At 80x24, with a window that run 1 leaves, run 1 keeps its verdict
    and fix on the strip, `s` reaches it and `v` says its fix whole."""
    broken = (SAMPLE_LOGS / "eagle3_embed_capture.log").read_text()
    fixed = (SAMPLE_LOGS / "eagle3_fixed.log").read_text()
    log = tmp_path / "server.log"
    log.write_text(broken)
    app = TraceLensApp(session_for(log, window_lines=3000), report_path=tmp_path / "report.html")
    runs = lambda: {r.run: r for r in app.session.snapshot.every_run}  # noqa: E731
    async with app.run_test(size=(80, 24)) as pilot:
        assert await until(lambda: "BROKEN" in str(app.verdicts.render_text()), timeout=60)
        assert "eagle_aux_hidden_state_layer_ids" in (runs()[1].fix or "")
        for start in (fixed, fixed):  # two more starts, each parsed before the next
            count = len(runs())
            with log.open("a") as fh:
                fh.write(start)
            assert await until(
                lambda count=count: len(runs()) == count + 1 and app.session.idle(), timeout=90
            )
        assert await until(lambda: app.session.snapshot.lines == len((broken + fixed * 2).splitlines()))
        assert await until(lambda: runs()[3].status is not None)
        # run 1 keeps the verdict `check` gives it on the whole log
        batch = next(v for v in analyze([log]).verdicts if v.run == 1)
        first = runs()[1]
        assert first.ended and first.status == batch.status == "broken"
        assert (first.headline, first.fix) == (batch.headline, batch.fix)
        fix = first.fix
        assert fix and "eagle_aux_hidden_state_layer_ids" in fix
        assert [r.run for r in app.session.snapshot.runs] == [3]  # the source's current run
        # Every run is on the strip, worst first, each line cut at a word boundary to the width.
        lines = str(app.verdicts.render_text()).splitlines()
        assert len(lines) == 3 and "BROKEN" in lines[0] and "server.log#1 (ended)" in lines[0]
        assert all(len(line) <= app.verdicts.size.width for line in lines)
        shown = lines[0].split(": ", 1)[1]
        assert shown.endswith("…") and first.headline.startswith(shown[:-1])
        assert first.headline[len(shown) - 1] in " ,"
        assert await until(lambda: app.verdicts.size.height == 3)  # once laid out
        assert app.verdicts.region.bottom <= 24
        # The panels open on the worst run; its fix is on the screen, named.
        assert app.current_run == first.key
        assert app.fix_line.display and app.fix_line.region.bottom <= 24
        assert str(app.fix_line.render_text()).startswith(f"fix {first.label}: {' '.join(fix.split()[:3])}")
        assert app.acceptance.border_title.endswith(str(first.label))
        # `s` goes through every run and back to the first
        seen = [first.key]
        for _ in range(3):
            await pilot.press("s")
            assert await until(lambda before=seen[-1]: app.current_run != before)
            seen.append(app.current_run)
        seen = seen[1:]
        assert [key[1] for key in seen if key] == [2, 3, 1]
        assert app.capture.border_title.endswith(str(first.label))
        await pilot.press("v")
        assert await until(lambda: isinstance(app.screen, VerdictScreen))
        whole = str(app.screen.render_text())
        assert fix in whole and first.headline in whole
        await pilot.press("escape")
        assert await until(lambda: not isinstance(app.screen, VerdictScreen))


async def test_a_traceback_adds_a_fault_finding(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: app.session.analyses >= 1)
        assert not any(f.code.startswith("fault-") for f in app.findings.findings)
        append(log, *TRACEBACK)
        assert await until(lambda: any(f.code == "fault-oom" for f in app.findings.findings))
        assert app.findings.findings[0].code == "fault-oom"  # errors pinned on top
        assert await until(lambda: app.header.snapshot.runs[0].phase == "crashed")
        # selecting it jumps to its evidence line
        app.findings.focus()
        app.findings.highlighted = 0
        await pilot.press("enter")
        assert await until(
            lambda: (
                app.log_view.cursor < len(app.log_view.view)
                and "hit an exception" in app.session.index.text(int(app.log_view.view[app.log_view.cursor]))
            )
        )
        assert not app.log_view.follow


async def test_filters_by_kind_rank_and_regex(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    append(log, *TRACEBACK, "[2026-11-20 11:00:00 TP3] Decode batch, #running-req: 1, accept len: 2.00, ")
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: app.session.analyses >= 1 and len(app.log_view.view) == 31)
        view = app.log_view
        view.set_filter(LineFilter(kinds=frozenset({Kind.FAULT})))
        assert len(view.view) == 4
        assert set(app.session.index.kinds(view.view)) == {KIND_CODES[Kind.FAULT]}
        view.set_filter(LineFilter(rank="TP3"))
        assert len(view.view) == 1
        assert app.session.index.text(int(view.view[0])).startswith("[2026-11-20 11:00:00 TP3]")
        view.set_filter(LineFilter(pattern=r"accept len: 2\.5[02]"))
        assert await until(lambda: len(view.view) == 8)
        # the filter screen, driven by keys: clear, then regex only
        await pilot.press("f")
        assert await until(lambda: isinstance(app.screen, FilterScreen))
        await pilot.click("#clear")
        assert await until(lambda: not view.line_filter.active and len(view.view) == 31)
        await pilot.press("f")
        assert await until(lambda: isinstance(app.screen, FilterScreen))
        app.screen.query_one("#pattern").value = "OutOfMemory"
        await pilot.click("#apply")
        assert await until(lambda: view.line_filter.pattern == "OutOfMemory" and len(view.view) == 1)
        # new lines that match arrive in the filtered view
        append(log, "torch.OutOfMemoryError: again")
        assert await until(lambda: len(view.view) == 2)


async def test_lines_that_arrive_under_a_dialog_reach_the_view_behind_it(tmp_path: Path) -> None:
    """The session's events update the main screen's widgets while a dialog (the filter screen) is on
    top of them."""
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: len(app.log_view.view) == 26)
        await pilot.press("f")
        assert await until(lambda: isinstance(app.screen, FilterScreen))
        append(log, "[2026-11-20 11:00:00 TP3] Decode batch, #running-req: 1, accept len: 2.00, ")
        assert await until(lambda: len(app.log_view.view) == 27)
        assert isinstance(app.screen, FilterScreen)
        await pilot.press("escape")
        assert await until(lambda: not isinstance(app.screen, FilterScreen))


async def test_an_event_after_the_views_are_gone_is_dropped(tmp_path: Path) -> None:
    """As the app closes, its widgets are removed before the session stops, and the session's threads
    may still report: such an event has no view to update and must not fail the app (seen in CI:
    `NoMatches` for `LogView` as the filter test ended)."""
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: len(app.log_view.view) == 26)
        await app.screen_stack[0].query_children().remove()
        app.post_message(SessionReported(ev.LinesIndexed("server.log", 1)))
        app.post_message(SessionReported(ev.SourceStateChanged("server.log", src.RECONNECTING, "")))
        await pilot.pause()
        assert list(app.events_seen)[-2:] == ["LinesIndexed", "SourceStateChanged"]


async def test_search_next_and_previous(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: len(app.log_view.view) == 26)
        view = app.log_view
        await pilot.press("slash", *"accept len: 2.52", "enter")
        assert await until(lambda: view.search == "accept len: 2.52" and view.cursor == 8)
        await pilot.press("n")
        assert await until(lambda: view.cursor == 13)
        await pilot.press("N")
        assert await until(lambda: view.cursor == 8)
        await pilot.press("N")  # wraps around to the last match
        assert await until(lambda: view.cursor == 23)
        assert not view.follow
        await pilot.press("end")
        assert await until(lambda: view.follow and view.cursor == 25)


async def test_pause_next_fault_report_help_and_quit(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    append(log, *TRACEBACK, decode(50, 2.6))
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: app.session.analyses >= 1 and len(app.log_view.view) == 31)
        view = app.log_view
        await pilot.press("p")
        assert view.frozen and app.header.paused
        append(log, decode(51, 2.7))
        assert await until(lambda: app.session.index.count() == 32)
        await pilot.pause(0.2)
        assert len(view.view) == 31  # paused: the view keeps its lines
        await pilot.press("p")
        assert await until(lambda: len(view.view) == 32 and view.follow)
        await pilot.press("home", "e")
        assert "hit an exception" in app.session.index.text(int(view.view[view.cursor]))
        await pilot.press("e")
        assert await until(lambda: view.cursor == 27)  # next fault line: the traceback's next line
        await pilot.press("r")
        report = tmp_path / "report.html"
        assert await until(lambda: report.exists() or app.last_report is not None, timeout=60)
        await pilot.press("question_mark")
        assert await until(lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        assert await until(lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("q")
    assert app.session.stopped


async def test_scrolling_up_pauses_follow(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log, decodes=200)
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(lambda: len(app.log_view.view) == 206)
        view = app.log_view
        assert view.follow and view.cursor == 205
        await pilot.press("pageup")
        assert not view.follow
        append(log, decode(300, 2.0))
        assert await until(lambda: len(view.view) == 207)
        assert view.cursor < 205  # it stayed where the user put it
        await pilot.press("end")
        assert view.follow and view.cursor == 206
        np.testing.assert_array_equal(view.view, np.arange(207))


async def test_the_screen_keeps_a_bounded_history(tmp_path: Path) -> None:
    """A session runs for days: the event names kept, the plot's points and the toasts on screen are
    capped, the newest kept."""
    from tui_support import START

    from tracelens.live import events as ev
    from tracelens.live.status import SNAPSHOT_POINTS
    from tracelens.tui.app import EVENTS_KEPT, TOASTS_KEPT, SessionReported

    log = tmp_path / "server.log"
    lines = START + [decode(i // 8, 2.5 + 0.01 * (i % 5)) for i in range(SNAPSHOT_POINTS + 500)]
    log.write_text("\n".join(lines) + "\n")
    app = _app(log)
    async with app.run_test(size=SIZE) as pilot:
        assert await until(
            lambda: app.session.snapshot.lines == len(lines) and app.acceptance.run is not None
        )
        assert app.acceptance.run is not None
        assert 0 < app.acceptance.run.series.height <= SNAPSHOT_POINTS + 1  # the plot's points
        for i in range(EVENTS_KEPT + 200):
            app.post_message(SessionReported(ev.SessionFailed(f"failure {i}")))
        last = f"failure {EVENTS_KEPT + 199}"
        assert await until(lambda: any(n.message == last for n in app._notifications))
        await pilot.pause()
        assert len(app.events_seen) == EVENTS_KEPT and app.events_seen[-1] == "SessionFailed"
        toasts = [n.message for n in app._notifications]
        assert len(toasts) <= TOASTS_KEPT and toasts[-1] == last


async def test_the_title_says_the_scroll_back_limit_once_lines_were_dropped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log, decodes=2)  # 8 lines: all held
    app = _app(log, scrollback=10)
    async with app.run_test(size=SIZE) as pilot:
        view = app.log_view
        assert await until(lambda: app.session.analyses >= 1 and len(view.view) == 8)
        assert "scroll-back" not in view.border_title
        append(log, *TRACEBACK)
        assert await until(lambda: any(f.code == "fault-oom" for f in app.findings.findings))
        append(log, *(decode(60 + i, 2.6) for i in range(20)))
        assert await until(
            lambda: app.session.index.count() == 32 and "scroll-back" in str(view.border_title)
        )
        # the finding keeps its evidence text after the line left the index (the worker's copy)
        assert await until(app.session.idle)  # an analysis covers the lines that pushed it out
        oom = next(f for f in app.session.findings if f.code == "fault-oom")
        assert any("hit an exception" in e.text for e in oom.evidence), oom.evidence
        assert "scroll-back: newest 10 lines" in str(view.border_title)
        assert 10 <= len(view.view) <= 11 and view.index.line_numbers(view.view[-1:]).tolist() == [32]
        # the traceback's lines are gone from the view: its finding says so instead of jumping
        app.findings.focus()
        app.findings.highlighted = 0
        await pilot.press("enter")
        assert await until(lambda: any("no longer held" in str(n.message) for n in app._notifications))
        # filters keep working on what is held
        view.set_filter(LineFilter(kinds=frozenset({Kind.FAULT})))
        assert len(view.view) == 0
        view.set_filter(LineFilter(kinds=frozenset({Kind.BATCH})))
        assert await until(lambda: len(view.view) >= 10)


async def test_the_per_position_curves_run_against_run(tmp_path: Path) -> None:
    """Saved `/metrics` pages of two server lives (the counters go back between them), then a third life
    appended: a row per run with its own curve, the run the panels show marked, and `s` moves the mark."""
    pages = tmp_path / "metrics.prom"
    pages.write_text(
        page(1000, 100, [80, 50, 20])
        + page(1500, 300, [180, 90, 30])  # +200 drafts: 50% 20% 5%
        + page(400, 50, [20, 10, 5])  # the server started again
        + page(600, 150, [75, 45, 30]),  # 150 drafts since its start: 50% 30% 20%
        encoding="utf-8",
    )
    app = _app(pages)
    async with app.run_test(size=SIZE) as pilot:
        table = lambda: str(app.acceptance.render_text()).split("draft position", 1)[-1]  # noqa: E731
        assert await until(lambda: "metrics.prom#1" in table())
        rows = {re.search(r"metrics\.prom#\d", line)[0]: line for line in table().splitlines()[1:]}
        assert rows.keys() == {"metrics.prom#0", "metrics.prom#1"}
        assert "50%  20%   5%" in rows["metrics.prom#0"] and "50%  30%  20%" in rows["metrics.prom#1"]
        assert all(line.endswith("vllm, vllm counters") for line in rows.values())
        marked = [line for line in rows.values() if line.startswith("▶")]
        assert len(marked) == 1 and app.acceptance.border_title.endswith(marked[0].split()[1])
        await pilot.press("s")
        assert await until(lambda: [ln for ln in table().splitlines() if ln.startswith("▶")] != marked)
        append(pages, *page(10, 100, [90, 60, 40]).splitlines())  # a third life
        assert await until(lambda: "metrics.prom#2" in table())
        assert "90%  60%  40%" in next(ln for ln in table().splitlines() if "metrics.prom#2" in ln)
