"""The target's and the draft's config.json of each speculative run, found from its server args (the
files the user named win), and the expectations they imply.

Finding and reading the files is `sources.model_files`' (untrusted names, size limits, no link out of
the folder looked up); here a run's server args are turned into names, and the parsed configs into
facts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from tracelens.analysis.expectations import Expectations
from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.training import DraftFacts, TrainingInputs, draft_facts
from tracelens.sources.model_files import Found, find_local, find_remote, read_limited
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

# The server args a run's configs and the gap's causes are read from.
ARG_KEYS = (
    "model_path",
    "revision",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_draft_model_revision",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "context_length",
    "download_dir",
)


@dataclass(frozen=True)
class Config:
    """A parsed config.json and where it came from (in words: `local path /m/config.json`)."""

    data: dict[str, Any]
    where: str
    folder: Path | None = None  # the folder it was found in on this machine (its weights are beside it)
    file: str = ""  # the file to change, as a user names it


@dataclass
class RunConfigs:
    """One speculative run's server args (the `ARG_KEYS` it printed, `None` as None), the line that
    printed them, and its configs."""

    args: dict[str, str | None]
    args_line: int | None
    target: Config | None = None
    draft: Config | None = None
    looked_up: list[str] = field(default_factory=list)  # names looked up and not found

    def arg_int(self, key: str) -> int | None:
        value = self.args.get(key)
        return int(value) if value is not None and value.lstrip("-").isdigit() else None

    @property
    def num_layers(self) -> int | None:
        return text_config(self.target).get("num_hidden_layers") if self.target else None

    @property
    def draft_facts(self) -> DraftFacts | None:
        return draft_facts(self.draft.data) if self.draft else None


def text_config(config: Config | None) -> dict[str, Any]:
    """A target's language-model config: multimodal targets keep it under `text_config`."""
    if config is None:
        return {}
    inner = config.data.get("text_config")
    return inner if isinstance(inner, dict) and "num_hidden_layers" in inner else config.data


def _parse(found: Found | None) -> Config | None:
    if found is None:
        return None
    try:
        data = json.loads(found.text)
    except ValueError:
        return None
    return Config(data, found.where, found.folder, found.file) if isinstance(data, dict) else None


def server_args_of(
    tables: Tables, keys: list[tuple[str, int]]
) -> dict[tuple[str, int], tuple[dict[str, str | None], int | None]]:
    """The `ARG_KEYS` each run printed in its server args, and the line they are on."""
    rows = tables[T.SERVER_ARGS].filter(pl.col(C.KEY).is_in(list(ARG_KEYS)))
    out: dict[tuple[str, int], tuple[dict[str, str | None], int | None]] = {k: ({}, None) for k in keys}
    for source, run, line, key, value in rows.select(*RUN_KEY, C.LINE_NO, C.KEY, C.VALUE).iter_rows():
        if (source, run) not in out:
            continue
        args, first = out[(source, run)]
        text = None if value is None or value.strip() in ("None", "") else value.strip().strip("'\"")
        args.setdefault(key, text)
        out[(source, run)] = (args, first if first is not None else line)
    return out


def _given(path: Path | None) -> Config | None:
    if path is None:
        return None
    text = read_limited(path, path.parent)
    return _parse(Found(text, str(path), path.parent, str(path)) if text is not None else None)


def run_configs(
    tables: Tables, runs: pl.DataFrame, inputs: TrainingInputs
) -> dict[tuple[str, int], RunConfigs]:
    """`RunConfigs` of every speculative run of ``runs``."""
    spec = runs.filter(pl.col(C.SPEC_ALGORITHM).is_not_null())
    keys = [(s, int(r)) for s, r in spec.select(RUN_KEY).iter_rows()]
    printed = server_args_of(tables, keys)
    given_target, given_draft = _given(inputs.target_config), _given(inputs.draft_config)
    if given_target is not None:
        given_target = replace(given_target, where=f"--target-config {inputs.target_config}")
    if given_draft is not None:
        given_draft = replace(given_draft, where=f"--draft-config {inputs.draft_config}")
    memo = inputs.found

    def look(name: str | None, revision: str | None, download_dir: str | None) -> Config | None:
        if not inputs.discover or name is None:
            return None
        if (name, revision, download_dir) not in memo:
            if inputs.remote is not None:
                found = find_remote(inputs.remote, name, revision, extra_options=inputs.remote_options)
            else:
                found = find_local(name, revision, hubs=(download_dir,) if download_dir else ())
            memo[(name, revision, download_dir)] = _parse(found)
        return memo[(name, revision, download_dir)]

    out = {}
    for key in keys:
        args, line = printed[key]
        configs = RunConfigs(args, line)
        hub = args.get("download_dir")
        configs.target = given_target or look(args.get("model_path"), args.get("revision"), hub)
        configs.draft = given_draft or look(
            args.get("speculative_draft_model_path"), args.get("speculative_draft_model_revision"), hub
        )
        for role, name, config in (
            ("target", args.get("model_path"), configs.target),
            ("draft", args.get("speculative_draft_model_path"), configs.draft),
        ):
            if config is None and name is not None and inputs.discover:
                configs.looked_up.append(f"{role} {name}")
        out[key] = configs
    return out


def configs_expectations(
    expect: Expectations, configs: dict[tuple[str, int], RunConfigs], inputs: TrainingInputs
) -> Expectations:
    """``expect`` with what the runs' configs add where it says nothing (the target's layer count, width
    and architecture, how many aux states the draft reads), and the layer ids the training says the draft
    was trained on. Only when every speculative run has the same configs: the expectations hold for
    every run at once."""
    facts = {
        (
            json.dumps(c.target.data, sort_keys=True) if c.target else None,
            json.dumps(c.draft.data, sort_keys=True) if c.draft else None,
        )
        for c in configs.values()
    }
    if len(facts) != 1:
        return _trained(expect, inputs)
    one = next(iter(configs.values()))
    text = text_config(one.target)
    archs = (
        text.get("architectures") or (one.target.data.get("architectures") if one.target else None) or [None]
    )
    found = Expectations(
        hidden_size=text.get("hidden_size"),
        num_layers=text.get("num_hidden_layers"),
        architecture=archs[0] if isinstance(archs, list) and archs else None,
    )
    draft = one.draft_facts
    if draft is not None and draft.eagle3:
        # How many aux states the draft reads: as many as its config lists, else the three both SGLang's
        # default list and SpecForge's trainer (which refuses any other count) give an EAGLE-3 draft.
        found = found.merged(Expectations(expect_aux=len(draft.aux_ids) if draft.aux_ids else 3))
    out = found.merged(expect)
    training = inputs.training
    trained = training.trained_ids(out.num_layers) if training else None
    if trained is not None:
        # What the draft was trained on is the training's to say. A draft config found from the log is
        # only what the server was told (the users' story is a config edited by mistake), so its ids
        # never become the expectation.
        out = out.merged(Expectations(aux_layer_ids=trained[0], expect_aux=len(trained[0])))
    return out


def _trained(expect: Expectations, inputs: TrainingInputs) -> Expectations:
    trained = inputs.training.trained_ids(expect.num_layers) if inputs.training else None
    return expect if trained is None else expect.merged(Expectations(aux_layer_ids=trained[0]))
