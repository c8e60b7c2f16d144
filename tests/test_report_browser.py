"""The report in a real browser (headless Chromium over the DevTools protocol): it draws every plot with
data and no JavaScript error, fetches nothing, keeps log text inert, and its controls work.

Screenshots of the first screen (light and dark) are saved in `test-artifacts/` for a human to look at.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from report_browser import CHROMIUM, Browser
from test_report import HOSTILE, HOSTILE_NAME, hostile_analysis

from tracelens import Analysis, analyze
from tracelens.report import WrittenReport, write_report

from conftest import ROOT, SAMPLE_LOGS, missing

ARTIFACTS = ROOT / "test-artifacts"
TIME_PLOTS = ("acceptance", "throughput", "timeline")  # the plots whose x axis is time
OPEN_SECONDS = 20.0  # generous for a loaded CI machine; about 3 s on a 2-core laptop

# Per plot: how many traces Plotly holds, how many values they carry, and how many marks the SVG drew.
PLOTS_JS = """[...document.querySelectorAll('div.plot')].map(el => ({
  key: el.dataset.key,
  plotly: el.classList.contains('js-plotly-plot'),
  traces: (el._fullData || []).length,
  values: (el._fullData || []).reduce((n, t) => n + Math.max((t.x || []).length, (t.y || []).length), 0),
  marks: el.querySelectorAll('.scatterlayer .point, .scatterlayer path.js-line, .barlayer .point path, .violinlayer path.violin').length,
}))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} is absent: install Debian's chromium (.ci/run does)")
    chrome = Browser()
    try:
        yield chrome
    finally:
        chrome.close()


@pytest.fixture(scope="module")
def sample_analysis() -> Analysis:
    return analyze([SAMPLE_LOGS])


@pytest.fixture(scope="module")
def sample_report(sample_analysis: Analysis, tmp_path_factory: pytest.TempPathFactory) -> WrittenReport:
    return write_report(sample_analysis, tmp_path_factory.mktemp("browser") / "report.html")


def assert_clean(chrome: Browser) -> None:
    chrome.settle()
    assert chrome.log.errors == []
    assert chrome.log.dialogs == []
    assert chrome.external_requests() == []


def test_every_plot_draws_its_data_without_errors(
    browser: Browser, sample_report: WrittenReport, sample_analysis: Analysis
) -> None:
    seconds = browser.open(sample_report.path)
    assert seconds < OPEN_SECONDS
    assert browser.evaluate("document.body.getAttribute('data-ready')") == str(len(sample_report.plots))
    assert_clean(browser)
    plots = browser.evaluate(PLOTS_JS)
    assert [p["key"] for p in plots] == list(sample_report.plots)
    for plot in plots:
        assert plot["plotly"] and plot["traces"] > 0 and plot["values"] > 0 and plot["marks"] > 0, plot
    rows = browser.evaluate("document.querySelectorAll('#findings-table tbody tr').length")
    assert rows == sample_report.findings > 0
    evidence = browser.evaluate("document.querySelector('#findings-table .ev .where').textContent")
    # the first cited line, as the analysis names it: the log's path and its line number
    first = next(e for f in sample_analysis.findings for e in f.evidence)
    assert evidence == f"{first.source}:{first.line_no}"
    assert first.source.startswith(str(SAMPLE_LOGS.resolve())) and first.line_no > 0
    assert browser.evaluate("document.querySelectorAll('.card').length") == sample_report.runs
    browser.screenshot(ARTIFACTS / "report-first-screen.png")


def test_dark_mode_first_screen(browser: Browser, sample_report: WrittenReport) -> None:
    browser.open(sample_report.path, scheme="dark")
    assert_clean(browser)
    background = browser.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(20, 23, 28)"
    font = browser.evaluate("document.getElementById('plot-acceptance')._fullLayout.font.color")
    assert font.lower() == "#e3e7ed"
    browser.screenshot(ARTIFACTS / "report-first-screen-dark.png")


def test_time_axis_switch_zoom_link_and_legend_link(browser: Browser, sample_report: WrittenReport) -> None:
    browser.open(sample_report.path)
    axis = "document.getElementById('plot-{}')._fullLayout.xaxis.{}"
    assert browser.evaluate(axis.format("acceptance", "type")) == "linear"
    browser.evaluate("document.querySelector('[data-time=clock]').click()")
    browser.wait_for(" && ".join(f"{axis.format(key, 'type')} === 'date'" for key in TIME_PLOTS))
    first = (
        "new Date(document.getElementById('plot-acceptance')._fullData"
        ".find(t => t.legendgroup === 'eagle3_fixed.log#1').x[0]).toISOString()"
    )
    assert browser.evaluate(first) == "2026-11-20T14:15:00.000Z"  # its first decode line, as logged
    browser.evaluate("document.querySelector('[data-time=since]').click()")
    browser.wait_for(" && ".join(f"{axis.format(key, 'type')} === 'linear'" for key in TIME_PLOTS))
    # a range picked on one time plot shows on the others
    browser.evaluate("Plotly.relayout('plot-acceptance', {'xaxis.range': [12, 14]})")
    browser.wait_for(
        " && ".join(f"JSON.stringify({axis.format(key, 'range')}) === '[12,14]'" for key in TIME_PLOTS[1:])
    )
    # hiding a run from one legend hides it everywhere
    visible = "document.getElementById('plot-{}').data.filter(t => t.legendgroup === 'eagle3_fixed.log#1').map(t => t.visible)"
    browser.evaluate(
        "(() => { const gd = document.getElementById('plot-acceptance');"
        " const i = gd.data.findIndex(t => t.legendgroup === 'eagle3_fixed.log#1' && t.showlegend !== false);"
        " gd.emit('plotly_legendclick', {data: gd.data, curveNumber: i}); })()"
    )
    linked = ("acceptance", "throughput", "batch", "distribution", "speedup")
    browser.wait_for(" && ".join(f"{visible.format(key)}.every(v => v === 'legendonly')" for key in linked))
    for key in linked:
        assert set(browser.evaluate(visible.format(key))) == {"legendonly"}, key
    assert_clean(browser)


def test_theme_button_overrides_the_system_scheme(browser: Browser, sample_report: WrittenReport) -> None:
    browser.open(sample_report.path, scheme="light")
    background = "getComputedStyle(document.body).backgroundColor"
    assert browser.evaluate(background) == "rgb(255, 255, 255)"
    for _ in range(2):  # auto -> light -> dark
        browser.evaluate("document.getElementById('theme-toggle').click()")
    browser.wait_for(f"{background} === 'rgb(20, 23, 28)'")
    assert browser.evaluate("document.getElementById('theme-toggle').textContent") == "theme: dark"
    font = "document.getElementById('plot-{}')._fullLayout.font.color"
    browser.wait_for(
        " && ".join(f"{font.format(key)}.toLowerCase() === '#e3e7ed'" for key in sample_report.plots)
    )
    for key in sample_report.plots:
        assert browser.evaluate(font.format(key)).lower() == "#e3e7ed", key
    assert_clean(browser)


def test_findings_filter(browser: Browser, sample_report: WrittenReport) -> None:
    browser.open(sample_report.path)
    shown = "[...document.querySelectorAll('#findings-table tbody tr')].filter(r => r.offsetParent !== null).length"
    total = browser.evaluate(shown)
    browser.evaluate("document.querySelector('[data-filter=warning]').click()")
    warnings = browser.evaluate(
        "document.querySelectorAll('#findings-table tr[data-severity=warning]').length"
    )
    assert warnings > 0
    assert browser.evaluate(shown) == total - warnings


def test_injected_script_log_lines_stay_text(browser: Browser, tmp_path: Path) -> None:
    written = write_report(
        hostile_analysis(tmp_path / "logs"), tmp_path / "hostile.html", title=f"run {HOSTILE}"
    )
    browser.open(written.path)
    assert_clean(browser)  # no alert() fired, no error, nothing fetched
    dom = browser.evaluate(
        "({scripts: document.scripts.length, images: document.images.length,"
        " handlers: document.querySelectorAll('[onerror],[onload],[onclick]').length,"
        " links: [...document.querySelectorAll('a[href]')].filter(a => !a.getAttribute('href').startsWith('#')).length})"
    )
    assert dom == {"scripts": 3, "images": 0, "handlers": 0, "links": 0}
    page_text = browser.evaluate("document.body.innerText")
    for shown in (
        "<script>alert(1)</script>",
        "</script><img src=x onerror=alert(1)>",
        "javascript:alert(1)",
        "</script><script>alert(2)</script>",
        HOSTILE_NAME,
    ):
        assert shown in page_text
    findings = browser.evaluate("document.getElementById('findings-table').innerText")
    assert HOSTILE in findings and f"{HOSTILE_NAME}:3" in findings
    legend = browser.evaluate("[...document.querySelectorAll('.legendtext')].map(e => e.textContent)")
    assert f"{HOSTILE_NAME}#1" in legend
    browser.screenshot(ARTIFACTS / "report-injected-lines.png")
