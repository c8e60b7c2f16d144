"""The HTML report as a file: self-contained, escaped, light whatever the input size (no browser here;
`test_report_browser.py` loads it in Chromium)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tracelens import analyze
from tracelens.analysis import Analysis
from tracelens.analysis.plotdata import (
    DISTRIBUTION_POINTS,
    PAIR_POINTS,
    TIME_POINTS,
    decimate,
    keep_peaks,
    pair_counts,
    quantile_sample,
)
from tracelens.report import WrittenReport, write_report
from tracelens.report.escape import clip, plot_text, script_json, text
from tracelens.tables.schema import A, C

from conftest import SAMPLE_LOGS

SIZE_LIMIT = 10 * 1024 * 1024
HOSTILE = "<script>alert(1)</script> </script><img src=x onerror=alert(1)> javascript:alert(1)"
HOSTILE_NAME = "<img src=x onerror=alert(1)>.log"
GENERATED = dt.datetime(2026, 11, 21, 8, 0, 0, tzinfo=dt.UTC)


def _stamp(start: dt.datetime, seconds: float) -> str:
    return (start + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def speculative_log(
    path: Path,
    decode_lines: int,
    *,
    start: dt.datetime = dt.datetime(2026, 11, 20, 10, 0, 0),
    model: str = "/models/DeepSeek-V3",
    draft: str = "/models/DeepSeek-V3-EAGLE3",
    hostile: str | None = None,
) -> Path:
    """A small EAGLE-3 server log: a start, embedding-capture debug lines, ``decode_lines`` decode lines
    one second apart, then a crash. With ``hostile``, that text sits in the debug lines and the exception
    message, both of which end up as findings evidence."""
    note = f" note={hostile}" if hostile else ""
    lines = [
        f"[{_stamp(start, 0)}] server_args=ServerArgs(model_path='{model}', tp_size=1, dp_size=1, "
        f"speculative_algorithm='EAGLE3', speculative_draft_model_path='{draft}', speculative_num_steps=3, "
        "speculative_eagle_topk=1, speculative_num_draft_tokens=4, disable_cuda_graph=False)",
        f"[{_stamp(start, 5)}] The server is fired up and ready to roll!",
        *(
            f"EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 7168]) norm=10.6{note}"
            for _ in range(3)
        ),
    ]
    rng = np.random.default_rng(7)
    accept = np.round(2.0 + 0.3 * rng.standard_normal(decode_lines), 2)
    speed = np.round(80 + 6 * rng.standard_normal(decode_lines), 2)
    batch = rng.integers(1, 9, decode_lines)
    for i in range(decode_lines):
        lines.append(
            f"[{_stamp(start, 10 + i)} TP0] Decode batch, #running-req: {batch[i]}, #token: 1000, token usage: "
            f"0.02, accept len: {accept[i]:.2f}, accept rate: 0.33, cuda graph: True, gen throughput "
            f"(token/s): {speed[i]:.2f}, #queue-req: 0, "
        )
    lines += [
        f"[{_stamp(start, 20 + decode_lines)} TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process',
        f"RuntimeError: {hostile or 'CUDA error: an illegal memory access was encountered'}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def sample() -> Analysis:
    return analyze([SAMPLE_LOGS])


@pytest.fixture(scope="module")
def sample_report(sample: Analysis, tmp_path_factory: pytest.TempPathFactory) -> tuple[WrittenReport, str]:
    written = write_report(sample, tmp_path_factory.mktemp("report") / "report.html", generated=GENERATED)
    return written, written.path.read_text(encoding="utf-8")


def figures(page: str) -> dict[str, dict]:
    """The figures embedded in a page, by key."""
    block = re.search(r'<script type="application/json" id="tl-data">(.*?)</script>', page, re.S)
    assert block is not None
    return {p["key"]: p["figure"] for p in json.loads(block.group(1))["plots"]}


def points(values: object) -> int:
    """How many values a figure array holds (a plain list or Plotly's base64 typed array)."""
    if isinstance(values, dict) and "bdata" in values:
        width = int(re.sub(r"\D", "", values["dtype"]) or 1)
        return len(base64.b64decode(values["bdata"])) // width
    return len(values) if isinstance(values, list) else 0


# --------------------------------------------------------------------------- the sample report


def test_sample_report_has_every_section_and_plot(sample_report: tuple[WrittenReport, str]) -> None:
    written, page = sample_report
    assert written.plots == (
        "speedup",
        "acceptance",
        "rate",
        "throughput",
        "batch",
        "distribution",
        "timeline",
        "curves",
    )
    assert set(figures(page)) == set(written.plots)
    for section in ("verdicts", "runs", "comparison", "findings", "faults", "capture"):
        assert f'<section id="{section}"' in page
    assert page.count('<article class="card ') == written.runs == 17
    assert page.count("<tr data-severity=") == written.findings == 18


def test_header_names_sources_span_version_and_time(sample_report: tuple[WrittenReport, str]) -> None:
    _, page = sample_report
    assert "sample_logs/eagle3_fixed.log" in page
    assert "tracelens 0.1.0" in page
    assert "2026-11-21 08:00:00" in page  # when it was made
    assert "time span</dt><dd>2025-" in page


def test_cards_show_config_layer_ids_and_speedup(sample_report: tuple[WrittenReport, str]) -> None:
    _, page = sample_report
    card = page[page.index('<span class="label">eagle3_fixed.log#1</span>') :]
    card = card[: card.index("</article>")]
    for expected in ("EAGLE3 steps=4 topk=1 draft=5", "[2, 30, 58] (debug lines)", "2.88", "47%", "94.1"):
        assert expected in card
    assert "1.05x" in card and "baseline_tp8.log#1" in card and "stat good" in card


def test_verdict_banner_leads_worst_first_and_cards_take_the_status_colour(
    sample_report: tuple[WrittenReport, str], sample: Analysis
) -> None:
    _, page = sample_report
    assert page.index('<section id="verdicts"') < page.index('<section id="runs"')
    banner = page[page.index('<section id="verdicts"') : page.index('<section id="runs"')]
    order = re.findall(r'<li class="status-(\w+)"', banner)
    assert order == [v.status for v in sample.verdicts]
    assert order[0] == "broken" and order[-1] == "healthy"
    assert "fix:" in banner
    # Each card's colour is its status (the CSS maps status-* to red/amber/teal/green), not its position.
    statuses = dict(sample.runs.select("label", "status").iter_rows())
    for label, status in statuses.items():
        start = page.index(f'<span class="label">{text(label)}</span>')
        assert page.rfind(f'<article class="card status-{status}"', 0, start) == page.rfind(
            "<article", 0, start
        )
    # Warnings show on the cards, not only errors.
    card = page[page.index('<span class="label">sweep_and_crash.log#1</span>') :]
    assert "warning(s)</span>" in card[: card.index("</article>")]


def test_time_plots_mark_crashes_and_baselines_and_split_models(
    sample_report: tuple[WrittenReport, str],
) -> None:
    _, page = sample_report
    plots = figures(page)
    throughput = plots["throughput"]
    names = [t.get("name", "") for t in throughput["data"]]
    assert any("mean (baseline)" in n for n in names)
    texts = [x for t in throughput["data"] for x in (t.get("text") or []) if isinstance(x, str)]
    assert "crash" in texts and "restart" in texts
    # Five models in the samples: five y axes, one band each.
    assert {t.get("yaxis", "y") for t in throughput["data"]} == {"y", "y2", "y3", "y4", "y5"}
    assert plots["rate"]["layout"]["yaxis"]["tickformat"] == ".0%"


def test_comparison_shows_the_server_args_diff(sample_report: tuple[WrittenReport, str]) -> None:
    _, page = sample_report
    section = page[page.index('<section id="comparison"') : page.index('<section id="findings"')]
    assert "era_2025_dp_attention.log#1" in section and "11 server arg(s) differ" in section
    assert "<code>enable_dp_attention</code>" in section


def test_findings_carry_their_evidence_lines(
    sample_report: tuple[WrittenReport, str], sample: Analysis
) -> None:
    _, page = sample_report
    section = page[page.index('<section id="findings"') :]
    for finding in sample.findings:
        for evidence in finding.evidence:
            assert f'<span class="where">{text(evidence.where)}</span>' in section


def test_the_file_is_self_contained(sample_report: tuple[WrittenReport, str]) -> None:
    written, page = sample_report
    assert written.bytes < SIZE_LIMIT
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page, re.I)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1) and "connect-src 'none'" in csp.group(1)
    assert "unsafe-eval" not in csp.group(1) and "unsafe-inline" not in csp.group(1).split("style-src")[0]
    assert page.count("<script") == 3  # data, plotly.js, the page's own script


def test_runs_keep_one_colour_in_every_figure(sample_report: tuple[WrittenReport, str]) -> None:
    _, page = sample_report
    colours: dict[str, set[str]] = {}
    for figure in figures(page).values():
        for trace in figure["data"]:
            colour = (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")
            if trace.get("legendgroup") and isinstance(colour, str):
                colours.setdefault(trace["legendgroup"], set()).add(colour)
    assert len(colours) >= 8
    assert all(len(c) == 1 for c in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == len(colours)  # and no two runs share one


# --------------------------------------------------------------------------- untrusted text


def hostile_analysis(folder: Path) -> Analysis:
    """A log whose file name, model path, draft path, debug lines and exception message try to inject
    markup and script; the debug lines and the exception end up as findings evidence."""
    folder.mkdir()
    speculative_log(
        folder / HOSTILE_NAME,
        120,
        model="</script><script>alert(2)</script>",
        draft="javascript:alert(3)",
        hostile=HOSTILE,
    )
    return analyze([folder])


def test_log_text_never_becomes_markup(tmp_path: Path) -> None:
    analysis = hostile_analysis(tmp_path / "logs")
    assert any(HOSTILE in e.text for f in analysis.findings for e in f.evidence)
    page = write_report(analysis, tmp_path / "r.html", title=f"title {HOSTILE}").path.read_text()
    assert page.count("<script") == 3 and page.lower().count("</script") == 3
    assert "<img" not in page.lower()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert 'href="javascript' not in page.lower()
    # inside the figures' JSON, Plotly gets entities, and the JSON itself holds no raw `<`
    data = page[page.index('id="tl-data">') : page.index("</script>", page.index('id="tl-data">'))]
    assert "<" not in data[len('id="tl-data">') :]
    assert "&lt;img src=x onerror=alert(1)&gt;.log#1" in json.dumps(figures(page))


def test_escapes() -> None:
    assert text('<a href="javascript:x">') == "&lt;a href=&quot;javascript:x&quot;&gt;"
    assert text(None) == "-"
    assert plot_text("<b>a&b</b>") == "&lt;b&gt;a&amp;b&lt;/b&gt;"
    encoded = script_json({"k": "</script><!-- \u2028"})
    assert "<" not in encoded and ">" not in encoded and "\u2028" not in encoded
    assert json.loads(encoded) == {"k": "</script><!-- \u2028"}
    assert clip("x" * 10, 4) == "xxxx … (6 more characters)"


def test_templates_escape_by_default_and_mark_safe_only_the_pages_own_code() -> None:
    """The page's templates autoescape; the values marked `safe` are the page's own assets, its
    policy and the figures' JSON, each under a comment that says why."""
    from importlib import resources

    from tracelens.report.page import TEMPLATES

    assert TEMPLATES.autoescape is True
    marked = []
    folder = resources.files("tracelens.report").joinpath("templates")
    for template in folder.iterdir():
        source = template.read_text(encoding="utf-8")
        lines = source.splitlines()
        # the code without its comments, line for line
        code = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group().count("\n"), source, flags=re.S).splitlines()
        for i, line in enumerate(code):
            names = re.findall(r"\{\{\s*(\w+)\s*\|\s*safe\s*\}\}", line)
            # every `safe` is a whole value of its own, `{{ name | safe }}`, never inside an expression
            assert len(names) == len(re.findall(r"\bsafe\b", line)), f"{template.name}:{i + 1}: {line}"
            for name in names:
                marked.append(name)
                above = "\n".join(lines[max(i - 2, 0) : i])
                assert "{# safe: " in above, f"{template.name}:{i + 1}: `{name} | safe` without a why"
    assert sorted(marked) == ["app_js", "csp", "css", "data", "plotly_js"]


# --------------------------------------------------------------------------- size


def test_points_per_trace_do_not_grow_with_the_input(tmp_path: Path) -> None:
    """Drawn points are bounded per trace: four times the decode lines, the same file size."""
    sizes = {}
    for lines in (3000, 12000):
        log = speculative_log(tmp_path / f"big{lines}.log", lines)
        written = write_report(analyze([log]), tmp_path / f"big{lines}.html", generated=GENERATED)
        page = written.path.read_text()
        for key, figure in figures(page).items():
            for trace in figure["data"]:
                n = max(points(trace.get("x")), points(trace.get("y")))
                limit = {"batch": PAIR_POINTS, "distribution": DISTRIBUTION_POINTS}.get(key, TIME_POINTS)
                assert n <= limit, (key, trace.get("name"), n)
        sizes[lines] = written.bytes
    assert sizes[12000] < SIZE_LIMIT
    assert abs(sizes[12000] - sizes[3000]) < 150_000, sizes


def test_keep_peaks_is_bounded_and_keeps_extremes() -> None:
    n = 1_000_000
    rng = np.random.default_rng(1)
    values = rng.standard_normal(n)
    values[123_456], values[654_321] = 50.0, -50.0
    frame = pl.DataFrame({"x": np.arange(n, dtype=float), "y": values, "line": np.arange(n)})
    kept = keep_peaks(frame, "x", "y", 1000)
    assert kept.height <= 1000
    assert kept.get_column("y").max() == 50.0 and kept.get_column("y").min() == -50.0
    assert kept.get_column("x").is_sorted()
    assert set(kept.get_column("line").to_list()) <= set(range(n))  # rows of the input, untouched
    small = frame.head(10)
    assert keep_peaks(small, "x", "y", 1000).equals(small)


def test_decimate_keeps_the_course_of_a_smooth_series() -> None:
    n = 200_000
    x = np.arange(n, dtype=float)
    frame = pl.DataFrame({"x": x, "lo": np.sin(x / 10_000) - 1, "hi": np.sin(x / 10_000) + 1})
    band = decimate(frame, "x", ["lo", "hi"], 600)
    assert band.height == 600
    assert band.get_column("x").is_sorted()
    assert band.get_column("x").min() < 400 and band.get_column("x").max() > n - 400  # the whole span
    assert np.allclose(band.get_column("lo").to_numpy(), np.sin(band.get_column("x").to_numpy() / 10_000) - 1)


def test_quantile_sample_keeps_the_distribution() -> None:
    values = pl.Series(np.random.default_rng(2).gamma(2.0, 1.0, 500_000))
    sample = quantile_sample(values, 800)
    assert sample.size == 800
    assert sample[0] == values.min() and sample[-1] == values.max()
    assert abs(float(np.median(sample)) - float(values.median())) < 0.02  # type: ignore[arg-type]


def test_pair_counts_are_bounded_and_count_every_row() -> None:
    rng = np.random.default_rng(3)
    n = 300_000
    frame = pl.DataFrame(
        {A.BATCH_SIZE: rng.integers(1, 256, n), C.ACCEPT_LEN: np.round(rng.uniform(1, 5, n), 2)}
    )
    pairs = pair_counts(frame, A.BATCH_SIZE, C.ACCEPT_LEN, 600)
    assert pairs.height <= 600
    assert pairs.get_column("count").sum() == n


# --------------------------------------------------------------------------- command line


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracelens.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_report_help_lists_the_expectation_options() -> None:
    result = run("report", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--output", "--title", "--baseline", "--draft-config", "--expect-aux", "--embed-capture"):
        assert option in result.stdout


def test_report_command_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "acceptance.html"
    result = run(
        "report",
        str(SAMPLE_LOGS / "baseline_tp8.log"),
        str(SAMPLE_LOGS / "eagle3_fixed.log"),
        "-o",
        str(out),
        "--title",
        "layer ids fixed",
        "--baseline",
        "baseline_tp8.log#1",
        "--expect-aux",
        "3",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    assert str(out.resolve()) in result.stdout
    page = out.read_text()
    assert "<title>layer ids fixed</title>" in page
    assert "1.05x" in page


def test_report_command_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run("report", str(SAMPLE_LOGS / "eagle3_fixed.log"), "--baseline", "nope#1", "-q")
    assert result.returncode == 2
    assert "--baseline 'nope#1' is not a run here" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("report", str(SAMPLE_LOGS / "eagle3_fixed.log"), "-o", str(blocker / "r.html"), "-q")
    assert result.returncode == 2 and "cannot write" in result.stderr


def test_demo_writes_the_sample_report(tmp_path: Path) -> None:
    result = run("demo", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "eagle3_fixed.log" in result.stdout
    assert f"report written to {tmp_path / 'report.html'}" in result.stdout
    assert (tmp_path / "report.html").stat().st_size > 1_000_000
