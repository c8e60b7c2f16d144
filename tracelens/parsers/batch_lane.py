r"""The batch parser's lane (issue 11): a block's main layout of each phase read straight from the bytes.

Nearly every batch line of a block is one of two layouts, `Decode batch, k1: v1, k2: v2, ..., ` and the
same for `Prefill batch, `, with known keys and short plain values. A `Lane` names one such layout; its
lines are read with numpy over the Arrow buffer of the bodies, every line at once, one item at a time,
with no regex and no string column per item:

- each fixed piece of text (the header with the first key, then `, key: ` between values) is compared
  8 bytes at a time, as little-endian words read at any byte offset (one gather of a few consecutive
  words, copied as one record per line, holds a piece and the next value's word);
- a value runs to the first `,` of the word that starts it (to the line's end, less SGLang's trailing
  `, `, for the last one), and is at most 8 bytes;
- an integer is `\d+`, a float `\d+(\.\d+)?`, `nan` or `inf`, a boolean `True` or `False` (a negative
  number, never seen in these lines, is left to the other paths); digits are checked and summed 8 at a
  time (the SWAR steps of fast_float's `parse_eight_digits`, the digits led by zeros to 8, so the sum
  is the number itself), and a float is that sum over a power of ten: both are exact in a float64
  (below 10^8), so the quotient is the correctly rounded value, the one polars' cast (a correctly
  rounded parse) returns.

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
import pyarrow as pa

from tracelens.tables.schema import W


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

    def reach(self) -> int:
        """How far past a row's start its reads can begin: each piece and a value of at most 8
        bytes, plus a window of the longest piece and a word."""
        pieces = self.pieces()
        return sum(len(p) + _MAX_VALUE for p in pieces) + max(len(p) for p in pieces) + 8

    def pieces(self) -> tuple[bytes, ...]:
        """The fixed text before each value."""
        return (
            (self.head + self.keys[0] + ": ").encode(),
            *((", " + key + ": ").encode() for key in self.keys[1:]),
        )


_U64 = np.uint64
_ONES = _U64(0x0101010101010101)
_HIGH = _U64(0x8080808080808080)
_ZERO_CHARS = _U64(0x3030303030303030)
# _LOW[n]: the first n bytes of a word (n = 0..8).
_LOW = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_POW10 = 10.0 ** np.arange(9)
_MAX_VALUE = 8  # bytes: one word


def _word(text: bytes) -> np.uint64:
    return _U64(int.from_bytes(text, "little"))


_COMMA, _DOT = ord(","), ord(".")
_TRUE, _FALSE, _NAN, _INF = _word(b"True"), _word(b"False"), _word(b"nan"), _word(b"inf")
_TRAIL = _word(b", ")


class _Words:
    """The bodies' bytes, readable as 64-bit little-endian words from any byte offset: one word, or
    a run of consecutive words in one gather (a window)."""

    def __init__(self, bodies: pl.Series, pad: int) -> None:
        # A last row of ``pad`` spaces keeps every read of a row in the buffer: a row's reads start at
        # most ``pad`` bytes past its start (`Lane.reach`). `to_arrow` gives large_string: one
        # contiguous buffer with int64 offsets.
        padded = pl.concat([bodies, pl.Series([" " * pad])])
        arrow = padded.to_arrow(compat_level=pl.CompatLevel.oldest())
        offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64)[
            arrow.offset : arrow.offset + len(arrow) + 1
        ]
        self.bytes = np.frombuffer(arrow.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        self.words = np.ndarray((len(self.bytes) - 7,), dtype="<u8", buffer=self.bytes, strides=(1,))
        self.start = offsets[:-2] - offsets[0]
        self.end = offsets[1:-1] - offsets[0]
        nulls = bodies.null_count()
        self.valid = bodies.is_not_null().to_numpy() if nulls else np.ones(len(bodies), dtype=np.bool_)
        self._windows: dict[int, np.ndarray] = {}

    def window(self, pos: np.ndarray, count: int) -> np.ndarray:
        """The ``count`` words at pos, pos + 8, ... for each of ``pos`` (count x rows). Gathered as one
        record of ``count`` words per row, which numpy copies whole: half the time of gathering a
        column of words per row from a strided view of them."""
        view = self._windows.get(count)
        if view is None:
            shape = (len(self.bytes) - 8 * count + 1,)
            view = self._windows[count] = np.ndarray(
                shape, dtype=f"V{8 * count}", buffer=self.bytes, strides=(1,)
            )
        return view[pos].view("<u8").reshape(len(pos), count).T


def _word_at(window: np.ndarray, offset: int) -> np.ndarray:
    """The word at byte ``offset`` of each window."""
    index, shift = divmod(offset, 8)
    if not shift:
        return window[index]
    return (window[index] >> _U64(8 * shift)) | (window[index + 1] << _U64(64 - 8 * shift))


def _has_piece(window: np.ndarray, text: bytes) -> np.ndarray:
    """Whether each window (a column) starts with ``text``."""
    ok = np.ones(window.shape[1], dtype=np.bool_)
    for index, at in enumerate(range(0, len(text), 8)):
        chunk = text[at : at + 8]
        column = window[index]
        ok &= (column == _word(chunk)) if len(chunk) == 8 else ((column & _LOW[len(chunk)]) == _word(chunk))
    return ok


def _before_first(word: np.ndarray, byte: int) -> np.ndarray:
    """The bytes before the first one equal to ``byte`` in each word, as a mask (all of it when no
    byte is). The zero-byte test marks a false byte only above a true one, so the lowest mark is
    exact; the bits below it are the bytes before it and its own low seven bits."""
    x = word ^ (_ONES * _U64(byte))
    marks = (x - _ONES) & ~x & _HIGH
    return ((marks & -marks) >> _U64(7)) - _U64(1)


def _first_byte(word: np.ndarray, byte: int) -> np.ndarray:
    """Index of the first byte equal to ``byte`` in each word, 8 when none is."""
    return np.bitwise_count(_before_first(word, byte)) >> 3


# _SHIFT[n] moves the first n bytes of a word to its top, and _FILL[n] is `0` digits below them.
_SHIFT = np.array([64 - 8 * n for n in range(9)], dtype=np.uint64)
_FILL = np.array([_word(b"0" * (8 - n)) for n in range(9)], dtype=np.uint64)
_OVER_NINE = _U64(0x4646464646464646)  # added to a byte above `9`, sets its top bit; to a digit, not


def _digits(word: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether the first ``count`` bytes of each word are ASCII digits, the number they write). The
    digits are moved to the top of the word, whatever it holds past them shifted out, and `0` digits
    put below them, so the steps of fast_float's `parse_eight_digits` read all 8. A count of 0 reads
    as the number 0 (the callers reject empty values)."""
    padded = (word << _SHIFT[count]) | _FILL[count]
    v = padded - _ZERO_CHARS
    # A byte below `0` sets its top bit in v, one above `9` in padded + _OVER_NINE; a borrow or a carry
    # between bytes starts only at a byte that already failed.
    ok = (((padded + _OVER_NINE) | v) & _HIGH) == 0
    v = v * _U64(10) + (v >> _U64(8))
    mask = _U64(0x000000FF000000FF)
    v = (
        (v & mask) * _U64(100 + (1000000 << 32)) + ((v >> _U64(16)) & mask) * _U64(1 + (10000 << 32))
    ) >> _U64(32)
    return ok, v.view(np.int64)


def _read_int(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok, value = _digits(word, length)
    return ok & (length >= 1), value


def _read_float(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # `dot` is where the word's first dot is, 8 when it has none; one at or past ``length`` is not the
    # value's, and the bytes it moves are past the value, which `_digits` shifts out.
    low = _before_first(word, _DOT)
    digits = (word & low) | ((word >> _U64(8)) & ~low)  # the dot taken out
    dot = np.bitwise_count(low) >> 3
    count = length - (dot < length)
    ok, number = _digits(digits, count)
    ok &= (dot != 0) & (dot != length - 1) & (length >= 1)  # a digit on each side of the dot
    # The value is the number over 10 ** (its digits after the dot): both are exact in a float64
    # (< 10 ** 8), so the quotient is the correctly rounded decimal, as polars' cast (a correctly
    # rounded parse) gives.
    value = number / _POW10[count - np.minimum(dot, length)]
    odd = np.flatnonzero(~ok & (length == 3))  # `nan` and `inf` are among the few non-digit values
    three = word[odd] & _LOW[3]
    nan, inf = odd[three == _NAN], odd[three == _INF]
    ok[nan] = ok[inf] = True
    value[nan], value[inf] = np.nan, np.inf
    return ok, value


def _read_bool(word: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    word = word & _LOW[length]
    true = (length == 4) & (word == _TRUE)
    false = (length == 5) & (word == _FALSE)
    return true | false, true


_READERS = {Kind.INT: _read_int, Kind.FLOAT: _read_float, Kind.BOOL: _read_bool}


def _read_rows(
    words: _Words, rows: np.ndarray, first: np.ndarray, lane: Lane
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(which of ``rows`` are lines of ``lane``, each item's values for them); ``first`` is the word
    of the first value (the lead is taken as checked). Each value runs to its word's first `,`; one
    window read after it holds the next piece, checked, and the next value's word. The values of each
    kind are then read together."""
    start, end = words.start[rows], words.end[rows]
    trail = (end - start >= 2) & ((words.words[np.maximum(end - 2, 0)] & _LOW[2]) == _TRAIL)
    stop = end - 2 * trail  # where the last value ends
    ok = words.valid[rows]
    pieces = lane.pieces()
    pos = start + len(pieces[0])
    word = first
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(len(pieces)):
        if i:
            piece = pieces[i]
            window = words.window(pos, _words_for(len(piece) + 8))
            ok &= _has_piece(window, piece)
            pos = pos + len(piece)
            word = _word_at(window, len(piece))
        if i < len(pieces) - 1:
            length = _first_byte(word, _COMMA)  # 0..8: the readers take 0 as no value
        else:
            length = stop - pos
            length = np.where((length >= 1) & (length <= _MAX_VALUE), length, 0)
        found.append((word, length))
        pos = pos + length
    values: list[np.ndarray] = [np.empty(0)] * len(pieces)
    n = len(rows)
    for kind in Kind:
        items = [i for i, k in enumerate(lane.kinds) if k is kind]
        if not items:
            continue
        word = np.concatenate([found[i][0] for i in items])
        length = np.concatenate([found[i][1] for i in items])
        good, value = _READERS[kind](word, length)
        ok &= good.reshape(len(items), n).all(axis=0)
        for j, i in enumerate(items):
            values[i] = value[j * n : (j + 1) * n]
    return ok, values


def _words_for(size: int) -> int:
    return -(-size // 8)


def read_lanes(bodies: pl.Series, lanes: list[Lane]) -> pl.DataFrame:
    """The rows of ``bodies`` that are lines of one of ``lanes`` (tried in order), read: a frame with
    one row per body, its lane's index in `W.LAYOUT` (-1: none) and the lanes' typed columns, null where
    the row's lane has no such column or it has no lane."""
    words = _Words(bodies, max(lane.reach() for lane in lanes) + 16)
    n = len(bodies)
    lane_of = np.full(n, -1, dtype=np.int8)
    values: dict[str, tuple[np.ndarray, np.ndarray, Kind]] = {}
    for index, lane in enumerate(lanes):
        lead = lane.pieces()[0]
        candidates = np.flatnonzero((lane_of < 0) & (words.end - words.start >= len(lead)))
        window = words.window(words.start[candidates], _words_for(len(lead) + 8))
        match = _has_piece(window, lead)
        candidates = candidates[match]
        if not len(candidates):
            continue
        ok, items = _read_rows(words, candidates, _word_at(window, len(lead))[match], lane)
        every = bool(ok.all())  # the usual case: no line to leave out of each column
        rows = candidates if every else candidates[ok]
        lane_of[rows] = index
        for column, item in lane.columns:
            kind = lane.kinds[item]
            if column not in values:
                dtype = {Kind.INT: np.int64, Kind.FLOAT: np.float64, Kind.BOOL: np.bool_}[kind]
                values[column] = (np.zeros(n, dtype=dtype), np.zeros(n, dtype=np.bool_), kind)
            data, valid, _ = values[column]
            data[rows] = items[item] if every else items[item][ok]
            valid[rows] = True
    return pl.DataFrame(
        [
            pl.Series(W.LAYOUT, lane_of),
            *(pl.Series(c, _arrow(data, valid, kind)) for c, (data, valid, kind) in values.items()),
        ]
    )


_ARROW_TYPES = {Kind.INT: pa.int64(), Kind.FLOAT: pa.float64(), Kind.BOOL: pa.bool_()}


def _arrow(data: np.ndarray, valid: np.ndarray, kind: Kind) -> pa.Array:
    """An Arrow array of ``data`` with ``valid`` as its validity bitmap (no copy of numbers)."""
    bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if kind is Kind.BOOL:
        return pa.Array.from_buffers(
            pa.bool_(), len(data), [bits, pa.py_buffer(np.packbits(data, bitorder="little"))]
        )
    return pa.Array.from_buffers(_ARROW_TYPES[kind], len(data), [bits, pa.py_buffer(data)])
