"""Expectations files a user may get wrong: not UTF-8, config.json values of the wrong type, counts of
zero or less (which the flags refuse, and which would judge a healthy run broken). Each is one line
and exit 2, naming the file and the value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
LOG = SAMPLE_LOGS / "era_2024_gpu.log"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run(
        [*TRACELENS, "check", "-q", *args, str(LOG)], capture_output=True, text=True, env=env, timeout=300
    )


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("tracelens: error: "), done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_toml_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "expect.toml"
    path.write_bytes(b'[expect]\narchitecture = "\xff\xfe"\n')
    _one_line(_check("--expectations", str(path)), str(path), "TOML")


@pytest.mark.parametrize("key", ["aux", "hidden_size", "num_layers"])
@pytest.mark.parametrize("value", [0, -4])
def test_a_toml_count_below_one(tmp_path: Path, key: str, value: int) -> None:
    path = tmp_path / "expect.toml"
    path.write_text(f"[expect]\n{key} = {value}\n")
    _one_line(_check("--expectations", str(path)), key, str(value))


@pytest.mark.parametrize(
    ("option", "config", "words"),
    [
        ("--target-config", {"hidden_size": "7168"}, ["hidden_size", "'7168'"]),
        ("--target-config", {"hidden_size": 0}, ["hidden_size", "0"]),
        ("--target-config", {"num_hidden_layers": -1}, ["num_hidden_layers", "-1"]),
        ("--target-config", {"architectures": "LlamaForCausalLM"}, ["architectures"]),
        ("--target-config", [1, 2], ["JSON object"]),
        ("--draft-config", {"eagle_config": [1]}, ["eagle_config"]),
        (
            "--draft-config",
            {"eagle_aux_hidden_state_layer_ids": ["a", 2]},
            ["eagle_aux_hidden_state_layer_ids"],
        ),
        ("--draft-config", {"eagle_aux_hidden_state_layer_ids": 3}, ["eagle_aux_hidden_state_layer_ids"]),
    ],
)
def test_a_config_json_of_the_wrong_type(
    tmp_path: Path, option: str, config: object, words: list[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _one_line(_check(option, str(path)), str(path), *words)


def test_a_config_json_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"hidden_size": "\xff"}')
    _one_line(_check("--target-config", str(path)), str(path))
