"""The analysis: parsed tables in, polars frames and findings out. Headless: no Textual, no Plotly.

    from tracelens import analyze
    result = analyze(["sample_logs/"])
    result.runs, result.series, result.findings

The CLI, the HTML report and the TUI all read an `Analysis` (`result`); none of them computes anything
itself. The names below are imported on first use, so that a module of the package (or a command that
needs only one, such as `tracelens parse`) does not load the whole analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracelens.lazy import lazy_names

if TYPE_CHECKING:
    from tracelens.analysis.expectations import Expectations
    from tracelens.analysis.findings import Evidence, Finding, Severity, Status
    from tracelens.analysis.result import Analysis, analyze_tables
    from tracelens.analysis.verdicts import Verdict

__all__ = [
    "Analysis",
    "Evidence",
    "Expectations",
    "Finding",
    "Severity",
    "Status",
    "Verdict",
    "analyze_tables",
]

# name -> the module of the package that defines it
_HOMES = {
    "Analysis": ".result",
    "analyze_tables": ".result",
    "Evidence": ".findings",
    "Finding": ".findings",
    "Severity": ".findings",
    "Expectations": ".expectations",
    "Status": ".findings",
    "Verdict": ".verdicts",
}

__getattr__ = lazy_names(__name__, _HOMES)
