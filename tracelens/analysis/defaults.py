"""The analysis' defaults that commands show as the defaults of their options (`--stall-seconds`): plain
numbers, here rather than beside the computations that use them, so that the commands' shared options,
which every command imports (`parse` too), load none of the analysis."""

from __future__ import annotations

# Loading a large model takes 10-15 minutes with progress lines all along; a quarter hour of silence
# while starting is worth a look (`startup.stalls`).
DEFAULT_STALL_SECONDS = 900.0

# `check --baseline RUN` fails a run (an error finding, exit 1) whose acceptance at some draft position is
# lower than the baseline's at that position by more than this, in rate points (0.10 = ten percentage
# points of P(accepted)). Runs of one config and workload differ by a few points (sampling, batch mix);
# a drop of ten is a changed draft, depth or workload, which a CI gate should stop.
DEFAULT_POSITION_MARGIN = 0.10
