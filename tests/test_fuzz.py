"""Fuzzing that can fail: real lines from the sample logs (and the team's corpus, when present) cut,
spliced, given bytes that are not UTF-8, carriage returns, colour codes and 1 MB lines, plus random
bytes. For each input, the batch parse and the live worker (a real worker process, fed the lines in
random line-aligned pieces) must raise nothing, account for every line once, and give the same tables.

`make test` runs a bounded budget (TRACELENS_FUZZ_EXAMPLES, default 8 inputs per test); `make fuzz`
runs a long one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import time
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tracelens.analysis.defaults import DEFAULT_STALL_SECONDS
from tracelens.engine.ingest import parse_paths
from tracelens.errors import SourceReadError
from tracelens.live.messages import FromWorker, NotAnalysed, WorkerConfig
from tracelens.live.worker import WorkerClient
from tracelens.parsers import ParseOptions
from tracelens.sources.files import line_spans
from tracelens.sources.logfiles import compression_of
from tracelens.sources.long_lines import ENV as MAX_LINE_ENV
from tracelens.tables.accounting import reconcile
from tracelens.tables.schema import TABLES, C, T

from conftest import SAMPLE_LOGS, real_corpus_files

pytestmark = pytest.mark.timeout(3600)
EXAMPLES = int(os.environ.get("TRACELENS_FUZZ_EXAMPLES", "8"))
OPTIONS = ParseOptions(base_date=dt.date(2025, 3, 6))
# The bounded budget does not shrink a failure (each input starts a worker process, so shrinking
# takes minutes); `make fuzz` does, to report the smallest input that fails.
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + (
    [Phase.shrink] if os.environ.get("TRACELENS_FUZZ_SHRINK") else []
)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=PHASES,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@cache
def real_lines() -> tuple[bytes, ...]:
    """Distinct lines of every sample log and corpus file (at most 400 from each, spread over it)."""
    out: list[bytes] = []
    for path in [*sorted(SAMPLE_LOGS.glob("*.log")), *real_corpus_files()]:
        lines = path.read_bytes().split(b"\n")
        step = max(1, len(lines) // 400)
        out.extend(lines[::step])
    return tuple(dict.fromkeys(out))


NOISE = st.sampled_from(
    [
        b"\xff",
        b"\xfe\xfe",
        b"\xc3",
        b"\xe2\x82",
        b"\x00",
        b"\r",
        b"\r\n"[:1],
        b"\x1b[31m",
        b"\x1b[0m",
        b"[36m",
        b"\t",
    ]
)


@st.composite
def mutated_line(draw: st.DrawFn) -> bytes:
    lines = real_lines()
    line = draw(st.sampled_from(lines))
    how = draw(st.sampled_from(["as is", "cut", "splice", "noise", "cr", "ansi", "huge", "random"]))
    if how == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif how == "splice":
        other = draw(st.sampled_from(lines))
        line = line[: draw(st.integers(0, len(line)))] + other[draw(st.integers(0, len(other))) :]
    elif how == "noise":
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(NOISE) + line[at:]
    elif how == "cr":  # a tqdm bar's rewrite, or a CRLF line end
        line = draw(st.sampled_from([line + b"\r", b"  5%|#  | 1/20\r" + line, line.replace(b" ", b"\r", 1)]))
    elif how == "ansi":
        line = b"\x1b[32m" + line[:10] + b"\x1b[0m" + line[10:]
    elif how == "huge":
        line = line + b"x" * (1 << 20)
    elif how == "random":
        line = draw(st.binary(max_size=200)).replace(b"\n", b"")
    return line


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """A log: mutated real lines, sometimes random bytes whole, with or without a last newline."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4000))
    lines = draw(st.lists(mutated_line(), min_size=1, max_size=40))
    data = b"\n".join(lines)
    return data + b"\n" if draw(st.booleans()) else data


def _batch(path: Path):
    """The batch parse of ``path``. The pieces `_live` feeds the worker are not cut at the line limit
    (a followed local file keeps its lines whole, docs/hostile-input.md), so the batch side compares
    under a limit above the longest line a mutation makes (`huge`: 1 MiB more); the cut itself is
    tested in tests/test_hostile_lines.py."""
    before = os.environ.get(MAX_LINE_ENV)
    os.environ[MAX_LINE_ENV] = str(4 << 20)
    try:
        return parse_paths([path], OPTIONS)
    finally:
        if before is None:
            os.environ.pop(MAX_LINE_ENV, None)
        else:
            os.environ[MAX_LINE_ENV] = before


def _live(path: Path, data: bytes, cuts: list[int]):
    """The finalized tables of a real live worker fed ``data`` in line-aligned pieces."""
    failures: list[str] = []

    def on_message(message: FromWorker) -> None:
        if isinstance(message, NotAnalysed) and message.reason:
            failures.append(message.reason)

    config = WorkerConfig([str(path)], [OPTIONS], None, None, DEFAULT_STALL_SECONDS, 0.05)
    client = WorkerClient(config, on_message, lambda reason: failures.append(f"worker ended: {reason}"))
    starts, _ = line_spans(data)
    lines = len(starts)
    try:
        bounds = sorted({0, len(data), *(int(starts[c % lines]) for c in cuts)}) if lines else [0, len(data)]
        first_line = 1
        for seq, (a, b) in enumerate(itertools.pairwise(bounds)):
            piece = data[a:b]
            client.parse(seq, 0, first_line, a, piece, b == len(data))
            first_line += piece.count(b"\n")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not failures:
            _, analysis = client.request_analysis(timeout=60)
            if analysis is not None and analysis.tables[T.LINES].height == lines:
                return analysis.tables
            time.sleep(0.05)
        pytest.fail(f"the live worker did not account for {lines} lines: {failures}")
    finally:
        client.close()


def _same(batch, live) -> None:
    for table in TABLES:
        a, b = batch[table], live[table]
        keys = [c for c in (C.SOURCE, C.RUN, C.LINE_NO, C.FIRST_LINE, C.KEY) if c in a.columns]
        assert a.sort(keys).equals(b.sort(keys)), f"{table} differs between batch and live"


def check(tmp_path: Path, data: bytes, cuts: list[int]) -> None:
    path = tmp_path / "fuzz.log"
    path.write_bytes(data)
    if compression_of(path) is not None:  # bytes that start like gzip/zstd/bz2/xz are read as such
        # a broken stream is named (this is how a truncated .zst read as empty was found)
        with contextlib.suppress(SourceReadError):
            assert reconcile(_batch(path)).ok
        return
    batch = _batch(path)
    if b"\n" not in data and b"\r" in data:
        # a file whose lines end by lone CRs only is read line by line (byte for byte, offsets kept:
        # `sources.files`); the live worker is fed those lines (the local follower does not split them)
        data = data.replace(b"\r", b"\n")
    lines = len(line_spans(data)[0])
    assert batch[T.LINES].height == lines
    assert batch[T.LINES].get_column(C.LINE_NO).to_list() == list(range(1, lines + 1))
    accounted = reconcile(batch)
    assert accounted.ok, accounted.problems
    if lines:  # an empty log gives the live worker nothing to parse, and no analysis
        _same(batch, _live(path, data, cuts))


@FUZZ
@given(data=documents(), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_mutated_real_lines(tmp_path_factory: pytest.TempPathFactory, data: bytes, cuts: list[int]) -> None:
    check(tmp_path_factory.mktemp("fuzz"), data, cuts)


@FUZZ
@given(data=st.binary(max_size=20_000), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_random_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes, cuts: list[int]) -> None:
    check(tmp_path_factory.mktemp("fuzz"), data, cuts)
