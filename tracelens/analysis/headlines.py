"""How a run's cause is said in one sentence: a failure chain's headline, and a finding's words as a
clause of one (a crash's component and ranks named as a chain's are)."""

from __future__ import annotations

import math
import re
from typing import Any

from tracelens.analysis.catalog import Weight
from tracelens.analysis.chain import Chain, ranks_text
from tracelens.analysis.crash_text import crash_what
from tracelens.analysis.findings import Finding
from tracelens.analysis.positions import VLLM
from tracelens.tables.schema import A

# A run that crashed with no rule to explain it was still stopped by something found: the fault itself.
CRASH_CODES = ("fault-exception", "fault-oom", "fault-nccl", "fault-watchdog", "fault-sigquit")

# A fault finding's lead (`health.faults`): how many ranks, which (`TP3, TP5`), in which component.
_RANKS = re.compile(r"^(\d+) rank\(s\) \(([^)]*)\)(?: in (\S+))?: ")


def _figure(value: Any) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def acceptance_words(run: dict[str, Any]) -> list[str]:
    """A run's acceptance as a headline says it: `accept len 2.39` (tokens a step, the bonus token
    included, for either engine) and, for vLLM, whose logs print it beside the length (`Avg Draft
    acceptance rate`), `acceptance 64%`; V1's first layouts print a rate and no length."""
    mean, rate = _figure(run.get(A.MEAN_ACCEPT_LEN)), _figure(run.get(A.MEAN_ACCEPTANCE_RATE))
    words = [f"accept len {mean:.2f}"] if mean is not None else []
    if rate is not None and run.get(A.RATE_ENGINE) == VLLM:
        words.append(f"acceptance {rate:.0%}")
    return words


def gist(finding: Finding, run: dict[str, Any], limit: int = 80) -> str:
    """A finding as a clause of a headline: short, numbers kept (a crash's ranks too), traceback tails dropped."""
    rate, mean = _figure(run.get(A.MEAN_ACCEPTANCE_RATE)), _figure(run.get(A.MEAN_ACCEPT_LEN))
    # vLLM's k, the tokens it drafts a step: a Medusa of 16 heads that accepts nothing is said so
    over = f" over {run[A.SPEC_TOKENS]} speculative tokens" if run.get(A.SPEC_TOKENS) else ""
    if finding.code == "acceptance-low" and rate is not None and mean is not None:
        return f"only {rate:.0%} of drafted tokens are accepted (accept len {mean:.2f}{over})"
    if finding.code == "acceptance-useless":
        # vLLM's rate as its lines print it beside the length (V1's first layouts print it alone)
        vllm = rate is not None and run.get(A.RATE_ENGINE) == VLLM
        figures = [f"acceptance {rate:.1%}{over}"] if vllm else []
        figures += [f"accept len {mean:.2f}"] if mean is not None else []
        if figures:
            return f"the target rejects almost every drafted token ({', '.join(figures)})"
    if finding.code == "slower-than-baseline" and run.get(A.SPEEDUP) is not None:
        return f"it is slower than its baseline ({run[A.SPEEDUP]:.2f}x)"
    text = finding.message
    ranks = _RANKS.match(text)
    what = crash_what(text[ranks.end() :] if ranks else text)
    if finding.code == "fault-retract":  # SGLang's scheduler gave back running requests: no crash
        what = "requests retracted: the KV cache ran full"
    head, tail = "", ""
    if ranks:  # a crash is said as a chain's headline says it: what, then its component and ranks
        numbers = sorted({int(r) for r in re.findall(r"\d+", ranks.group(2))})
        where = _where(ranks.group(3), numbers)
        tail = f" ({where})" if finding.code in CRASH_CODES else f" on {ranks.group(1)} rank(s)"
    if finding.code in CRASH_CODES:
        head = "crashed: "
    elif not ranks:
        what = text
    what = what.split(". ", 1)[0]
    room = limit - len(head) - len(tail)
    return head + (what if len(what) <= room else what[: room - 1] + "…") + tail


def _where(component: str | None, ranks: list[int]) -> str:
    """`Scheduler, ranks 3, 5`: the component and ranks a headline names (either may be missing)."""
    return ", ".join(p for p in (component, ranks_text(ranks)) if p)


def chain_headline(chain: Chain) -> str:
    """One sentence: what broke, in which component and ranks, when, and what it explains."""
    where = _where(chain.component, chain.ranks)
    when = {"serving": "while serving", "start-up": "at start-up", "idle": "while idle"}.get(chain.phase, "")
    if when and chain.phase == "start-up" and chain.step:
        when = f"{when} {chain.step}"
    times = f", {chain.count} times" if chain.weight == Weight.ERROR and chain.count > 1 else ""
    name = (
        chain.name
        if chain.exception is None or chain.exception in chain.name
        else f"{chain.name}: {chain.exception}"
    )
    what = f"{name} ({where}{times})" + (f" after {chain.detail[0]}" if chain.detail else "")
    when = f" {when}" if when else ""
    if chain.hangs:
        since = f" since {chain.since:%Y-%m-%d %H:%M:%S}" if chain.since else ""
        head = f"hung{when}{since}: {what}"
    elif chain.weight == Weight.ERROR:
        head = f"{what}{when}" + ("; the server went on serving after it" if chain.went_on else "")
    elif chain.weight == Weight.CONSEQUENCE:
        head = f"stopped{when}: {what}; the failure behind it is not in the log"
    else:
        head = f"crashed{when}: {what}"
    # the detail named before ("after NCCL warning") is not named again among what follows
    follows = [e for e in chain.explains if chain.detail is None or e != chain.detail[0]]
    if follows and chain.weight != Weight.CONSEQUENCE:
        head += f"; what follows ({', '.join(follows[:2])}) is its consequence"
    return head
