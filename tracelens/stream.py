"""Parse a source's blocks in order, carrying the parse state and the lines a block must hold back.

Both the in-memory `ingest.parse_source` and the batch engine's tasks read sources through here, so
the tables never depend on where a block was cut (see `parsers.pipeline.parse_block`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tracelens.parsers import ParseOptions, ParseState
from tracelens.parsers.pipeline import parse_block
from tracelens.schema import C
from tracelens.sources import Block, block_lines
from tracelens.tables import Tables


@dataclass(frozen=True)
class Parsed:
    """The tables of one block and the state after it; ``bytes_read`` is what it consumed of the input."""

    tables: Tables
    state: ParseState
    bytes_read: int


def parse_blocks(
    blocks: Iterable[Block], options: ParseOptions, state: ParseState | None = None
) -> Iterator[Parsed]:
    """Parse blocks of one source in order. Trailing blank lines a block holds back are put in front
    of the next block; the last block is parsed as final."""
    state = state or ParseState()
    held: Block | None = None
    pending: Block | None = None
    for block in blocks:
        if pending is not None:
            yield_block = _join(held, pending)
            parsed, held = _parse_one(yield_block, state, options, final=False)
            state = parsed.state
            yield Parsed(parsed.tables, state, len(pending.data))
        pending = block
    if pending is not None or held is not None:
        last = _join(held, pending)
        parsed, _ = _parse_one(last, state, options, final=True)
        yield Parsed(parsed.tables, parsed.state, len(pending.data) if pending is not None else 0)


def _join(held: Block | None, block: Block | None) -> Block:
    """The held-back lines of the previous block followed by ``block``."""
    if held is None:
        assert block is not None
        return block
    if block is None:
        return held
    return Block(held.source, held.first_line_no, held.start_offset, held.data + block.data)


def _parse_one(
    block: Block, state: ParseState, options: ParseOptions, final: bool
) -> tuple[Parsed, Block | None]:
    lines = block_lines(block)
    tables, new_state, n_held = parse_block(lines, state, options, final)
    if not n_held:
        return Parsed(tables, new_state, len(block.data)), None
    first_held = lines.height - n_held
    cut = int(lines.item(first_held, C.BYTE_OFFSET)) - block.start_offset
    held = Block(block.source, block.first_line_no + first_held, block.start_offset + cut, block.data[cut:])
    return Parsed(tables, new_state, cut), held
