"""A run's debug lines read as a digest a piece at a time (`analysis.debug_digest`) give every finding,
capture site and embedding state the whole run gives.

Each case is analysed twice: with the default piece (every run read whole, short runs digested
together) and with pieces of a few lines (every run read and merged a piece at a time, its norm
statistics from `sketch.ValueCounts`). The findings, their evidence and the capture figures must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from polars.testing import assert_frame_equal
from test_detectors import AUX3, decode, server_args, spec_run, stamp

from tracelens import analyze
from tracelens.analysis import Analysis, Expectations, analyze_tables, debug_digest
from tracelens.engine.ingest import parse_text
from tracelens.tables.schema import A

from conftest import SAMPLE_LOGS

AUX2 = AUX3.replace("num_aux=3", "num_aux=2")
EMBED = "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 8]) norm={norm}"
CAPTURE = "EAGLE3_DEBUG[dsv2] aux capture: layer_id={layer} shape=torch.Size([{batch}, 8]) norm={norm}"
WIDE = "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 16]) norm=5.0"
OTHER = "EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 4]), torch.Size([1, 4]), torch.Size([1, 4])]"


def _lines() -> list[str]:
    """One speculative run whose debug lines hold every case the detectors judge, spread out so that
    small pieces cut between them: aux counts that change, sites that disagree, a concatenated width
    that is not aux x hidden, NaN, infinite and zero norms, norm outliers at two sites, embedding
    captures, batch sizes that change."""
    debug = []
    for i in range(120):
        debug.append(CAPTURE.format(layer=2, batch=1 + i % 3, norm=f"{10 + i % 7 * 0.1:.2f}"))
        debug.append(CAPTURE.format(layer=30, batch=1, norm=f"{20 + i % 5 * 0.2:.2f}"))
        debug.append(EMBED.format(norm=f"{3 + i % 4 * 0.01:.2f}"))
        debug.append(AUX3 if i % 40 else AUX2)
        if i % 30 == 7:
            debug += [CAPTURE.format(layer=2, batch=1, norm=v) for v in ("nan", "inf", "0.0")]
        if i % 50 == 11:
            debug += [CAPTURE.format(layer=30, batch=1, norm="900.0"), OTHER, WIDE]
        if i % 45 == 20:  # far only against the site's spread (its median absolute deviation), not its size
            debug.append(CAPTURE.format(layer=2, batch=1, norm="15.0"))
    # every debug line at its own second (a finding's time is its first line's), the decode lines after
    lines = [server_args(0), f"{stamp(5, '')} The server is fired up and ready to roll!"]
    lines += [f"{stamp(6 + i)} {d}" for i, d in enumerate(debug)]
    lines += [decode(len(debug) + 10 + i) for i in range(30)]
    # a second, short run after it: short runs are digested together
    return lines + spec_run([AUX3, EMBED.format(norm="1.0")], t0=10_000)


def _analysed(monkeypatch: pytest.MonkeyPatch, piece: int | None, expect: Expectations) -> Analysis:
    if piece is not None:
        monkeypatch.setattr(debug_digest, "PIECE_ROWS", piece)
    analysis = analyze_tables(parse_text("\n".join(_lines()) + "\n", "digest.log"), expect)
    monkeypatch.undo()
    return analysis


def _same(whole: Analysis, pieces: Analysis) -> None:
    assert [f.to_json() for f in pieces.findings] == [f.to_json() for f in whole.findings]
    assert_frame_equal(pieces.capture, whole.capture, check_exact=False, rel_tol=1e-12)
    assert_frame_equal(pieces.embed, whole.embed)
    assert (
        pieces.runs.get_column(A.CAPTURED_LAYERS).to_list()
        == whole.runs.get_column(A.CAPTURED_LAYERS).to_list()
    )


@pytest.mark.parametrize("piece", [1, 5, 64])
@pytest.mark.parametrize(
    "expect",
    [Expectations(), Expectations(expect_aux=3, hidden_size=8, embed_capture=False)],
    ids=["none", "set"],
)
def test_a_run_read_in_pieces_finds_what_the_whole_run_finds(
    monkeypatch: pytest.MonkeyPatch, piece: int, expect: Expectations
) -> None:
    whole = _analysed(monkeypatch, None, expect)
    found = {f.code for f in whole.findings}
    # the case covers every finding the digest feeds
    for code in (
        "num-aux-changed" if expect.expect_aux is None else "num-aux-mismatch",
        "norm-invalid",
        "norm-outlier",
    ):
        assert code in found, found
    assert {"shapes-inconsistent", "embed-capture-unexpected"} <= found
    if expect.hidden_size:
        assert "concat-width-mismatch" in found
    _same(whole, _analysed(monkeypatch, piece, expect))


def test_sample_logs_in_pieces_equal_the_whole_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(SAMPLE_LOGS.glob("*.log"))
    whole = analyze(paths)
    monkeypatch.setattr(debug_digest, "PIECE_ROWS", 97)
    pieces = analyze(paths)
    assert any(f.code.startswith("embed-capture") for f in whole.findings)
    _same(whole, pieces)


def test_a_long_run_is_never_held_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every read of a long run's debug lines is one piece: at most about `PIECE_ROWS` lines."""
    monkeypatch.setattr(debug_digest, "PIECE_ROWS", 50)
    read: list[int] = []
    pieces = debug_digest._pieces

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        for piece in pieces(*args, **kwargs):
            read.append(piece.height)
            yield piece

    monkeypatch.setattr(debug_digest, "_pieces", counted)
    log = tmp_path / "long.log"
    log.write_text("\n".join(_lines()) + "\n")
    analysis = analyze([log])
    assert "norm-outlier" in {f.code for f in analysis.findings}
    assert len(read) > 10 and max(read) <= 2 * 50, read
