"""Several sources merged by time into one view, each line keeping its source.

A view is an int64 array of keys, one per line: ``source << SOURCE_SHIFT | line index``. Lines of one
source keep their own order; between sources the order is by timestamp, a line without one taking the
timestamp of the line before it in its source (lines not yet parsed sort last, in arrival order).
"""

from __future__ import annotations

import numpy as np

SOURCE_SHIFT = 40
INDEX_MASK = (1 << SOURCE_SHIFT) - 1
PREVIEW_BIT = 1 << (SOURCE_SHIFT - 1)  # the key names a preview line (a large file's tail, read first)
NO_TS = np.iinfo(np.int64).max


def key(source: int, index: int) -> int:
    return (source << SOURCE_SHIFT) | index


def split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(source, line index) arrays of a key array (the preview bit stays in the index)."""
    return keys >> SOURCE_SHIFT, keys & INDEX_MASK


def forward_fill(ts: np.ndarray, carry: int = NO_TS) -> np.ndarray:
    """Missing timestamps (NO_TS) take the last one before them (``carry`` before the first)."""
    have = ts != NO_TS
    if have.all():
        return ts
    idx = np.where(have, np.arange(len(ts)), -1)
    np.maximum.accumulate(idx, out=idx)
    out = np.where(idx >= 0, ts[np.maximum(idx, 0)], carry)
    return out.astype(np.int64)


def merged_order(ts_per_source: list[np.ndarray], bases: list[int] | None = None) -> np.ndarray:
    """Keys of every line of every source, in time order (stable: a source's own order is kept, and
    at equal times the earlier source comes first). ``bases``: each source's first line index (the
    lines before it were dropped by the scroll-back limit)."""
    starts = bases or [0] * len(ts_per_source)
    if len(ts_per_source) == 1:
        return np.arange(starts[0], starts[0] + len(ts_per_source[0]), dtype=np.int64)
    keys = np.concatenate(
        [
            np.arange(base, base + len(ts), dtype=np.int64) | (s << SOURCE_SHIFT)
            for s, (ts, base) in enumerate(zip(ts_per_source, starts, strict=True))
        ]
    )
    # A source's own order wins over its timestamps (a clock that steps back must not shuffle lines):
    # sort by the running maximum of each source's timestamps.
    times = np.concatenate([np.maximum.accumulate(ts) if len(ts) else ts for ts in ts_per_source])
    return keys[np.argsort(times, kind="stable")]
