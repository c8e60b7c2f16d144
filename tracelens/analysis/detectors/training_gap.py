"""The gap from training to serving, named: what the server did (its server args, debug lines and the
configs found for it) against what the draft was trained on (`--training`), one finding per silent
cause, each with its evidence lines and, when it can be derived, the concrete fix (`Finding.fix`).

The causes are those the engines' trackers report as "acceptance about 1, training looked good, the
logs say nothing": the draft config without aux ids (the server's fallback list), ids in another
convention (off by one), an EAGLE-3 draft run as `EAGLE`, speculation deeper than the trained TTT
length, a context past what the draft was trained or built for, a draft trained for another target,
a width or vocabulary that does not match the target's.

SGLang's side (`python/sglang/srt/models/llama.py` and the other targets, `set_eagle3_layers_to_capture`):
without ids the target captures at `[2, n//2, n-3]` as they are; explicit ids are shifted by one ("in
sglang, for the ith layer, it takes the output of the (i-1)th layer"); `expectations.capture_indices`
holds both rules and the DeepSeek-V2 exception. SpecForge trains through the same call, so trained ids
and served ids are compared as the capture indices they give, and the fix writes the trained ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from tracelens.analysis.capture import is_embed, layer_id_lines
from tracelens.analysis.configs import RunConfigs, text_config
from tracelens.analysis.detectors.context import Context, _fmt_ids, _spec_runs
from tracelens.analysis.expectations import capture_indices, default_layer_ids, describe_capture
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.training import DraftFacts, Training
from tracelens.sources.model_files import VOCAB_MAP_NAMES, weight_names
from tracelens.tables.schema import A, C, T, W

KEY = "eagle_config.eagle_aux_hidden_state_layer_ids"
# A served accept length under this share of the training's prediction is worth a warning: the
# evaluation is on held-out data of the training's own distribution, so serving a little below it is
# the norm; far below it is not.
SERVED_SHARE_WARN = 0.8


def _file(configs: RunConfigs, run: dict[str, Any]) -> str:
    """The draft's config.json to change: where it was read, else the path the server was given."""
    if configs.draft is not None and configs.draft.file:
        return configs.draft.file
    draft = run.get(C.SPEC_DRAFT_MODEL)
    return f"{draft}/config.json" if draft else "the draft model's config.json"


def _same_model(a: str, b: str) -> bool:
    """Whether two model names name the same model: a hub id and a local copy share their last part."""

    def last(name: str) -> str:
        return name.rstrip("/").rsplit("/", 1)[-1].lower().removesuffix("-instruct")

    return last(a) == last(b)


def gap_findings(
    ctx: Context, configs: dict[tuple[str, int], RunConfigs], training: Training | None
) -> list[Finding]:
    out: list[Finding] = []
    printed = {(s, r): (tuple(i), n) for s, r, i, n in layer_id_lines(ctx.tables.scan(T.DEBUG)).iter_rows()}
    for run in _spec_runs(ctx):
        key = (run[C.SOURCE], int(run[C.RUN]))
        rc = configs.get(key)
        if rc is None:
            continue
        out.extend(_run_gap(ctx, run, rc, training, printed.get(key)))
    return out


@dataclass
class _Run:
    """One speculative run as the gap's checks read it, and the findings they make of it."""

    ctx: Context
    run: dict[str, Any]
    rc: RunConfigs
    training: Training | None
    out: list[Finding] = field(default_factory=list)

    def add(
        self, severity: Severity, code: str, message: str, lines: list[int], fix: str | None = None
    ) -> None:
        run = self.run
        finding = self.ctx.finding(
            severity, code, run[C.SOURCE], int(run[C.RUN]), run[C.START_TS], message, lines
        )
        finding.fix = fix
        self.out.append(finding)

    @property
    def args_line(self) -> list[int]:
        """The evidence of what the server was told: its server_args line."""
        return [self.rc.args_line] if self.rc.args_line is not None else [self.run[C.START_LINE]]

    @property
    def n(self) -> int | None:
        return self.rc.num_layers or self.ctx.expect.num_layers

    @property
    def arch(self) -> str | None:
        if self.rc.target is not None:
            return (self.rc.target.data.get("architectures") or [self.ctx.expect.architecture])[0]
        return self.ctx.expect.architecture

    @property
    def draft(self) -> DraftFacts | None:
        return self.rc.draft_facts or (self.training.draft if self.training else None)

    @property
    def steps(self) -> int | None:
        return self.run.get(C.SPEC_NUM_STEPS) or self.rc.arg_int("speculative_num_steps")

    @property
    def predicted(self) -> float | None:
        return self.training.predicted_accept_len(self.steps) if self.training else None

    @property
    def gap(self) -> str:
        """The measured gap as a clause, when the training predicts an accept length."""
        predicted, served = self.predicted, self.run.get(A.MEAN_ACCEPT_LEN)
        if predicted is None or served is None:
            return ""
        return (
            f" (predicted accept len {predicted:.2f} at {self.steps} steps from the training evaluation; served "
            f"{served:.2f}, {served / predicted:.0%} of it)"
        )


def _run_gap(
    ctx: Context,
    run: dict[str, Any],
    rc: RunConfigs,
    training: Training | None,
    printed: tuple[tuple[int, ...], int] | None,
) -> list[Finding]:
    r = _Run(ctx, run, rc, training)
    _configs_read(r)
    _capture(r, printed)
    _served_as_trained(r)
    _made_for_this_target(r)
    _measured(r)
    return r.out


def _configs_read(r: _Run) -> None:
    """Where each config came from (and what was looked up and not found), as an info finding."""
    rc, training, draft, n, add, args_line = r.rc, r.training, r.draft, r.n, r.add, r.args_line
    parts = []
    if rc.target is not None:
        parts.append(f"target config from {rc.target.where}" + (f" ({n} layers)" if n else ""))
    if rc.draft is not None:
        ids = draft.aux_ids if draft else None
        parts.append(
            f"draft config from {rc.draft.where} (aux ids {_fmt_ids(ids) if ids is not None else 'none'})"
        )
    if training is not None:
        parts.append("training: " + "; ".join(training.read))
    # Said only when something was read: a log read away from its cluster finds nothing, every run.
    if parts and rc.looked_up:
        parts.append("not found: " + ", ".join(rc.looked_up))
    if parts:
        add(Severity.INFO, "configs-read", "; ".join(parts), args_line)


def _first_embed_line(r: _Run) -> int | None:
    """The run's first debug line that shows an embedding capture (read only when a finding cites it)."""
    embeds = r.ctx.digest_of(r.run[C.SOURCE], int(r.run[C.RUN])).groups.filter(is_embed())
    return cast(int | None, embeds.get_column(W.FIRST_SEEN).min()) if embeds.height else None


def _capture(r: _Run, printed: tuple[tuple[int, ...], int] | None) -> None:
    """The layers the server hands the draft against those it was trained on."""
    rc, run, training, draft, n, arch, add, args_line = (
        r.rc,
        r.run,
        r.training,
        r.draft,
        r.n,
        r.arch,
        r.add,
        r.args_line,
    )
    algorithm, gap = (run.get(C.SPEC_ALGORITHM) or "").upper(), r.gap
    trained = training.trained_ids(n) if training else None
    # What the server hands the draft: the ids a debug line printed, else the draft config's, else
    # (a config without ids) SGLang's fallback list.
    served_ids = printed[0] if printed else (draft.aux_ids if draft else None)
    fallback = rc.draft is not None and draft is not None and draft.aux_ids is None and printed is None
    if algorithm == "EAGLE3" and n is not None and (served_ids is not None or fallback):
        served_at = capture_indices(served_ids, n, arch)
        evidence = [printed[1]] if printed else args_line
        if trained is not None:
            trained_at = capture_indices(trained[0], n, arch)
            if served_at != trained_at and printed is None:
                embed_line = _first_embed_line(r)
                evidence = evidence + ([embed_line] if embed_line is not None else [])
                shifted = len(served_at) == len(trained_at) and {
                    s - t for s, t in zip(served_at, trained_at, strict=True)
                } in ({1}, {-1})
                what = (
                    "no aux ids, so SGLang falls back to its default list"
                    if fallback
                    else f"aux ids {_fmt_ids(served_ids or ())}"
                )
                add(
                    Severity.ERROR,
                    "aux-ids-off-by-one" if shifted else "training-capture-mismatch",
                    f"the draft config has {what}: the draft gets {describe_capture(served_ids, n, arch)}; it "
                    f"was trained on {_fmt_ids(trained[0])} ({trained[1]}), {describe_capture(trained[0], n, arch)}"
                    + (": every id off by one" if shifted else "")
                    + gap,
                    evidence,
                    f"set {KEY} to {_fmt_ids(trained[0])} in {_file(rc, run)} and restart",
                )
            elif fallback:
                add(
                    Severity.INFO,
                    "draft-ids-default-matches",
                    f"the draft config lists no aux ids, so SGLang captures by its default "
                    f"{_fmt_ids(default_layer_ids(n))} ({describe_capture(None, n, arch)}): the same layers "
                    f"the training captured ({trained[1]}, {_fmt_ids(trained[0])})",
                    evidence,
                )
        elif fallback:
            add(
                Severity.WARNING,
                "draft-ids-fallback",
                f"the draft config lists no aux ids, so SGLang captures by its default "
                f"{_fmt_ids(default_layer_ids(n))}: {describe_capture(None, n, arch)}. SpecForge's default "
                f"{_fmt_ids((1, n // 2 - 1, n - 4))} names those same layers; a draft trained on others accepts "
                "almost nothing, and nothing in the log says so (--training checks it)",
                evidence,
            )


def _served_as_trained(r: _Run) -> None:
    """The algorithm, the depth and the context the server runs the draft at."""
    rc, run, training, draft, add, args_line, steps, gap = (
        r.rc,
        r.run,
        r.training,
        r.draft,
        r.add,
        r.args_line,
        r.steps,
        r.gap,
    )
    algorithm = (run.get(C.SPEC_ALGORITHM) or "").upper()
    if algorithm == "EAGLE" and draft is not None and draft.eagle3:
        add(
            Severity.ERROR,
            "eagle3-draft-as-eagle",
            f"the server runs --speculative-algorithm EAGLE with an EAGLE-3 draft ({draft.architecture}): it "
            "never hands the draft the aux hidden states, so every draft is rejected (accept len 1.00) with no "
            "error" + gap,
            args_line,
            "start the server with --speculative-algorithm EAGLE3",
        )

    depth = (
        training.ttt_length
        if training and training.ttt_length
        else (draft.speculative_tokens if draft else None)
    )
    if depth is not None and steps is not None and steps > depth:
        at_depth = training.predicted_accept_len(depth) if training else None
        more = f"; the training predicts accept len {at_depth:.2f} at {depth} steps" if at_depth else ""
        add(
            Severity.WARNING,
            "steps-beyond-training",
            f"speculative_num_steps {steps} is deeper than the {depth} positions the draft was trained for: "
            f"positions past {depth} were never trained and add cost, not accepted tokens{more}",
            args_line,
            f"start the server with --speculative-num-steps {depth}",
        )

    context = rc.arg_int("context_length") or (
        rc.target.data.get("max_position_embeddings") if rc.target is not None else None
    )
    if isinstance(context, int):
        limit = draft.max_position_embeddings if draft else None
        if limit is not None and context > limit:
            # Info: the log does not say how long the prompts were, and rope scaling may stretch the
            # draft's positions; a judgement, like a draft for a target of another name, not a cause.
            add(
                Severity.INFO,
                "context-beyond-draft",
                f"the server takes contexts up to {context} tokens; the draft's max_position_embeddings is "
                f"{limit}: on longer prompts the draft works past the positions it was built for",
                args_line,
            )
        trained_len = training.max_length if training else None
        if trained_len is not None and context > trained_len:
            add(
                Severity.INFO,
                "context-beyond-training",
                f"the draft was trained on sequences of at most {trained_len} tokens (data.max_length); the "
                f"server takes up to {context}: expect lower acceptance on longer contexts",
                args_line,
            )


def _made_for_this_target(r: _Run) -> None:
    """Whether the draft was made for the target it is served with: its name, width, vocabulary."""
    rc, run, training, draft, add, args_line = r.rc, r.run, r.training, r.draft, r.add, r.args_line
    served_target = rc.args.get("model_path") or run.get(C.MODEL)
    trained_for = (training.target if training else None) or (draft.verifier if draft else None)
    if served_target and trained_for and not _same_model(str(served_target), trained_for):
        add(
            Severity.WARNING,
            "draft-for-another-target",
            f"the draft was trained for {trained_for}; the server's target is {served_target}",
            args_line,
        )
    target = text_config(rc.target)
    for key, code, what in (
        ("hidden_size", "draft-hidden-size-mismatch", "hidden size (the width of the states it reads)"),
        ("vocab_size", "draft-vocab-mismatch", "vocabulary"),
    ):
        want, has = target.get(key), getattr(draft, key) if draft else None
        if isinstance(want, int) and has and has != want:
            add(
                Severity.ERROR,
                code,
                f"the draft's {what} is {has}; the target's is {want}: it was made for another target",
                args_line,
            )

    if draft is not None and rc.draft is not None and rc.draft.folder is not None:
        narrow = draft.draft_vocab_size and draft.vocab_size and draft.draft_vocab_size < draft.vocab_size
        names = weight_names(rc.draft.folder) if narrow else None
        if names is not None and not any(n.rsplit(".", 1)[-1] in VOCAB_MAP_NAMES for n in names):
            add(
                Severity.ERROR,
                "vocab-mapping-missing",
                f"the draft predicts {draft.draft_vocab_size} of the target's {draft.vocab_size} tokens, but its "
                f"weights in {rc.draft.folder} hold no d2t/t2d mapping: its token ids are read as the target's, "
                "and almost nothing is accepted",
                args_line,
            )
    if draft is not None and draft.norm_flags:
        add(
            Severity.INFO,
            "draft-norm-flags",
            f"the draft config sets {', '.join(draft.norm_flags)}: the draft was trained with that normalization; "
            "a server whose EAGLE-3 draft model ignores the flag feeds it other states, with no error",
            args_line,
        )


def _measured(r: _Run) -> None:
    """The served accept length against the training's prediction at the served depth."""
    run, training, add, args_line, steps, predicted = (
        r.run,
        r.training,
        r.add,
        r.args_line,
        r.steps,
        r.predicted,
    )
    served_len = run.get(A.MEAN_ACCEPT_LEN)
    if predicted is not None and served_len is not None:
        share = served_len / predicted
        add(
            Severity.WARNING if share < SERVED_SHARE_WARN else Severity.INFO,
            "accept-below-training",
            f"served accept len {served_len:.2f} is {share:.0%} of the {predicted:.2f} the training evaluation "
            f"predicts at {steps} steps"
            + (
                f" (per-position accuracy {', '.join(f'{a:.2f}' for a in training.per_position_acc or ())})"
                if training
                else ""
            ),
            args_line,
        )
