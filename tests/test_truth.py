"""`check --json` scored against the real corpus' ground truth: at least 95% of runs right."""

from __future__ import annotations

import json
from pathlib import Path

from truth_support import run_check, score, table

from conftest import real_corpus_files

REQUIRED = 0.95


def test_verdicts_match_the_ground_truth(real_corpus: Path) -> None:
    truth = json.loads((real_corpus / "truth.json").read_text())
    scores = score(truth, run_check(real_corpus_files()))
    report = table(scores)
    print(report)
    right = sum(s.right for s in scores)
    assert right >= REQUIRED * len(scores), report
