"""A server that stops with work in hand while its log goes on is hung; idle or cut-off logs are not."""

from __future__ import annotations

from test_chain import only, serving
from test_detectors import codes, decode, run, stamp

RECEIVE = "Receive: obj=GenerateReqInput(rid='r9', text='hello', sampling_params={'max_new_tokens': 64})"
GET_HEALTH = 'INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK'


def _later(at: float, text: str) -> str:
    return f"{stamp(at, '')} {text}"


def test_no_batch_for_minutes_with_requests_running_is_a_hang() -> None:
    lines = [*serving(5)[:-1], decode(14, accept=None, running=3)]
    lines += [_later(14 + 60 * m, GET_HEALTH) for m in range(1, 12)]
    analysis = run(lines)
    verdict = only(analysis)
    assert verdict.status == "broken", verdict.headline
    assert verdict.headline.startswith("server hung while serving: no batch for 11 min with 3 request(s)")
    assert codes(analysis)["serving-hang"] == "error"
    assert verdict.fix and "py-spy" in verdict.fix
    # the evidence is the last batch line (where it stopped) and the first line after the silence
    assert [e.line_no for e in verdict.evidence][:2] == [len(serving(5)), len(serving(5)) + 6]


def test_a_request_received_by_an_idle_server_and_never_served_is_a_hang() -> None:
    lines = [*serving(5)[:-1], decode(14, accept=None, running=0), _later(20, RECEIVE)]
    lines += [_later(20 + 60 * m, GET_HEALTH) for m in range(1, 8)]
    verdict = only(run(lines))
    assert verdict.status == "broken", verdict.headline
    assert "1 request(s) in hand" in verdict.headline


def test_an_idle_server_is_no_hang_however_long_its_log_goes_on() -> None:
    lines = [*serving(5)[:-1], decode(14, accept=None, running=0)]
    lines += [_later(14 + 600 * m, GET_HEALTH) for m in range(1, 12)]
    analysis = run(lines)
    assert only(analysis).status == "healthy", only(analysis).headline
    assert "serving-hang" not in codes(analysis)


def test_a_log_that_ends_at_a_busy_batch_or_resumes_is_no_hang() -> None:
    ends = [*serving(5)[:-1], decode(14, accept=None, running=3)]
    resumes = [*ends, _later(400, GET_HEALTH), decode(401, accept=None, running=3)]
    brief = [*ends, *(_later(14 + 20 * m, GET_HEALTH) for m in range(1, 10))]  # three minutes only
    for lines in (ends, resumes, brief):
        analysis = run(lines)
        assert "serving-hang" not in codes(analysis), lines[-1]
        assert only(analysis).status == "healthy"


def test_a_line_from_another_clock_measures_no_silence() -> None:
    # a client printing in another timezone into the same stream: its lines are hours "later"
    lines = [*serving(5)[:-1], decode(14, accept=None, running=3), _later(10, GET_HEALTH)]
    lines += [_later(14 + 3600 * 5, GET_HEALTH)]
    assert "serving-hang" not in codes(run(lines))
