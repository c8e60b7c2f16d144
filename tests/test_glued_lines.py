"""vLLM records glued onto one physical line by a copy that lost its newlines: each record with figures
is read, the line stays one line, and the counts reconcile. The lines are vLLM's engine-stats records
as V0 (`llm_engine.py:706]`, behind Ray's actor wrapper) and V1 (`[loggers.py:116]`) print them."""

from __future__ import annotations

from test_chain import only
from test_detectors import run

from tracelens.engine.ingest import parse_text
from tracelens.tables.accounting import reconcile
from tracelens.tables.schema import C, T


def v0_stats(second: int, tput: float) -> str:
    return (
        f"(_AsyncLLMEngine pid=1974) INFO 01-25 11:27:{second:02d} llm_engine.py:706] Avg prompt throughput: "
        f"0.0 tokens/s, Avg generation throughput: {tput} tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: "
        "0 reqs, GPU KV cache usage: 0.2%, CPU KV cache usage: 0.0%"
    )


def v1_stats(second: int, tput: float) -> str:
    return (
        f"INFO 05-06 10:00:{second:02d} [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
        f"generation throughput: {tput} tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.5%, "
        "Prefix cache hit rate: 0.0%"
    )


def test_a_line_of_glued_stats_records_reads_every_record() -> None:
    records = [v0_stats(3 + 5 * i, t) for i, t in enumerate([0.0, 77.3, 77.3, 76.8, 76.4])]
    tables = parse_text(" ".join(records) + "\n", "glued.log")
    batches = tables[T.BATCHES]
    assert batches.get_column(C.GEN_THROUGHPUT).to_list() == [0.0, 77.3, 77.3, 76.8, 76.4]
    assert batches.get_column(C.LINE_NO).unique().to_list() == [1]
    assert tables[T.LINES].height == 1
    assert reconcile(tables).ok, reconcile(tables).problems
    verdict = only(run([" ".join(records)]))
    assert verdict.status == "healthy" and "0 tok/s" not in verdict.headline, verdict.headline


def test_glued_lines_among_whole_ones_keep_their_order_and_line_numbers() -> None:
    lines = [
        v1_stats(0, 10.0),
        f"{v1_stats(10, 20.0)} {v1_stats(20, 30.0)}",
        v1_stats(30, 40.0),
        f"{v1_stats(40, 50.0)}   {v1_stats(50, 60.0)} {v1_stats(55, 70.0)}",
    ]
    tables = parse_text("\n".join(lines) + "\n", "mixed.log")
    got = tables[T.BATCHES].select(C.LINE_NO, C.GEN_THROUGHPUT).rows()
    assert got == [(1, 10.0), (2, 20.0), (2, 30.0), (3, 40.0), (4, 50.0), (4, 60.0), (4, 70.0)]
    assert tables[T.LINES].get_column(C.LINE_NO).to_list() == [1, 2, 3, 4]
    assert reconcile(tables).ok, reconcile(tables).problems


def test_a_glued_record_of_another_kind_stays_in_the_lines_text() -> None:
    # an error glued after a stats record is no row of its own (as before): the line is the stats
    # record's, and its text still holds the error for the failure catalog
    error = "(VllmWorker TP1 pid=406) ERROR 08-25 12:24:17 [multiproc_executor.py:596] WorkerProc hit an exception."
    tables = parse_text(f"{v1_stats(0, 10.0)} {v1_stats(10, 20.0)} {error}\n", "err.log")
    assert tables[T.BATCHES].get_column(C.GEN_THROUGHPUT).to_list() == [10.0, 20.0]
    assert tables[T.FAULTS].height == 0 and tables[T.FOREIGN].height == 0
    assert reconcile(tables).ok, reconcile(tables).problems


def test_a_message_that_quotes_a_lead_inside_one_record_is_not_split() -> None:
    # one record whose text names a lead without a record's shape before it (no whitespace-led lead)
    line = "INFO 05-06 10:00:00 [api_server.py:1] args: log_format='INFO 05-06 10:00:00 [x.py:1]'"
    tables = parse_text(line + "\n", "q.log")
    assert tables[T.LINES].height == 1 and tables[T.FOREIGN].height == 1
