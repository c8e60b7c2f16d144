"""What the report draws of long series: see `tracelens.analysis.plotdata`, where it lives since the
analysis thins long runs with the same functions inside its per-run pass."""

from tracelens.analysis.plotdata import (
    DISTRIBUTION_POINTS,
    PAIR_POINTS,
    TIME_POINTS,
    decimate,
    keep_peaks,
    pair_counts,
    quantile_sample,
)

__all__ = [
    "DISTRIBUTION_POINTS",
    "PAIR_POINTS",
    "TIME_POINTS",
    "decimate",
    "keep_peaks",
    "pair_counts",
    "quantile_sample",
]
