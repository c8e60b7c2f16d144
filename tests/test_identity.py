"""One name per source, everywhere: every host's log is `server.log`, so a run is labelled by the shortest
end of its source's name that tells it from the command's other sources (`sources.naming`). Two
same-named logs in two folders, two same-named members of one archive, two ssh hosts: the broken run
(an embedding capture the draft was not trained with) and the healthy one must keep their own verdicts,
findings, evidence and figures, and `--baseline` must pick the one named."""

from __future__ import annotations

import getpass
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from live_support import wait_for
from test_cli import run
from test_live_remote import sshd  # noqa: F401  (the real sshd fixture)

from tracelens.engine.ingest import analyze
from tracelens.live import LiveSession
from tracelens.live.spec import SSH, SourceSpec
from tracelens.report import build_plots
from tracelens.sources.naming import as_typed, candidates, short_names
from tracelens.sources.ssh import Backoff, RemoteTarget

from conftest import SAMPLE_LOGS

BROKEN = SAMPLE_LOGS / "eagle3_embed_capture.log"  # accept len about 1.76, embed-capture-unexpected
HEALTHY = SAMPLE_LOGS / "eagle3_fixed.log"  # accept len about 2.88


# ----------------------------------------------------------------------------- the names


@pytest.mark.parametrize(
    ("sources", "names"),
    [
        (
            ["/l/a/server.log", "/l/b/server.log", "/l/c/other.log"],
            ["a/server.log", "b/server.log", "other.log"],
        ),
        (["/logs/x/server.log"], ["server.log"]),
        (
            ["/x/logs.tar.gz:host1/server.log", "/x/logs.tar.gz:host2/server.log"],
            ["host1/server.log", "host2/server.log"],
        ),
        (["/x/a.tar.gz:server.log", "/x/b.zip:server.log"], ["a.tar.gz:server.log", "b.zip:server.log"]),
        (
            ["gpu-07:/var/log/server.log", "gpu-08:/var/log/server.log"],
            ["gpu-07:server.log", "gpu-08:server.log"],
        ),
        (["ssh://me@gpu-07:2222/var/log/server.log"], ["gpu-07:server.log"]),
        (["me@h:/a/s.log", "you@h:/a/s.log"], ["me@h:s.log", "you@h:s.log"]),
        (["gpu-07:/srv/server.log", "/srv/server.log"], ["gpu-07:server.log", "server.log"]),
        (["server.log", "/x/server.log"], ["server.log", "x/server.log"]),
        (["/logs/T10:00/server.log", "/logs/T11:30/server.log"], ["T10:00/server.log", "T11:30/server.log"]),
        (
            ["stdin", "cmd:kubectl logs -f pod", "replay:rec/server.log"],
            ["stdin", "cmd:kubectl logs -f pod", "replay:server.log"],
        ),
    ],
)
def test_each_source_gets_the_shortest_end_of_its_name_no_other_shares(sources, names) -> None:
    assert list(short_names(sources).values()) == names


def test_short_names_never_meet() -> None:
    """However the names overlap, two sources never get one short name, and each is an end of its own."""
    parts = ["a", "b", "server.log", "x.tar.gz:a", "h:", "/"]
    sources = {
        "/".join(p).replace("//", "/")
        for p in ([x, y, z] for x in parts for y in parts for z in parts[:3])
        if "/".join(p).strip("/")
    }
    names = short_names(sources)
    assert len(set(names.values())) == len(names)
    assert all(name in candidates(source) for source, name in names.items())


def test_cited_lines_are_shown_under_the_path_the_user_typed() -> None:
    typed = [("logs/", "/home/me/logs"), ("b.tar.gz", "/home/me/b.tar.gz"), ("/abs/c.log", "/abs/c.log")]
    shown = as_typed(
        ["/home/me/logs/a/server.log", "/home/me/b.tar.gz:h1/server.log", "/abs/c.log", "/else/d.log"], typed
    )
    assert shown == {
        "/home/me/logs/a/server.log": "logs/a/server.log",
        "/home/me/b.tar.gz:h1/server.log": "b.tar.gz:h1/server.log",
    }
    here = as_typed(["/w/a/server.log", "/w/x.log", "/w2/y.log"], [(".", "/w"), ("../w2/y.log", "/w2/y.log")])
    assert here == {"/w/a/server.log": "a/server.log", "/w/x.log": "x.log", "/w2/y.log": "../w2/y.log"}


# ----------------------------------------------------------------------------- batch commands


@pytest.fixture
def two_hosts(tmp_path: Path) -> Path:
    """`a/server.log` (broken) and `b/server.log` (healthy), the same model."""
    for host, log in (("a", BROKEN), ("b", HEALTHY)):
        (tmp_path / host).mkdir()
        shutil.copy(log, tmp_path / host / "server.log")
    return tmp_path


def _verdicts(payload: dict) -> dict[str, str]:
    return {v["run"]: v["status"] for v in payload["verdicts"]}


def test_check_keeps_each_hosts_findings_under_its_own_run(two_hosts: Path) -> None:
    done = run("check", "a", "b", "--json", "--no-cache", cwd=two_hosts)
    payload = json.loads(done.stdout)
    assert _verdicts(payload) == {"a/server.log#1": "broken", "b/server.log#1": "healthy"}
    embed = [f for f in payload["findings"] if f["code"] == "embed-capture-unexpected"]
    assert [f["label"] for f in embed] == ["a/server.log#1"]
    assert all(e["where"].startswith("a/server.log:") for f in payload["findings"] for e in f["evidence"])
    # the cited line is where the user can find it: `explain` takes it as it is printed
    where = embed[0]["evidence"][0]["where"]
    explained = run("explain", where, cwd=two_hosts)
    assert explained.returncode == 0, explained.stderr
    assert "embed capture" in explained.stdout
    assert "  run    a/server.log#1\n" in explained.stdout  # the label `check` gave it
    text = run("check", "a", "b", "--no-cache", cwd=two_hosts).stdout
    assert "\na/server.log#1 broken\n" in text
    section = text.split("\na/server.log#1 broken\n")[1]
    assert "embed-capture-unexpected" in section and "b/server.log" not in section


def test_baseline_selects_the_run_it_names(two_hosts: Path) -> None:
    for baseline, other in (("b/server.log#1", "a/server.log#1"), ("a/server.log#1", "b/server.log#1")):
        analysis = analyze([two_hosts / "a", two_hosts / "b"], baseline=baseline)
        rows = {r["label"]: r for r in analysis.runs.to_dicts()}
        assert rows[other]["baseline"] == baseline and rows[baseline]["baseline"] is None
        # the broken run is the slow one, whichever is the baseline
        assert (rows[other]["speedup"] < 1) == (other == "a/server.log#1")
        text = run("compare", "a", "b", "--no-cache", "--baseline", baseline, cwd=two_hosts).stdout
        assert f"speedup over {baseline}" in text
    done = run("compare", "a", "b", "--no-cache", "--baseline", "server.log#1", cwd=two_hosts)
    assert done.returncode == 2
    assert "a/server.log#1, b/server.log#1" in done.stderr and "Traceback" not in done.stderr


def test_summary_names_runs_by_their_labels(two_hosts: Path) -> None:
    payload = json.loads(run("summary", "a", "b", "--json", "--no-cache", cwd=two_hosts).stdout)
    by_label = {r["label"]: r for r in payload["runs"]}
    assert set(by_label) == {"a/server.log#1", "b/server.log#1"}
    assert (
        by_label["a/server.log#1"]["accept_len"]["mean"]
        < 2
        < by_label["b/server.log#1"]["accept_len"]["mean"]
    )
    assert by_label["a/server.log#1"]["status"] == "broken"
    text = run("summary", "a", "b", "--no-cache", cwd=two_hosts).stdout
    assert "a/server.log#1" in text and "b/server.log#1" in text


def test_every_figure_draws_each_run_from_its_own_rows(two_hosts: Path) -> None:
    analysis = analyze([two_hosts / "a", two_hosts / "b"])
    means = {}
    for plot in build_plots(analysis):
        groups = {t.legendgroup for t in plot.figure.data if t.legendgroup}
        assert groups == {"a/server.log#1", "b/server.log#1"}, plot.key
        if plot.key == "acceptance":
            for trace in plot.figure.data:
                if trace.name and trace.mode and "markers" in trace.mode:
                    means[trace.name] = sum(trace.y) / len(trace.y)
    assert means["a/server.log#1"] < 2 < means["b/server.log#1"]


# ----------------------------------------------------------------------------- an archive


def test_an_archives_same_named_members_are_told_apart(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "logs.tar.gz", "w:gz") as tar:
        tar.add(BROKEN, "host1/server.log")
        tar.add(HEALTHY, "host2/server.log")
    payload = json.loads(run("check", "logs.tar.gz", "--json", "--no-cache", cwd=tmp_path).stdout)
    assert _verdicts(payload) == {"host1/server.log#1": "broken", "host2/server.log#1": "healthy"}
    embed = [f for f in payload["findings"] if f["code"] == "embed-capture-unexpected"]
    assert [f["label"] for f in embed] == ["host1/server.log#1"]
    where = embed[0]["evidence"][0]["where"]
    assert where.startswith("logs.tar.gz:host1/server.log:")
    explained = run("explain", where, cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert "embed capture" in explained.stdout
    done = run("compare", "logs.tar.gz", "--no-cache", "--baseline", "host2/server.log#1", cwd=tmp_path)
    assert done.returncode == 0 and "speedup over host2/server.log#1" in done.stdout


# ----------------------------------------------------------------------------- two ssh hosts, live


@pytest.mark.timeout(180)
def test_two_ssh_hosts_keep_their_own_runs_live(sshd: dict, tmp_path: Path) -> None:  # noqa: F811
    """`127.0.0.1` and `localhost` are two hosts to ssh (the same test server): the broken log on one,
    the healthy on the other, both at the same remote path."""
    specs = []
    options = {}
    for host, log in (("127.0.0.1", BROKEN), ("localhost", HEALTHY)):
        folder = tmp_path / host / "var"
        folder.mkdir(parents=True)
        shutil.copy(log, folder / "server.log")
        target = RemoteTarget(host, str(folder / "server.log"), getpass.getuser(), sshd["port"])
        spec = SourceSpec(SSH, target.label, target=target)
        specs.append(spec)
        options[spec.label] = {"extra_options": sshd["options"], "backoff": Backoff(first=0.1, limit=0.5)}
    session = LiveSession(specs, interval=0.2, follower_options=options)
    session.start()
    try:
        lines = BROKEN.read_text().count("\n") + HEALTHY.read_text().count("\n")
        assert wait_for(lambda: session.index.count() >= lines, timeout=60)
        assert session.wait_idle(timeout=60)
        labels = {run.source: run.label for run in session.snapshot.runs}
        assert labels == {specs[0].label: "127.0.0.1:server.log#1", specs[1].label: "localhost:server.log#1"}
        status = {run.label: run.status for run in session.snapshot.runs}
        assert status == {"127.0.0.1:server.log#1": "broken", "localhost:server.log#1": "healthy"}
        embed = [f for f in session.findings if f.code == "embed-capture-unexpected"]
        assert [(f.label, f.source) for f in embed] == [("127.0.0.1:server.log#1", specs[0].label)]
        analysis = session.analysis
        assert analysis is not None
        assert {v.label: v.status for v in analysis.verdicts} == status
    finally:
        session.stop()


def test_follow_labels_an_archives_members_as_check_does(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "logs.tar.gz", "w:gz") as tar:
        tar.add(BROKEN, "host1/server.log")
        tar.add(HEALTHY, "host2/server.log")
    done = run("follow", "--json", "logs.tar.gz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    stats = {e["label"] for e in events if e.get("event") == "stats" and e.get("label")}
    assert stats == {"host1/server.log#1", "host2/server.log#1"}
    embed = [e for e in events if e.get("event") == "finding" and e["code"] == "embed-capture-unexpected"]
    assert embed and {e["label"] for e in embed} == {"host1/server.log#1"}
    assert {e["source"] for e in embed} == {"logs.tar.gz:host1/server.log"}


# ----------------------------------------------------------------------------- the TUI


@pytest.mark.asyncio
@pytest.mark.timeout(120)
async def test_the_tui_names_two_hosts_logs_apart(tmp_path: Path) -> None:
    from tui_support import EMBED, append, decode, session_for, until, write_start

    from tracelens.analysis.expectations import Expectations
    from tracelens.tui.app import TraceLensApp

    first, second = tmp_path / "a" / "server.log", tmp_path / "b" / "server.log"
    for log in (first, second):
        log.parent.mkdir()
        write_start(log)
    append(first, EMBED, decode(40, 1.7))  # the broken one: a capture the draft was not trained with
    session = session_for(first, second, expectations=Expectations(embed_capture=False))
    app = TraceLensApp(session, report_path=tmp_path / "report.html")
    async with app.run_test(size=(150, 50)) as pilot:
        assert await until(
            lambda: {r.label for r in app.session.snapshot.runs} == {"a/server.log#1", "b/server.log#1"}
        )
        assert await until(lambda: "BROKEN" in str(app.verdicts.render_text()))
        strip = str(app.verdicts.render_text())
        assert "a/server.log#1" in strip and "b/server.log#1" in strip
        status = {r.label: r.status for r in app.session.snapshot.runs}
        assert status["a/server.log#1"] == "broken" and status["b/server.log#1"] != "broken"
        seen = {app.acceptance.border_title}
        await pilot.press("s")
        assert await until(lambda: app.acceptance.border_title not in seen)
        seen.add(app.acceptance.border_title)
        assert seen == {"acceptance · a/server.log#1", "acceptance · b/server.log#1"}
        # each log line is marked with its source's short name, the one its runs' labels start with
        view = app.log_view
        rows = [view.render_line(y).text.split() for y in range(view.size.height)]
        shown = {row[1] for row in rows if len(row) > 1}
        assert shown and shown <= {"a/server.log", "b/server.log"}, shown


def test_a_label_does_not_change_when_another_sources_first_lines_arrive() -> None:
    """The live worker names runs among all the session's sources (`sources=`), not only those that
    have lines yet: `a/server.log#1` stays `a/server.log#1` when b's first lines come."""
    from tracelens.analysis import analyze_tables
    from tracelens.engine.ingest import parse_text

    alone = parse_text(BROKEN.read_text(), "/x/a/server.log")
    before = analyze_tables(alone, sources=["/x/a/server.log", "/x/b/server.log"])
    assert before.runs.get_column("label").to_list() == ["a/server.log#1"]
    assert {v.label for v in before.verdicts} == {"a/server.log#1"}
    assert analyze_tables(alone).runs.get_column("label").to_list() == ["server.log#1"]  # batch: one source
