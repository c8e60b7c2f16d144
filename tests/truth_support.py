"""Score `tracelens check --json` against the real corpus' ground truth (`truth.json`, see TRUTH.md).

A truth run is matched to the verdict of the same source whose run starts at the truth's `first_line`
(a file without a start line is one run from line 1: its verdict is the one that starts first). A run
is right when its status is one of the truth's, at least one keyword is found in the verdict's text
(headline, cause codes, fix, evidence) and no `must_not` phrase is in its headline.

Run it alone to print the table: `.venv/bin/python tests/truth_support.py [LOG...]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL_CORPUS = ROOT.parent / "shared" / "corpus" / "real"


@dataclass
class Score:
    name: str
    run: int
    want: list[str]
    got: str
    status_ok: bool
    keyword_ok: bool
    clean: bool  # no must_not phrase in the headline
    evidence_ok: bool  # a cited line within a few lines of the truth's evidence line
    headline: str

    @property
    def right(self) -> bool:
        return self.status_ok and self.keyword_ok and self.clean

    def why(self) -> str:
        parts = []
        if not self.status_ok:
            parts.append(f"status {self.got}, want {'/'.join(self.want)}")
        if not self.keyword_ok:
            parts.append("no keyword")
        if not self.clean:
            parts.append("a must_not phrase in the headline")
        return "; ".join(parts)


def run_check(logs: list[Path], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tracelens.cli", "check", "--json", *map(str, logs)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"check exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _text(verdict: dict[str, Any]) -> str:
    parts = [verdict["headline"], *verdict["causes"], verdict.get("fix") or ""]
    parts += [e["text"] for e in verdict["evidence"]]
    return "\n".join(parts).lower()


def _lines(verdict: dict[str, Any]) -> list[int]:
    return [int(e["where"].rsplit(":", 1)[1]) for e in verdict["evidence"]]


def score(truth: dict[str, Any], report: dict[str, Any]) -> list[Score]:
    by_source: dict[str, list[dict[str, Any]]] = {}
    for v in report["verdicts"]:
        by_source.setdefault(Path(v["source"]).name, []).append(v)
    out = []
    for name, entry in truth.items():
        mine = sorted(by_source.get(name, []), key=lambda v: v.get("start_line") or 0)
        for want in entry["runs"]:
            match = next((v for v in mine if v.get("start_line") == want["first_line"]), None)
            if match is None and want["first_line"] == 1 and len(entry["runs"]) == 1 and mine:
                match = mine[0]
            if match is None:
                out.append(Score(name, want["run"], want["status"], "missing", False, False, True, False, ""))
                continue
            text = _text(match)
            head = match["headline"].lower()
            near = any(abs(n - want["evidence_line"]) <= 3 for n in _lines(match))
            out.append(
                Score(
                    name,
                    want["run"],
                    want["status"],
                    match["status"],
                    match["status"] in want["status"],
                    not want["keywords"] or any(k in text for k in want["keywords"]),
                    not any(m in head for m in want["must_not"]),
                    want["evidence_line"] == 0 or near,
                    match["headline"],
                )
            )
    return out


def table(scores: list[Score]) -> str:
    rows = []
    for s in scores:
        mark = "ok " if s.right else "MISS"
        ev = "e" if s.evidence_ok else " "
        rows.append(f"{mark} {ev} {s.name[:44]:44} #{s.run} {s.got:10} {s.headline[:90]}")
        if not s.right:
            rows.append(f"        -> {s.why()}")
    right = sum(s.right for s in scores)
    status = sum(s.status_ok for s in scores)
    evidence = sum(s.evidence_ok for s in scores)
    rows.append(
        f"{right}/{len(scores)} runs right, status {status}/{len(scores)}, evidence near {evidence}/{len(scores)}"
    )
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    truth = json.loads((REAL_CORPUS / "truth.json").read_text())
    logs = [Path(a) for a in argv] or sorted(REAL_CORPUS.glob("*.log"))
    names = {p.name for p in logs}
    truth = {k: v for k, v in truth.items() if k in names}
    with tempfile.TemporaryDirectory() as cache:  # a fresh cache: the parse reflects the code as it is
        report = run_check(logs, {**os.environ, "XDG_CACHE_HOME": cache})
    print(table(score(truth, report)))


if __name__ == "__main__":
    main(sys.argv[1:])
