"""Every sample line declared in `parsers/kinds.py` is a test: it must get its kind and its fields."""

from __future__ import annotations

import math

import pytest

from tracelens.engine.ingest import parse_text
from tracelens.parsers.kinds import SAMPLES, Sample
from tracelens.tables.schema import KIND_TABLE, C, T

CASES = [
    pytest.param(kind, sample, id=f"{kind}-{i}")
    for kind, samples in SAMPLES.items()
    for i, sample in enumerate(samples)
]


def _same(want: object, got: object) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12)
    return want == got


@pytest.mark.parametrize(("kind", "sample"), CASES)
def test_sample_line_parses_to_its_fields(kind: str, sample: Sample) -> None:
    tables = parse_text(sample.line)
    assert tables[T.LINES][C.KIND].to_list() == [kind]
    table = tables[KIND_TABLE[kind]]
    assert table.height == 1, f"{kind} table has {table.height} rows"
    row = table.row(0, named=True)
    wrong = {f: (want, row.get(f)) for f, want in sample.fields.items() if not _same(want, row.get(f))}
    assert not wrong, f"field: (wanted, got) {wrong}"


def test_every_routed_kind_has_samples() -> None:
    from tracelens.parsers.kinds import ROUTES

    assert {r.kind for r in ROUTES} <= set(SAMPLES)
