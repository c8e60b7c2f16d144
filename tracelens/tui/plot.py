"""A line plot in braille characters (2x4 dots per cell), for the acceptance panel. Pure: numbers in,
lines of text out."""

from __future__ import annotations

import math
from collections.abc import Sequence

_BASE = 0x2800
# dot bit of (column 0-1, row 0-3) inside a braille cell
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))


def braille_plot(
    xs: Sequence[float],
    ys: Sequence[float],
    width: int,
    height: int,
    y_range: tuple[float, float] | None = None,
    hline: float | None = None,
) -> list[str]:
    """``height`` lines of ``width`` characters; points joined column by column; ``hline`` (a
    baseline) drawn as a dotted line. Non-finite values are skipped."""
    width, height = max(width, 1), max(height, 1)
    points = [(x, y) for x, y in zip(xs, ys, strict=False) if math.isfinite(x) and math.isfinite(y)]
    cells = [[0] * width for _ in range(height)]
    if not points:
        return ["".join(chr(_BASE) for _ in row) for row in cells]
    lo_x, hi_x = min(p[0] for p in points), max(p[0] for p in points)
    if y_range is None:
        values = [p[1] for p in points] + ([hline] if hline is not None else [])
        lo_y, hi_y = min(values), max(values)
    else:
        lo_y, hi_y = y_range
    if hi_y - lo_y < 1e-9:
        lo_y, hi_y = lo_y - 0.5, hi_y + 0.5
    span_x = hi_x - lo_x or 1.0
    dots_w, dots_h = width * 2, height * 4

    def dot(col: int, row: int) -> None:
        if 0 <= col < dots_w and 0 <= row < dots_h:
            cells[row // 4][col // 2] |= _DOTS[row % 4][col % 2]

    def row_of(y: float) -> int:
        frac = (min(max(y, lo_y), hi_y) - lo_y) / (hi_y - lo_y)
        return round((1 - frac) * (dots_h - 1))

    if hline is not None and lo_y <= hline <= hi_y:
        for col in range(0, dots_w, 3):
            dot(col, row_of(hline))
    # one value per dot column: the mean of the points that fall in it, joined by vertical runs
    columns: dict[int, list[float]] = {}
    for x, y in points:
        col = round((x - lo_x) / span_x * (dots_w - 1)) if len(points) > 1 else 0
        columns.setdefault(col, []).append(y)
    prev: int | None = None
    for col in sorted(columns):
        row = row_of(sum(columns[col]) / len(columns[col]))
        if prev is not None:
            for r in range(min(prev, row), max(prev, row) + 1):
                dot(col, r)
        dot(col, row)
        prev = row
    return ["".join(chr(_BASE + bits) for bits in row) for row in cells]
