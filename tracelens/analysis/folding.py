"""Repeats of one finding within a run fold into one, with a count and a time range.

Two findings are repeats when they have the same run and code and their messages are the same once
numbers, hex addresses, pids and rank lists are left out: four `psutil.NoSuchProcess` errors that differ
only in the pid are one finding, and so are three throughput steps. Different messages under one code
(two distinct exceptions) stay apart.
"""

from __future__ import annotations

import datetime as dt
import re

from tracelens.analysis.findings import Finding, severity_rank

MAX_EVIDENCE = 5
_RANKS = re.compile(r"^\d+ rank\(s\) \([^)]*\)")
_VARIABLE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")


def signature(finding: Finding) -> tuple[str, int, str, str]:
    text = _VARIABLE.sub("#", _RANKS.sub("", finding.message))
    return (finding.source, finding.run, finding.code, text)


def fold_repeats(findings: list[Finding]) -> list[Finding]:
    """One finding per (run, code, message signature): the first, its count and last time, the evidence
    of the first few, the most severe severity. Order: that of each group's first finding."""
    groups: dict[tuple[str, int, str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault(signature(finding), []).append(finding)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        far = dt.datetime.max
        ordered = sorted(group, key=lambda f: f.ts or far)
        first = ordered[0]
        times = [f.ts for f in ordered if f.ts is not None]
        span = ""
        if times:
            # a range over days says its dates: two times of day alone may read as one moment
            when = "%H:%M:%S" if times[0].date() == times[-1].date() else "%Y-%m-%d %H:%M:%S"
            span = f", {times[0]:{when}}" + (f" to {times[-1]:{when}}" if times[-1] != times[0] else "")
        evidence = list(dict.fromkeys(e for f in ordered for e in f.evidence[:2]))[:MAX_EVIDENCE]
        out.append(
            Finding(
                min((f.severity for f in group), key=severity_rank),
                first.code,
                first.source,
                first.run,
                first.label,
                first.ts,
                f"{first.message} ({len(group)} times{span})",
                evidence,
                count=len(group),
                last_ts=times[-1] if times else None,
            )
        )
    return out
