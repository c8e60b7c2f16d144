"""The analysis' defaults that commands show as the defaults of their options (`--stall-seconds`): plain
numbers, here rather than beside the computations that use them, so that the commands' shared options,
which every command imports (`parse` too), load none of the analysis."""

from __future__ import annotations

# Loading a large model takes 10-15 minutes with progress lines all along; a quarter hour of silence
# while starting is worth a look (`startup.stalls`).
DEFAULT_STALL_SECONDS = 900.0
