"""A server restart seen in saved `/metrics` pages (parsers/restarts.py): a counter going back starts a
new run, from the first line of its page, however the file is cut into blocks or ranges.

The pages are what `prometheus_client`'s `generate_latest` (text format 0.0.4) writes for vLLM's
`/metrics` (`vllm/v1/spec_decode/metrics.py`: `vllm:spec_decode_num_drafts_total`,
`vllm:spec_decode_num_accepted_tokens_per_pos_total{position}`), the default collectors first
(`python_gc_objects_collected_total`), each family behind its `# HELP` and `# TYPE` lines, counters
typed by their `_total` name; `/server_info` objects (SGLang's `get_server_info`) as the live source
stamps them between polls.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from test_engine import assert_same_tables, read_dataset

from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import analyze, parse_paths
from tracelens.engine.ranges import plan_ranges
from tracelens.sources.inputs import discover
from tracelens.tables.schema import A, C, T


def page(gc: float, drafts: float, accepted: list[float], running: float = 3, extra: str = "") -> str:
    """One `/metrics` exposition."""
    rows = [
        "# HELP python_gc_objects_collected_total Objects collected during gc",
        "# TYPE python_gc_objects_collected_total counter",
        f'python_gc_objects_collected_total{{generation="0"}} {gc}',
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}',
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}',
        "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
    ]
    rows += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{i}"}} {v}'
        for i, v in enumerate(accepted)
    ]
    return "\n".join(rows) + "\n" + extra


def info(stamp: str, accept_len: float) -> str:
    state = {"avg_spec_accept_length": accept_len, "speculative_num_steps": 3}
    return f"[{stamp}] " + json.dumps({"internal_states": [state]}, separators=(",", ":")) + "\n"


def _runs_by_line(path: Path, **kwargs) -> list[int]:
    lines = parse_paths([path], **kwargs)[T.LINES].sort(C.LINE_NO)
    return lines.get_column(C.RUN).to_list()


def test_a_counter_going_back_starts_a_run_at_its_page(tmp_path: Path) -> None:
    path = tmp_path / "metrics.prom"
    first = page(1000, 100, [80, 50]) + info("2026-12-06 10:00:00", 2.3)
    second = page(1500, 300, [180, 90]) + info("2026-12-06 10:00:05", 2.3)
    # the server started again: every counter is lower, the gauge higher
    third = page(400, 50, [20, 5], running=7) + info("2026-12-06 10:01:00", 1.5)
    fourth = page(600, 150, [70, 25]) + info("2026-12-06 10:01:05", 1.6)
    path.write_text(first + second + third + fourth, encoding="utf-8")
    before = (first + second).count("\n")
    runs = _runs_by_line(path)
    assert runs == [0] * before + [1] * (third + fourth).count("\n")  # its `# HELP` lines included
    # the same whatever the blocks: a page cut between two blocks still starts its run at its first line
    for block in (200, 333, 1024):
        assert _runs_by_line(path, block_bytes=block) == runs
    analysis = analyze([path])
    curves = {
        label: [round(r, 4) for r in rows.sort(A.POSITION).get_column(A.RATE).to_list()]
        for (label,), rows in analysis.spec_curves.group_by(A.LABEL)
    }
    # run 0: seen from its first page on, so its increase (200 drafts); run 1 counts from its start
    assert curves == {
        "metrics.prom#0": [0.5, 0.2],
        "metrics.prom#1": [round(70 / 150, 4), round(25 / 150, 4)],
    }
    depth = analysis.depth.filter(pl.col(C.RUN) == 1)
    assert depth.get_column(C.ACCEPT_LEN).to_list() == [1.5, 1.6]


def test_gauges_going_down_and_late_series_are_no_restart(tmp_path: Path) -> None:
    path = tmp_path / "metrics.prom"
    late = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 9\n'
    text = (
        page(1000, 100, [80, 50], running=9, extra=late)
        + page(1200, 150, [100, 60], running=1, extra=late)  # a gauge down: no restart
        + page(10, 5, [3])  # a restart: position 1 and 2 not exported yet
        + page(20, 10, [6, 2])  # position 1 back, below its old value: the same server
        + page(30, 20, [12, 4], extra=late.replace(" 9", " 1"))  # position 2 back, below: the same
    )
    path.write_text(text, encoding="utf-8")
    runs = parse_paths([path])[T.ENDPOINT_METRICS].group_by(C.RUN).len().sort(C.RUN)
    assert runs.get_column(C.RUN).to_list() == [0, 1]


def test_a_counter_without_a_type_line_is_known_by_its_name(tmp_path: Path) -> None:
    """Pages saved without their comments (`grep -v '^#'`): `_total` names are counters, others not."""
    path = tmp_path / "samples.prom"
    bare = [line for line in page(1000, 100, [80, 50]).splitlines(keepends=True) if not line.startswith("#")]
    again = page(2000, 50, [20, 10]).replace("vllm:num_requests_running", "vllm:gpu_cache_usage_perc")
    again_bare = [line for line in again.splitlines(keepends=True) if not line.startswith("#")]
    path.write_text("".join(bare + again_bare), encoding="utf-8")
    # the gc counter went up, the gauge is none: the run starts at the drafts counter, which went back
    assert _runs_by_line(path) == [0] * len(bare) + [0, 0] + [1] * (len(again_bare) - 2)
    # a page whose only drop is a series named as no counter is the same server
    gauge = tmp_path / "gauge.prom"
    gauge.write_text('vllm:kv_cache_usage_perc{engine="0"} 0.9\nvllm:kv_cache_usage_perc{engine="0"} 0.1\n')
    assert set(_runs_by_line(gauge)) == {0}


def _polls(restart_after: int | None, polls: int = 60) -> str:
    """``polls`` snapshots, every figure four digits wide (so that where a file is cut does not depend on
    the values); the counters go back after poll ``restart_after``."""
    parts = []
    for n in range(polls):
        base = 1000 if restart_after is not None and n > restart_after else 5000
        parts.append(page(base + 10 * n, base + 10 * n, [base + 6 * n, base + 3 * n]))
        parts.append(info(f"2026-12-06 10:{n // 60:02d}:{n % 60:02d}", 2.0))
    return "".join(parts)


def test_ranges_of_a_big_snapshot_file_give_the_runs_of_the_whole_file(tmp_path: Path) -> None:
    """The stamped `/server_info` lines are places a big file may be cut at; a range cannot tell a
    restart on its first page without the pages before it, so a file whose later ranges saw counters is
    read again whole."""
    path = tmp_path / "snapshots.log"
    path.write_text(_polls(None), encoding="utf-8")
    range_bytes = 8 << 10
    cuts = [start for start, _ in plan_ranges(discover([str(path)])[0], range_bytes)]
    assert len(cuts) > 3
    # the restart on the first page of the third range: that range alone sees no counter go back
    text = path.read_text(encoding="utf-8")
    assert text[cuts[2] :].startswith("[2026-")  # the range starts with a poll's `/server_info` line
    restart_after = text[: cuts[2]].count("\n[2026-")  # that poll's number: the next page goes back
    path.write_text(_polls(restart_after), encoding="utf-8")
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, block_bytes=4 << 10, range_bytes=range_bytes)
    report = parse_to_dataset([str(path)], str(out), options)
    assert not report.problems
    dataset = read_dataset(out)
    assert_same_tables(dataset, parse_paths([path]))
    assert dataset[T.RUNS].get_column(C.RUN).to_list() == [0, 1]


def test_a_grown_file_whose_new_range_starts_with_a_restart_page(tmp_path: Path) -> None:
    """A file read before (its pages in the first range, only stamped `/server_info` lines after them)
    grows by a page whose counters went back: the last range, read again with what grew, starts with
    that page, and it is a restart only beside the pages of the ranges kept before it."""
    path = tmp_path / "snapshots.log"
    pages = "".join(page(5000 + 10 * n, 5000 + 10 * n, [5000 + 6 * n, 5000 + 3 * n]) for n in range(4))
    stamps = "".join(info(f"2026-12-06 10:{n // 60:02d}:{n % 60:02d}", 2.0) for n in range(400))
    path.write_text(pages + stamps, encoding="utf-8")
    range_bytes = 8 << 10
    cuts = [start for start, _ in plan_ranges(discover([str(path)])[0], range_bytes)]
    assert len(cuts) > 3 and cuts[1] > len(pages)  # the pages are all in the first range
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, block_bytes=4 << 10, range_bytes=range_bytes)
    first = parse_to_dataset([str(path)], str(out), options)
    assert not first.problems and read_dataset(out)[T.RUNS].get_column(C.RUN).to_list() == [0]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(page(100, 100, [60, 30]) + page(200, 200, [120, 60]))  # the server started again
    grown = parse_to_dataset([str(path)], str(out), options)
    assert not grown.problems
    dataset = read_dataset(out)
    assert_same_tables(dataset, parse_paths([path]))
    assert dataset[T.RUNS].get_column(C.RUN).to_list() == [0, 1]
