"""Options several commands share (check, compare, report, tui, follow): expectations and baseline.

Each is an `Annotated` type to put in a command's signature; `expectations_from` turns the values
into an `Expectations` (a bad file or value is an `InputError`: one line, exit 2)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tracelens.analysis.defaults import DEFAULT_STALL_SECONDS
from tracelens.errors import InputError

if TYPE_CHECKING:
    from tracelens.analysis.expectations import Expectations

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
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="The run to compare against, by label (`file.log#N`, as the summary shows). Default: per model, the run without speculative decoding with the most decode lines.",
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


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, option: str) -> int:
    """`4M` -> 4194304; a clear error for anything else."""
    match = _SIZE.match(text)
    if match is None:
        raise InputError(f"{option} wants a size such as 4M or 65536, got {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
    size = int(float(match.group(1)) * scale)
    if size < 1024:
        raise InputError(f"{option} must be at least 1K, got {text!r}")
    return size
