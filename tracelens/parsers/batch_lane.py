"""The batch parser's lane (issue 11): a block's main layout of each phase read straight from the bytes.

Nearly every batch line of a block is one of two layouts, `Decode batch, k1: v1, k2: v2, ..., ` and the
same for `Prefill batch, `, with known keys and short plain values. A `Lane` names one such layout; its
lines are read with numpy over the Arrow buffer of the bodies, every line at once, one item at a time,
with no regex and no string column per item:

- each fixed piece of text (the header with the first key, then `, key: ` between values) is compared
  8 bytes at a time, as little-endian words read at any byte offset;
- a value runs to the first `,` of the word that starts it (to the line's end, less SGLang's trailing
  `, `, for the last one), and is at most 8 bytes;
- an integer is `-?\\d+`, a float `-?\\d+(\\.\\d+)?`, `nan` or `inf`, a boolean `True` or `False`;
  digits are checked and summed 8 at a time (the SWAR steps of fast_float's `parse_eight_digits`), and a
  float is its digits as an integer divided by a power of ten: both are exact in a float64 (at most 7
  digits, at most 10^6), so the quotient is the correctly rounded value, the one polars' cast returns.

A line is read only when all of it is checked: the pieces tile it exactly, and every value is plain and
of its column's type. Such a line matches the layout's anchored pattern (`batch.layout_pattern`), so its
row is the one the other paths read; any other line (a value of 9 bytes or more, `12%`, `1e5`, an odd key,
a cut line) is left to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import polars as pl


class Kind(Enum):
    """How a value of a column is checked and read."""

    INT = pl.Int64
    FLOAT = pl.Float64
    BOOL = pl.Boolean


@dataclass(frozen=True)
class Lane:
    """One layout: the header literal, the keys in order and the kind of each one's value, and which
    item each output column is read from."""

    phase: str
    head: str
    keys: tuple[str, ...]
    kinds: tuple[Kind, ...]
    columns: tuple[tuple[str, int], ...]

    def pieces(self) -> tuple[bytes, ...]:
        """The fixed text before each value."""
        return (
            (self.head + self.keys[0] + ": ").encode(),
            *((", " + key + ": ").encode() for key in self.keys[1:]),
        )


_U64 = np.uint64
_ONES = _U64(0x0101010101010101)
_HIGH = _U64(0x8080808080808080)
_NIBBLE_HIGH = _U64(0xF0F0F0F0F0F0F0F0)
_ZERO_CHARS = _U64(0x3030303030303030)
_SIX = _U64(0x0606060606060606)
# _LOW[n]: the first n bytes of a word (n = 0..8).
_LOW = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_POW10 = 10.0 ** np.arange(8)
_MAX_VALUE = 8  # bytes: one word


def _word(text: bytes) -> np.uint64:
    return _U64(int.from_bytes(text, "little"))


_COMMA, _DOT = ord(","), ord(".")
_TRUE, _FALSE, _NAN, _INF = _word(b"True"), _word(b"False"), _word(b"nan"), _word(b"inf")
_TRAIL = _word(b", ")


class _Words:
    """The bodies' bytes, readable as a 64-bit little-endian word at every byte offset."""

    def __init__(self, bodies: pl.Series) -> None:
        # A last row of spaces pads the buffer, so that a word read up to a line's last byte stays
        # in it. `to_arrow` gives large_string: one contiguous buffer with int64 offsets.
        arrow = pl.concat([bodies, _PAD]).to_arrow()
        offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64)[
            arrow.offset : arrow.offset + len(arrow) + 1
        ]
        self.bytes = np.frombuffer(arrow.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        self.words = np.ndarray((len(self.bytes) - 7,), dtype="<u8", buffer=self.bytes, strides=(1,))
        self.start = offsets[:-2] - offsets[0]
        self.end = offsets[1:-1] - offsets[0]
        self.valid = bodies.is_not_null().to_numpy()
        self.last_read = len(self.words) - 1  # the last offset a word can be read at


_PAD = pl.Series([" " * 64])


def _first_byte(word: np.ndarray, byte: int) -> np.ndarray:
    """Index of the first byte equal to ``byte`` in each word, 8 when none is. The zero-byte test
    marks a false byte only above a true one, so the lowest mark is exact; the bits below it count
    8 per byte before it (64 when there is none)."""
    x = word ^ (_ONES * _U64(byte))
    marks = (x - _ONES) & ~x & _HIGH
    below = (marks & (~marks + _U64(1))) - _U64(1)
    return (np.bitwise_count(below) >> 3).astype(np.int64)


def _all_digits(word: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Whether the first ``count`` bytes of each word are ASCII digits, and ``count`` is 1..8."""
    padded = (word & _LOW[count]) | (_ZERO_CHARS & ~_LOW[count])
    return (
        ((padded & _NIBBLE_HIGH) == _ZERO_CHARS)
        & (((padded + _SIX) & _NIBBLE_HIGH) == _ZERO_CHARS)
        & (count >= 1)
    )


def _digits_value(word: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The number written by the first ``count`` (1..8; anything for other counts) digit bytes of
    each word."""
    shift = (_U64(8) * (_U64(8) - count.astype(np.uint64))) & _U64(63)
    aligned = ((word & _LOW[count]) << shift) | (_ZERO_CHARS & _LOW[8 - count])
    v = aligned - _ZERO_CHARS
    v = v * _U64(10) + (v >> _U64(8))
    mask = _U64(0x000000FF000000FF)
    v = (
        (v & mask) * _U64(100 + (1000000 << 32)) + ((v >> _U64(16)) & mask) * _U64(1 + (10000 << 32))
    ) >> _U64(32)
    return v.astype(np.int64)


def _read_int(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _all_digits(word, length), _digits_value(word, length)


def _read_float(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dot = _first_byte(word, _DOT)  # 8 when there is none: the bytes past the value are zero
    has_dot = dot < length
    low = _LOW[dot]
    digits = np.where(has_dot, (word & low) | ((word >> _U64(8)) & ~low), word)
    count = length - has_dot
    scale = np.where(has_dot, count - dot, 0)  # digits after the dot
    ok = _all_digits(digits, count) & (~has_dot | ((dot >= 1) & (scale >= 1)))
    value = _digits_value(digits, count) / _POW10[scale]
    nan = (length == 3) & (word == _NAN)
    inf = (length == 3) & (word == _INF)
    if nan.any() or inf.any():
        value = np.where(nan, np.nan, np.where(inf, np.inf, value))
    return ok | nan | inf, value


def _read_bool(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    true = (length == 4) & (word == _TRUE)
    false = (length == 5) & (word == _FALSE)
    return true | false, true


_READERS = {Kind.INT: _read_int, Kind.FLOAT: _read_float, Kind.BOOL: _read_bool}


def _matches(words: _Words, pos: np.ndarray, text: bytes) -> np.ndarray:
    """Whether ``text`` is at each of ``pos`` (taken as at most `_PAD` bytes past the buffer's end)."""
    ok = np.ones(len(pos), dtype=np.bool_)
    for offset in range(0, len(text), 8):
        chunk = text[offset : offset + 8]
        read = words.words[pos + offset] if offset else words.words[pos]
        ok &= (read & _LOW[len(chunk)]) == _word(chunk) if len(chunk) < 8 else read == _word(chunk)
    return ok


def _read_rows(words: _Words, rows: np.ndarray, lane: Lane) -> tuple[np.ndarray, list[np.ndarray]]:
    """(which of ``rows`` are lines of ``lane``, each item's values for them). The lead is taken as
    checked; each value runs to its word's first `,`, the piece after it must follow."""
    start, end = words.start[rows], words.end[rows]
    trail = (end - start >= 2) & ((words.words[np.maximum(end - 2, 0)] & _LOW[2]) == _TRAIL)
    stop = end - 2 * trail  # where the last value ends
    ok = words.valid[rows]
    pieces = lane.pieces()
    limit = words.last_read - max(len(p) for p in pieces)
    pos = start
    values = []
    for i, (piece, kind) in enumerate(zip(pieces, lane.kinds, strict=True)):
        # Past `limit` a row has run beyond the last line: it fails, and its reads stay in the buffer.
        if i:
            ok &= _matches(words, np.minimum(pos, limit), piece)
        pos = pos + len(piece)
        word = words.words[np.minimum(pos, limit)]
        length = stop - pos if i == len(pieces) - 1 else _first_byte(word, _COMMA)
        length = np.where((length >= 1) & (length <= _MAX_VALUE), length, 0)
        good, value = _READERS[kind](word & _LOW[length], length)
        ok &= good
        values.append(value)
        pos = pos + length
    return ok, values


def read_lanes(bodies: pl.Series, lanes: list[Lane]) -> pl.DataFrame:
    """The rows of ``bodies`` that are lines of one of ``lanes`` (tried in order), read: a frame with
    one row per body, its lane's index in `lane` (-1: none) and the lanes' typed columns, null where
    the row's lane has no such column or it has no lane."""
    words = _Words(bodies)
    n = len(bodies)
    lane_of = np.full(n, -1, dtype=np.int8)
    values: dict[str, tuple[np.ndarray, np.ndarray, Kind]] = {}
    for index, lane in enumerate(lanes):
        lead = lane.pieces()[0]
        candidates = np.flatnonzero((lane_of < 0) & (words.end - words.start >= len(lead)))
        candidates = candidates[_matches(words, words.start[candidates], lead)]
        if not len(candidates):
            continue
        ok, items = _read_rows(words, candidates, lane)
        rows = candidates[ok]
        lane_of[rows] = index
        for column, item in lane.columns:
            kind = lane.kinds[item]
            if column not in values:
                dtype = {Kind.INT: np.int64, Kind.FLOAT: np.float64, Kind.BOOL: np.bool_}[kind]
                values[column] = (np.zeros(n, dtype=dtype), np.zeros(n, dtype=np.bool_), kind)
            data, valid, _ = values[column]
            data[rows] = items[item][ok]
            valid[rows] = True
    frame = pl.DataFrame(
        [
            pl.Series(LANE, lane_of),
            *(pl.Series(c, data, dtype=kind.value) for c, (data, _, kind) in values.items()),
        ]
    )
    # A column is read on exactly the rows of the lanes that have it.
    lane_index = pl.col(LANE)
    exprs = []
    for column, (_, _, _) in values.items():
        having = [i for i, lane in enumerate(lanes) if column in dict(lane.columns)]
        if len(having) < len(lanes) or not (lane_of >= 0).all():
            has = lane_index == having[0] if len(having) == 1 else lane_index.is_in(having)
            exprs.append(pl.when(has).then(pl.col(column)).alias(column))
    return frame.with_columns(exprs) if exprs else frame


LANE = "lane"
