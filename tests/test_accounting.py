"""Nothing lost: every line of every sample log and real-corpus file is accounted for, and awkward
inputs (empty, binary, one 10 MB line, invalid UTF-8) are handled, not fatal."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tracelens.engine.ingest import parse_paths
from tracelens.sources.logfiles import compression_of, open_source
from tracelens.tables.accounting import reconcile
from tracelens.tables.schema import C, Kind, T

from conftest import SAMPLE_LOGS, real_corpus_files


def physical_lines(path: Path) -> int:
    with open_source(path) as fh:
        data = fh.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def assert_accounted(paths: list[Path]) -> None:
    tables = parse_paths(paths)
    expected = {str(p): physical_lines(p) for p in paths}
    result = reconcile(tables, expected)
    assert result.ok, result.problems
    assert result.lines == sum(expected.values())


SAMPLES = sorted(p for p in SAMPLE_LOGS.iterdir() if p.is_file() and p.suffix in (".log", ".gz"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_sample_log_line_is_accounted_for(path: Path) -> None:
    assert_accounted([path])


@pytest.mark.parametrize("path", real_corpus_files(), ids=lambda p: p.name[:40])
def test_every_real_corpus_line_is_accounted_for(path: Path, real_corpus: Path) -> None:
    assert_accounted([path])


def test_real_corpus_is_present_or_skipped(real_corpus: Path) -> None:
    assert real_corpus_files(), "the corpus folder exists but holds no .log files"


def test_empty_file_gives_empty_tables(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    tables = parse_paths([path])
    assert tables[T.LINES].height == 0
    assert reconcile(tables).ok


def test_binary_and_invalid_utf8_are_kept_with_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "mixed.log"
    path.write_bytes(b"[2025-01-01 00:00:00 TP0] ok\n\xff\xfe\x00\x01binary\n[2025-01-01 00:00:01] caf\xe9\n")
    tables = parse_paths([path])
    assert reconcile(tables, {str(path): 3}).ok
    unparsed = tables[T.UNPARSED].get_column(C.TEXT).to_list()
    assert any("\ufffd" in text for text in unparsed)
    messages = tables[T.MESSAGES].get_column(C.MESSAGE).to_list()
    assert "caf\ufffd" in messages


def test_one_ten_megabyte_line_is_one_unparsed_line(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    path.write_bytes(b"x" * 10_000_000 + b"\n[2025-01-01 00:00:00 TP0] Decode batch. #running-req: 1\n")
    tables = parse_paths([path])
    assert reconcile(tables, {str(path): 2}).ok
    assert tables[T.LINES].get_column(C.KIND).to_list() == [Kind.UNPARSED, Kind.BATCH]
    assert tables[T.LINES].item(1, C.BYTE_OFFSET) == 10_000_001


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    text = b"[2025-01-01 00:00:00 TP0] Decode batch. #running-req: 2, gen throughput (token/s): 9.5\n"
    path = tmp_path / "x.log.gz"
    path.write_bytes(gzip.compress(text * 3))
    assert compression_of(path) == "gz"
    tables = parse_paths([path])
    assert tables[T.BATCHES].get_column(C.GEN_THROUGHPUT).to_list() == [9.5, 9.5, 9.5]


def test_results_do_not_depend_on_block_size(tmp_path: Path, real_corpus: Path) -> None:
    corpus = real_corpus_files()
    path = max(corpus, key=lambda p: p.stat().st_size)
    whole = parse_paths([path])
    small = parse_paths([path], block_bytes=4096)
    for table in (T.LINES, T.BATCHES, T.FAULTS, T.SERVER_ARGS, T.RUNS, T.MESSAGES, T.UNPARSED):
        assert small[table].equals(whole[table]), table
