"""Parse a source's lines in order, carrying the parse state and the lines a block must hold back.

The in-memory `ingest.parse_source`, the batch engine's tasks and the live worker all read sources
through `SourceParser`, so the tables never depend on where a block was cut (see
`parsers.pipeline.parse_block`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import polars as pl

from tracelens.parsers import ParseOptions, ParseState
from tracelens.parsers.pipeline import parse_block
from tracelens.sources.files import block_lines
from tracelens.sources.protocol import Block
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C


@dataclass(frozen=True)
class Parsed:
    """The tables of one block and the state after it; ``bytes_read`` is what it consumed of the input."""

    tables: Tables
    state: ParseState
    bytes_read: int


class SourceParser:
    """Parses one source's line frames as they come. Trailing blank lines of a frame that is not the
    last are held back and parsed in front of the next one: a blank line belongs to a traceback when
    the line after it continues it."""

    def __init__(self, options: ParseOptions, state: ParseState | None = None) -> None:
        self.options = options
        self.state = state or ParseState()
        self.held: pl.DataFrame | None = None

    def feed(self, lines: pl.DataFrame, final: bool) -> tuple[Tables, int, int]:
        """(tables, first line number, lines parsed) of the held lines followed by ``lines``; the count is
        0, and the first line number meaningless, when all of them were held back."""
        frame = lines if self.held is None else pl.concat([self.held, lines])
        tables, self.state, n_held = parse_block(frame, self.state, self.options, final)
        self.held = frame.tail(n_held) if n_held else None
        parsed = frame.height - n_held
        first = int(frame.item(0, C.LINE_NO)) if parsed else 0
        return tables, first, parsed


def parse_blocks(
    blocks: Iterable[Block],
    options: ParseOptions,
    state: ParseState | None = None,
    lines_of: Callable[[Block], pl.DataFrame] = block_lines,
) -> Iterator[Parsed]:
    """Parse blocks of one source in order; the last block is parsed as final. ``lines_of`` splits a
    block into lines (a caller that already split it passes its frames rather than split it twice)."""
    parser = SourceParser(options, state)
    pending: Block | None = None
    for block in blocks:
        if pending is not None:
            tables, _, _ = parser.feed(lines_of(pending), final=False)
            yield Parsed(tables, parser.state, len(pending.data))
        pending = block
    if pending is not None:
        tables, _, _ = parser.feed(lines_of(pending), final=True)
        yield Parsed(tables, parser.state, len(pending.data))
