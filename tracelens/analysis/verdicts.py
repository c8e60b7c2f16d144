"""Verdicts: one per run, computed once from the findings. Each says the run's status, what is wrong in one
sentence, which findings are causes and which symptoms they explain, the fix when one can be derived,
and the log lines that prove it.

The causal rules are data (`RULES`): a rule names the finding codes that are causes and the codes of
the symptoms they explain. A run whose symptoms no rule explains is `degraded`, with the symptom alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracelens.analysis.capture import layer_id_lines
from tracelens.analysis.catalog import HANG, Weight
from tracelens.analysis.chain import Chain, chains
from tracelens.analysis.crash_text import in_phase
from tracelens.analysis.expectations import Expectations
from tracelens.analysis.findings import Evidence, Finding, Severity, Status, severity_rank
from tracelens.analysis.headlines import CRASH_CODES, acceptance_words, chain_headline, gist
from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.startup import STOPPED_AT
from tracelens.analysis.verdict_inputs import (
    ClientFigures,
    Records,
    answered_requests,
    client_figures,
    client_verdict,
    record_verdict,
    running_at_prefill,
    running_headline,
)
from tracelens.analysis.verdict_inputs import roles as run_roles
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T

# Worst first: the order every view lists runs in.
STATUSES = tuple(Status)
MAX_EVIDENCE = 8
SLOW_DECODE_TOK_S = 1.0  # below this a decoding server serves no one

ACCEPTANCE_SYMPTOMS = ("acceptance-useless", "acceptance-low", "acceptance-regressed", "slower-than-baseline")
CRASH_SYMPTOMS = (
    "fault-exception",
    "fault-sigquit",
    "fault-watchdog",
    "shapes-inconsistent",
    "debug-truncated",
)
# Fault findings the failure chain judges by itself (`chain`): with a chain, they are its events.
CHAIN_CODES = (*CRASH_CODES, "fault-health")


@dataclass(frozen=True)
class Rule:
    """Causes (finding codes) that explain symptoms (finding codes) within one run."""

    name: str
    causes: tuple[str, ...]
    symptoms: tuple[str, ...]
    headline: str  # when a symptom is explained; {symptom} is the first symptom's message
    suspect: str  # when a cause is found and no symptom shows (yet)
    breaks: bool = True  # whether an explained symptom makes the run broken (else degraded: a tuning)


RULES: tuple[Rule, ...] = (
    Rule(
        "capture-layers",
        causes=(
            "layer-ids-mismatch",
            "embed-capture-unexpected",
            "embed-capture-missing",
            "layer-ids-invalid",
        ),
        symptoms=ACCEPTANCE_SYMPTOMS,
        headline="the draft is fed layers it was not trained on, so {symptom}",
        suspect="the target captures layers the draft may not have been trained on",
    ),
    Rule(
        "aux-shape",
        causes=(
            "aux-count-vs-draft",
            "num-aux-mismatch",
            "num-items-mismatch",
            "concat-width-mismatch",
            "hidden-size-mismatch",
            "num-aux-changed",
            "num-items-changed",
        ),
        # A draft fed fewer aux states than it reads crashes or accepts little: when every debug line
        # shows the count and one shows a NaN, the count is the cause (this rule comes first).
        symptoms=CRASH_SYMPTOMS + ACCEPTANCE_SYMPTOMS,
        headline="the draft gets the wrong number of aux hidden states, so {symptom}",
        suspect="the draft gets a different number of aux hidden states than it expects",
    ),
    Rule(
        # `detectors.training_gap`: what the server did against what the draft was trained on; each
        # cause finding carries its own concrete fix (or none).
        "training-gap",
        causes=(
            "training-capture-mismatch",
            "aux-ids-off-by-one",
            "eagle3-draft-as-eagle",
            "draft-hidden-size-mismatch",
            "draft-vocab-mismatch",
            "vocab-mapping-missing",
            "steps-beyond-training",
        ),
        symptoms=(*ACCEPTANCE_SYMPTOMS, "accept-below-training"),
        headline="the server does not run the draft as it was trained, so {symptom}",
        suspect="the server does not run the draft as it was trained",
    ),
    Rule(
        # `detectors.positions.spec_depth_wasted`: its finding carries the depth in the engine's flags
        "spec-depth",
        causes=("spec-depth-wasted",),
        symptoms=ACCEPTANCE_SYMPTOMS,
        headline="the draft runs deeper than its tokens are accepted, so {symptom}",
        suspect="the draft runs deeper than its tokens are accepted",
        breaks=False,
    ),
    Rule(
        "invalid-norms",
        causes=("norm-invalid",),
        symptoms=ACCEPTANCE_SYMPTOMS,
        headline="captured hidden states hold NaN or zero values, so {symptom}",
        suspect="captured hidden states hold NaN or zero values",
    ),
)

CAUSE_CODES = frozenset(code for rule in RULES for code in rule.causes)
SYMPTOM_CODES = frozenset(code for rule in RULES for code in rule.symptoms)


def causal_rank(code: str) -> int:
    """0 for a cause, 1 for a finding no rule names, 2 for a symptom: causes are listed first."""
    return 0 if code in CAUSE_CODES else 2 if code in SYMPTOM_CODES else 1


@dataclass
class Verdict:
    source: str
    run: int
    label: str
    status: Status
    headline: str
    causes: list[str] = field(default_factory=list)
    explains: list[str] = field(default_factory=list)
    fix: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    start_line: int | None = None  # the run's first line in its source (1 for a log without a start line)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.label,
            "source": self.source,
            "run_index": self.run,
            "start_line": self.start_line,
            "status": self.status,
            "headline": self.headline,
            "causes": self.causes,
            "explains": self.explains,
            "fix": self.fix,
            "evidence": [{"where": e.where, "text": e.text} for e in self.evidence],
        }


def status_rank(status: Status) -> int:
    """0 for the worst."""
    return STATUSES.index(status)


def worst_first(verdicts: Iterable[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: (status_rank(v.status), v.source, v.run))


def _ids(ids: Iterable[int] | None) -> str:
    return "[" + ", ".join(str(i) for i in ids or ()) + "]"


@dataclass
class _Facts:
    """What a fix is derived from, for one run."""

    run: dict[str, Any]
    expect: Expectations
    server_ids: tuple[int, ...] | None
    ids_line: int | None
    aux_seen: list[int]
    fc_aux: int | None = None  # how many aux states the draft's fc layer takes, from a shape-error crash
    last_phase: str | None = None  # the run's last start-up event (`kinds.LIFECYCLE_EVENTS`)
    last_phase_line: int | None = None
    last_line: int | None = None
    served: bool = False  # prefill batches (or a prefill node's transfers) seen
    role: str | None = None  # disaggregation_mode: prefill or decode
    client: ClientFigures | None = None  # a benchmark client's figures
    answered: int = 0  # requests answered with a 2xx status (uvicorn's access lines)
    records: Records | None = None  # what its request-log and snapshot rows show
    running: int = 0  # the most requests its prefill lines count running (being decoded)

    @property
    def config_file(self) -> str:
        draft = self.run.get(C.SPEC_DRAFT_MODEL)
        return f"{draft}/config.json" if draft else "the draft model's config.json"


def _fix(rule: Rule, facts: _Facts) -> str | None:
    key = "eagle_config.eagle_aux_hidden_state_layer_ids"
    trained = facts.expect.aux_layer_ids
    server = facts.server_ids
    if rule.name == "capture-layers":
        if server is not None and trained is not None and tuple(server) != tuple(trained):
            return (
                f"the server captures layers {_ids(server)}; the draft was trained on {_ids(trained)}: "
                f"set {key} to {_ids(trained)} in {facts.config_file} and restart"
            )
        if server is not None and -1 in server:
            return (
                f"the server captures layers {_ids(server)}; -1 is the token embedding: unless the draft was "
                f"trained with it, set {key} in {facts.config_file} to the ids it was trained on "
                "(--draft-config checks them)"
            )
        if facts.expect.embed_capture is True:
            return f"the draft expects the embedding (layer id -1): add -1 to {key} in {facts.config_file}"
        if trained is not None:  # known (a config, a recipe, the trainer's default): the fix names them
            return f"set {key} to {_ids(trained)} in {facts.config_file} (the ids the draft was trained on) and restart"
        return f"set {key} in {facts.config_file} to the layer ids the draft was trained on"
    if rule.name == "aux-shape":
        want = facts.expect.expect_aux or (len(trained) if trained else None) or facts.fc_aux
        seen = ", ".join(str(n) for n in facts.aux_seen) or "another number of"
        if want is not None:
            ids = f" (the draft was trained on {_ids(trained)})" if trained else ""
            return (
                f"the target hands the draft {seen} aux hidden states; it expects {want}: list {want} layer ids "
                f"in {key} in {facts.config_file}{ids}"
            )
        return f"make {key} in {facts.config_file} list as many ids as the draft's fc layer takes"
    if rule.name == "invalid-norms":
        return (
            "the captured hidden states are NaN or zero before the draft sees them: check the target's dtype and "
            "quantization and the captured layers (a layer id past the last layer reads nothing)"
        )
    return None


_SYMPTOM_HINTS = {
    "acceptance-low": "no capture fault was found: check that the draft belongs to this target, or pass "
    "--draft-config and --target-config so tracelens can check the layer ids",
    "acceptance-useless": "no capture fault was found: check that the draft belongs to this target, or pass "
    "--draft-config and --target-config so tracelens can check the layer ids",
    "slower-than-baseline": "try fewer speculative steps (speculative_num_steps) or a smaller topk",
    "fault-retract": "the KV cache is too small for this load: raise --mem-fraction-static, lower "
    "--max-running-requests, or spread the model over more GPUs",
    "serving-hang": HANG.fix,
    "startup-stall": "look at what the server was loading before the silence (weights, JIT compile, NCCL)",
}


_TAKES = re.compile(r"fc layer takes (\d+) aux")


def _evidence(findings: Iterable[Finding], per: int) -> list[Evidence]:
    return [e for f in findings for e in f.evidence[:per]]


def _chain_evidence(chain: Chain, source: str) -> list[Evidence]:
    lines = [chain.detail[1]] if chain.detail else []
    lines += [chain.line] if chain.line is not None else []
    if chain.text.endswith(":") and chain.line is not None:
        lines.append(chain.line + 1)  # a message that goes on on the next line (`2 errors happen:`)
    return [Evidence(source, n) for n in [*lines, *chain.explained_lines[:2]]]


def run_verdict(
    run: dict[str, Any],
    findings: list[Finding],
    facts: _Facts,
    decoded: bool,
    ids_evidence: list[Evidence],
    chain: Chain | None = None,
) -> Verdict:
    """The verdict of one run from its findings and its failure chain."""
    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.code, []).append(f)
    causes: list[str] = []
    explains: list[str] = []
    fired: list[tuple[Rule, list[str], list[str]]] = []
    for rule in RULES:
        found = [c for c in rule.causes if c in by_code]
        if not found:
            continue
        shown = [s for s in rule.symptoms if s in by_code]
        fired.append((rule, found, shown))
        causes += [c for c in found if c not in causes]
        explains += [s for s in shown if s not in explains and s not in causes]
    # The chain has read every fault line: the fault findings are its events, judged there. A traceback
    # cut before its exception line is no event of the chain: when the chain found no cause (only notes,
    # an NCCL WARN before such a traceback), that crash finding speaks.
    judged = chain is not None
    stop_line = chain.stop_line if chain is not None else None  # a graceful stop's
    unread = chain is not None and chain.code is None and stop_line is None
    unexplained = [
        f
        for f in findings
        if f.code not in causes
        and f.code not in explains
        and f.severity != Severity.INFO
        and not (
            judged
            and (f.code in CHAIN_CODES or f.code.startswith("failure-"))
            and not (unread and f.code == "fault-exception")
        )
    ]
    crashes = [f for f in unexplained if f.code in CRASH_CODES and f.severity == Severity.ERROR]
    cause_findings = [f for c in causes for f in by_code[c]]
    server_lines = facts.last_phase is not None or bool(run.get(C.MODEL) or facts.running)
    by_records = None if decoded or not facts.records else record_verdict(facts.records, run, server_lines)
    label = run[A.LABEL]
    fix: str | None = None
    evidence: list[Evidence] = []
    if fired:
        rule, _found, shown = next(((r, c, s) for r, c, s in fired if s), fired[0])
        headline = rule.headline.format(symptom=gist(by_code[shown[0]][0], run)) if shown else rule.suspect
        serious = (bool(shown) and rule.breaks) or any(f.severity == Severity.ERROR for f in cause_findings)
        status = Status.BROKEN if serious or crashes else Status.DEGRADED
        # A cause that knows its concrete fix (a training-gap finding) gives it; else the rule derives one.
        own = [f.fix for c in _found if c in by_code for f in by_code[c] if f.fix]
        fix = own[0] if own else _fix(rule, facts)
        # The line that shows the configured layer ids first: it is what the fix changes.
        evidence = (
            ids_evidence + _evidence(cause_findings, 2) + _evidence((by_code[s][0] for s in explains), 1)
        )
        if crashes and not shown:
            causes += [f.code for f in crashes if f.code not in causes]
    elif chain is not None and chain.code is not None and chain.weight != Weight.ERROR:
        status = Status.BROKEN
        headline = chain_headline(chain)
        causes = [chain.code]
        explains = list(chain.explains)
        fix = chain.fix
        evidence = _chain_evidence(chain, run[C.SOURCE])
    elif crashes:
        status = Status.BROKEN
        first = crashes[0]
        # answered requests are serving too (vLLM prints no batch line at its default log level)
        headline = in_phase(gist(first, run), decoded or facts.served or facts.answered > 0, facts.last_phase)
        causes = list(dict.fromkeys(f.code for f in crashes))
        explains = [f.code for f in unexplained if f.code in CRASH_SYMPTOMS and f.code not in causes]
        evidence = _evidence(crashes, 2)
    elif any(f.severity == Severity.ERROR for f in unexplained):
        status = Status.BROKEN
        first = min(unexplained, key=lambda f: severity_rank(f.severity))
        headline = gist(first, run)
        causes = [first.code]
        fix = first.fix or _SYMPTOM_HINTS.get(first.code)
        evidence = _evidence([first], 3)
    elif chain is not None and chain.code is not None:
        status = Status.DEGRADED
        headline = chain_headline(chain)
        causes = [chain.code]
        fix = chain.fix
        evidence = _chain_evidence(chain, run[C.SOURCE])
    elif unexplained:
        status = Status.DEGRADED
        first = unexplained[0]
        # a retraction (the KV cache ran full) and a total acceptance (a loop) say their own cause
        headline = gist(first, run) + (
            "" if first.code in ("fault-retract", "acceptance-total") else "; no cause found"
        )
        explains = []
        fix = _SYMPTOM_HINTS.get(first.code)
        evidence = _evidence(unexplained, 1)
    elif not decoded and facts.client is not None and not facts.served:
        status, headline = client_verdict(facts.client)  # a client's output alone: judged as the client's
    elif not decoded and chain is not None and "router-log" in chain.notes and not facts.served:
        status = Status.HEALTHY
        headline = "a router's log: no failure (a router serves no batches itself)"
    elif by_records is not None:
        status, headline = by_records  # a request log or snapshots, judged by what they show
    elif not decoded and facts.running:
        status, headline = Status.HEALTHY, running_headline(facts.running)  # served, decode lines unseen
    elif (
        not decoded
        and stop_line is not None
        and not facts.answered
        and facts.last_phase not in (None, "ready")
    ):
        # a stop asked for while the server was starting (an orchestrator's SIGTERM, Ctrl-C): nothing
        # failed, and the run never served: it ends unfinished, as a start-up log that stops does
        status = Status.INCOMPLETE
        headline = f"stopped {STOPPED_AT.get(facts.last_phase, 'during start-up')}: a shutdown was asked for before the server was ready"
        evidence = [Evidence(run[C.SOURCE], stop_line)]
    elif not decoded and (facts.answered or stop_line is not None):
        # Served requests with no batch line shown (vLLM's stats off, a log level above INFO), or a
        # graceful stop: nothing to act on.
        status = Status.HEALTHY
        said = (
            [f"answered {facts.answered} request(s) with no batch line in the log"] if facts.answered else []
        )
        if stop_line is not None:
            said.append("stopped gracefully (a shutdown was asked for)")
            evidence = [Evidence(run[C.SOURCE], stop_line)]
        headline = "; ".join(said if facts.answered else [*said, "no work in the log"])
    elif not decoded:
        status = Status.INCOMPLETE
        phase, last_line = facts.last_phase, facts.last_line
        if facts.served:
            headline = "prefill batches but no decode line yet: the log ends as serving began"
        elif phase == "ready":
            headline = "ready, but served no request in the log"
        elif phase is None:
            headline = "no decode yet: the server is starting, or served no request"
        else:
            headline = f"the log ends {STOPPED_AT.get(phase, 'during start-up')} with no error: still starting, or stuck there"
        # the last line of an unfinished log is its best clue (the step it was in)
        evidence = [Evidence(run[C.SOURCE], n) for n in (facts.last_phase_line, last_line) if n is not None]
    elif _slow(run.get(A.MEAN_GEN_THROUGHPUT)) and facts.role != "prefill":
        # under a token a second no model serves anyone: never "runs well"
        status = Status.DEGRADED
        headline = f"decodes at only {run.get(A.MEAN_GEN_THROUGHPUT) or 0.0:.1f} tok/s: extremely slow decode"
        fix = "look for what holds each step back: recompiles, retractions, a saturated KV cache, a slow peer"
    else:
        status = Status.HEALTHY
        headline = _healthy_headline(run, facts)
        if chain is not None and chain.client:
            headline += f"; a client in the same log failed ({_clip(chain.client, 60)}), not the server"
    if status != Status.HEALTHY and not evidence:
        evidence = ids_evidence
    unique = list(dict.fromkeys((e.source, e.line_no) for e in evidence))[:MAX_EVIDENCE]
    return Verdict(
        run[C.SOURCE],
        int(run[C.RUN]),
        label,
        status,
        headline,
        causes,
        explains,
        fix,
        [Evidence(s, n) for s, n in unique],
        run.get(C.START_LINE),
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _slow(throughput: float | None) -> bool:
    return throughput is not None and not math.isnan(throughput) and throughput < SLOW_DECODE_TOK_S


def _healthy_headline(run: dict[str, Any], facts: _Facts) -> str:
    if facts.role == "prefill":
        return "prefill node runs well: it served prefill batches (a prefill node never decodes)"
    parts = acceptance_words(run)
    if run.get(A.MEAN_GEN_THROUGHPUT) is not None:
        parts.append(f"{run[A.MEAN_GEN_THROUGHPUT]:.0f} tok/s")
    if run.get(A.SPEEDUP) is not None:
        parts.append(f"{run[A.SPEEDUP]:.2f}x {run[A.BASELINE]}")
    return "runs well: " + ", ".join(parts) if parts else "runs with no findings"


def verdicts(
    runs: pl.DataFrame,
    findings: list[Finding],
    tables: Tables,
    expect: Expectations,
    linked: dict[tuple[str, int], Chain] | None = None,
    records: dict[tuple[str, int], Records] | None = None,
) -> list[Verdict]:
    """One verdict per run of ``runs``, worst first. ``records``: `verdict_inputs.record_facts`."""
    per_run: dict[tuple[str, int], list[Finding]] = {}
    for f in findings:
        per_run.setdefault((f.source, f.run), []).append(f)
    # The big tables are read through scans: a dataset reads only these columns (see `Tables.scan`).
    ids = {(s, r): (tuple(i), n) for s, r, i, n in layer_id_lines(tables.scan(T.DEBUG)).iter_rows()}
    counted = (
        tables.scan(T.DEBUG)
        .select(*RUN_KEY, C.NUM_AUX)
        .filter(pl.col(C.NUM_AUX).is_not_null())
        .group_by(RUN_KEY)
        .agg(pl.col(C.NUM_AUX).unique())
    )
    aux = {(s, r): sorted(v) for s, r, v in collect(counted).iter_rows()}
    decoding = collect(
        pl.concat(
            [
                tables.scan(T.BATCHES).filter(pl.col(C.PHASE) == "decode").select(RUN_KEY),
                tables.scan(T.SPEC_METRICS).select(RUN_KEY),
            ]
        ).unique()
    ).iter_rows()
    decoded = set(decoding)
    roles = run_roles(tables)
    # A prefill node of a PD-disaggregated pair serves by its prefill batches: it never decodes.
    prefilling = collect(
        tables.scan(T.BATCHES).filter(pl.col(C.PHASE) == "prefill").select(RUN_KEY).unique()
    ).iter_rows()
    decoded |= {key for key in prefilling if roles.get(key) == "prefill"}
    linked = chains(tables) if linked is None else linked
    events = collect(
        tables.scan(T.LIFECYCLE)
        .filter(pl.col(C.EVENT) != "shutdown")
        .group_by(RUN_KEY)
        .agg(pl.col(C.EVENT).sort_by(C.LINE_NO).last(), pl.col(C.LINE_NO).max())
    )
    phases = {(s, r): (e, n) for s, r, e, n in events.iter_rows()}
    clients = client_figures(tables)
    answered = answered_requests(tables)
    running = running_at_prefill(tables)
    # vLLM prints its engine stats while idle too (phase `idle`): those lines are no work served.
    busy = tables.scan(T.BATCHES).filter(pl.col(C.PHASE) != "idle")
    served = set(collect(busy.select(RUN_KEY).unique()).iter_rows())
    out = []
    for run in runs.to_dicts():
        key = (run[C.SOURCE], run[C.RUN])
        server_ids, ids_line = ids.get(key, (None, None))
        fc = next((f for f in per_run.get(key, []) if f.code == "aux-count-vs-draft"), None)
        taken = _TAKES.search(fc.message) if fc else None
        phase, phase_line = phases.get(key, (None, None))
        start, count = run.get(C.START_LINE), run.get(C.LINE_COUNT)
        facts = _Facts(
            run,
            expect,
            server_ids,
            ids_line,
            aux.get(key, []),
            int(taken.group(1)) if taken else None,
            phase,
            phase_line,
            start + count - 1 if start is not None and count else None,
            key in served,
            roles.get(key),
            clients.get(key),
            answered.get(key, 0),
            (records or {}).get(key),
            running.get(key, 0),
        )
        ids_evidence = [Evidence(run[C.SOURCE], ids_line)] if ids_line is not None else []
        out.append(
            run_verdict(run, per_run.get(key, []), facts, key in decoded, ids_evidence, linked.get(key))
        )
    return worst_first(out)
