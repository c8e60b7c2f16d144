"""Options several commands share (check, compare, report, tui, follow): expectations and baseline.

Each is an `Annotated` type to put in a command's signature; `expectations_from` turns the values
into an `Expectations` (a bad file or value is an `InputError`: one line, exit 2)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tracelens.analysis.defaults import DEFAULT_STALL_SECONDS
from tracelens.errors import InputError

if TYPE_CHECKING:
    from tracelens.analysis.expectations import Expectations
    from tracelens.analysis.training import TrainingInputs

_EXPECT = "Expectations (EAGLE-3 capture)"

DraftConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--draft-config",
        help="The draft model's config.json: its eagle_config.eagle_aux_hidden_state_layer_ids say which layers it was trained on.",
        rich_help_panel=_EXPECT,
    ),
]
TargetConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--target-config",
        help="The target model's config.json: num_hidden_layers, hidden_size and architectures.",
        rich_help_panel=_EXPECT,
    ),
]
ExpectFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--expectations",
        help="A TOML file with an [expect] table: aux, hidden_size, embed_capture, aux_layer_ids, num_layers, draft_config, target_config.",
        rich_help_panel=_EXPECT,
    ),
]
ExpectAuxOpt = Annotated[
    int | None,
    typer.Option(
        "--expect-aux", min=1, help="How many aux hidden states the draft consumes.", rich_help_panel=_EXPECT
    ),
]
HiddenSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--hidden-size", min=1, help="The target's hidden size (e.g. 7168).", rich_help_panel=_EXPECT
    ),
]
EmbedCaptureOpt = Annotated[
    str | None,
    typer.Option(
        "--embed-capture",
        help="yes: the draft was trained with an embedding capture (layer id -1); no: it was not.",
        rich_help_panel=_EXPECT,
    ),
]
TrainingOpt = Annotated[
    Path | None,
    typer.Option(
        "--training",
        help="What the draft was trained on: a SpecForge recipe (.yaml), a draft config.json (SpecForge or speculators format), the trainer's {run_id}.best_meta.json, or a folder holding them. The verdict compares the served runs with it.",
        rich_help_panel=_EXPECT,
    ),
]
NoDiscoverOpt = Annotated[
    bool,
    typer.Option(
        "--no-discover",
        help="Do not look up the target's and the draft's config.json from the logs' model paths (local path, Hugging Face and ModelScope caches).",
        rich_help_panel=_EXPECT,
    ),
]
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="The run to compare against, by label as the summary shows it (`server.log#N`; `a/server.log#N` when two sources share a file name). Default: per model, the run without speculative decoding with the most decode lines.",
    ),
]
StallOpt = Annotated[
    float,
    typer.Option("--stall-seconds", min=1, help="Silence during start-up that counts as a stall."),
]
DEFAULT_STALL = DEFAULT_STALL_SECONDS


def date_option(date: str | None) -> dt.date | None:
    """The value of `--date` (YYYY-MM-DD), for logs whose prefix has only a time."""
    if date is None:
        return None
    try:
        day = dt.date.fromisoformat(date)
    except ValueError as exc:
        raise InputError(f"--date wants YYYY-MM-DD, got {date!r}") from exc
    # A log's times may run on past its first day (and a year-less one into the next year): keep a
    # year's room on both sides of what dates can hold.
    if not 1 < day.year < dt.MAXYEAR:
        raise InputError(f"--date wants a year from 2 to {dt.MAXYEAR - 1}, got {date!r}")
    return day


def expectations_from(
    draft_config: Path | None = None,
    target_config: Path | None = None,
    expectations_file: Path | None = None,
    expect_aux: int | None = None,
    hidden_size: int | None = None,
    embed_capture: str | None = None,
) -> Expectations:
    """Merge the sources, later ones winning: TOML file, then configs, then explicit flags."""
    from tracelens.analysis.expectations import (
        Expectations,
        from_draft_config,
        from_target_config,
        from_toml,
    )

    out = Expectations()
    if expectations_file is not None:
        out = out.merged(from_toml(expectations_file))
    if target_config is not None:
        out = out.merged(from_target_config(target_config))
    if draft_config is not None:
        out = out.merged(from_draft_config(draft_config))
    embed = None
    if embed_capture is not None:
        answers = {"yes": True, "no": False}
        if embed_capture.lower() not in answers:
            raise InputError(f"--embed-capture wants yes or no, got {embed_capture!r}")
        embed = answers[embed_capture.lower()]
    return out.merged(Expectations(expect_aux=expect_aux, hidden_size=hidden_size, embed_capture=embed))


def training_from(
    training: Path | None, no_discover: bool, draft_config: Path | None, target_config: Path | None
) -> TrainingInputs:
    """The training and config look-up the analysis is given (a bad --training is an `InputError`)."""
    from tracelens.analysis.training import TrainingInputs, load_training

    return TrainingInputs(
        training=load_training(training) if training is not None else None,
        discover=not no_discover,
        draft_config=draft_config,
        target_config=target_config,
    )
