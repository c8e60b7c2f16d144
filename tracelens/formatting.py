"""How numbers, durations and names look, in one place for every view (the CLI, the report, the TUI)."""

from __future__ import annotations

from tracelens.tables.schema import A

# (header, column, digits) of the client-side benchmark table, in `compare` and the report
BENCH_COLUMNS = (
    ("requests", A.BENCH_REQUESTS, 0),
    ("accept len (client)", A.BENCH_ACCEPT_LENGTH, 2),
    ("accept len (server)", A.MEAN_ACCEPT_LEN, 2),
    ("out tok/s (client)", A.BENCH_OUTPUT_THROUGHPUT, 1),
    ("tok/s (server)", A.MEAN_GEN_THROUGHPUT, 1),
    ("req/s", A.BENCH_REQUEST_THROUGHPUT, 2),
    ("TTFT ms", A.BENCH_MEAN_TTFT_MS, 1),
    ("TPOT ms", A.BENCH_MEAN_TPOT_MS, 2),
    ("ITL ms", A.BENCH_MEAN_ITL_MS, 2),
    ("E2E ms", A.BENCH_MEAN_E2E_MS, 1),
)
