"""The engine's part writer: rows a block leaves waiting for a row group hold only their own bytes.

A block's text is string views over the block's bytes (`sources.files.block_lines`). A small table's
rows wait in the writer over many blocks; if they kept their views, each block's whole text would stay
in the worker until the task ended (3 MiB more a block, seen as a peak that grew with --range-size).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from tracelens.engine.plan import TaskSpec
from tracelens.engine.store import Store
from tracelens.engine.task import PartWriter
from tracelens.sources.files import block_lines, iter_blocks
from tracelens.tables.schema import C, T

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "eagle3_fixed.log"


def _string_bytes(frame: pl.DataFrame) -> int:
    """Bytes of the string data buffers the frame's text columns point into."""
    total = 0
    for column in frame.to_arrow(compat_level=pl.CompatLevel.newest()).columns:
        for chunk in column.chunks:
            if pa.types.is_string_view(chunk.type):
                total += sum(buf.size for buf in chunk.buffers()[2:] if buf is not None)
    return total


def _one_block(tmp_path: Path) -> pl.DataFrame:
    log = tmp_path / "big.log"
    text = SAMPLE.read_bytes()
    log.write_bytes(text * (2 * (1 << 20) // len(text) + 1))  # over 2 MiB: one block of 2 MiB
    return block_lines(next(iter(iter_blocks(log, 2 << 20))))


def test_waiting_rows_are_copied_out_of_their_block(tmp_path: Path) -> None:
    lines = _one_block(tmp_path)
    assert _string_bytes(lines) > 1 << 20  # the check sees the block's views
    rows = lines.filter(pl.col(C.TEXT).str.len_bytes() > 12).head(3).select(C.SOURCE, C.LINE_NO, C.TEXT)
    assert _string_bytes(rows) > 1 << 20  # a few rows of a block keep the whole block

    spec = TaskSpec(task_id="t1", units=(), root=str(tmp_path / "ds"), staging="staging")
    writer = PartWriter(Store(spec.root), spec)
    writer.add(T.UNPARSED, rows)
    writer.consumed(len(rows))
    (waiting,) = writer.buffers[T.UNPARSED]
    assert _string_bytes(waiting) < 4096  # only the three lines' bytes
    assert waiting.equals(rows)

    writer.close()
    (rel,) = writer.files[T.UNPARSED]
    written = pl.read_parquet(tmp_path / "ds" / rel)
    assert written.select(rows.columns).equals(rows)


def test_rows_with_their_own_bytes_are_not_copied(tmp_path: Path) -> None:
    """A parser's table (numbers, and strings it made) points into nothing of the block's: copying it
    would cost a CPU-second per GiB and free nothing, so the writer keeps it as it is."""
    lines = _one_block(tmp_path)
    own = lines.head(50).select(
        C.LINE_NO, pl.concat_str([pl.col(C.TEXT).str.slice(0, 40), pl.lit("")]).alias(C.MESSAGE)
    )
    assert _string_bytes(own) < 4096

    spec = TaskSpec(task_id="t1", units=(), root=str(tmp_path / "ds"), staging="staging")
    writer = PartWriter(Store(spec.root), spec)
    writer.add(T.UNPARSED, own)
    writer.consumed(len(own))
    (waiting,) = writer.buffers[T.UNPARSED]
    assert waiting is own
