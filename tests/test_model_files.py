"""Finding a model's config.json from the name a log gives it: a local folder, a Hugging Face cache laid
out as huggingface_hub lays it out (snapshots linking to blobs, refs naming commits), the ModelScope
cache, and the same over ssh against the real sshd the live tests start. Names come from log text: a
link out of the folder, a big file and shell metacharacters are refused or quoted."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
from pathlib import Path

import pytest
from test_live_remote import sshd  # noqa: F401  (the real sshd fixture)
from training_support import DEEPSEEK_V3, v3_log, write_json

from tracelens.analysis.training import TrainingInputs
from tracelens.engine.ingest import analyze
from tracelens.sources.model_files import MAX_BYTES, find_local, find_remote, remote_script
from tracelens.sources.ssh import Backoff, RemoteTarget

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def hf_cache(hub: Path, repo: str, files: dict[str, dict[str, str]], refs: dict[str, str]) -> Path:
    """A hub cache folder for ``repo``: each commit's files are links to blobs, as huggingface_hub
    stores them; ``refs`` maps a branch or tag to its commit."""
    folder = hub / f"models--{repo.replace('/', '--')}"
    for commit, content in files.items():
        for name, text in content.items():
            blob = folder / "blobs" / f"{commit[:8]}-{name}"
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_text(text)
            link = folder / "snapshots" / commit / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
    for ref, commit in refs.items():
        (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return folder


def config(layers: int) -> str:
    return json.dumps({**DEEPSEEK_V3, "num_hidden_layers": layers})


def test_hf_cache_snapshot_by_revision(tmp_path: Path) -> None:
    hub = tmp_path / "hf" / "hub"
    hf_cache(
        hub,
        "deepseek-ai/DeepSeek-V3",
        {COMMIT_A: {"config.json": config(61)}, COMMIT_B: {"config.json": config(27)}},
        {"main": COMMIT_A, "v2-lite": COMMIT_B},
    )
    env = {"HF_HOME": str(tmp_path / "hf")}
    found = find_local("deepseek-ai/DeepSeek-V3", env=env, home=tmp_path)
    assert found is not None and json.loads(found.text)["num_hidden_layers"] == 61
    assert (
        found.where
        == f"Hugging Face cache {hub}/models--deepseek-ai--DeepSeek-V3/snapshots/{COMMIT_A}/config.json"
    )
    by_branch = find_local("deepseek-ai/DeepSeek-V3", "v2-lite", env=env, home=tmp_path)
    assert by_branch is not None and json.loads(by_branch.text)["num_hidden_layers"] == 27
    by_commit = find_local("deepseek-ai/DeepSeek-V3", COMMIT_B, env=env, home=tmp_path)
    assert by_commit is not None and by_commit.text == by_branch.text
    assert find_local("deepseek-ai/DeepSeek-V3", "no-such-branch", env=env, home=tmp_path) is None
    # HF_HUB_CACHE names the hub folder itself; the default is ~/.cache/huggingface/hub
    assert find_local("deepseek-ai/DeepSeek-V3", env={"HF_HUB_CACHE": str(hub)}, home=tmp_path) is not None
    assert find_local("deepseek-ai/DeepSeek-V3", env={}, home=tmp_path) is None
    # a server's download_dir is a hub cache folder of its own (SGLang hands it to huggingface_hub)
    assert find_local("deepseek-ai/DeepSeek-V3", env={}, home=tmp_path, hubs=(str(hub),)) is not None


def test_a_log_naming_a_hub_model_finds_its_cached_configs(tmp_path: Path) -> None:
    hub = tmp_path / "home" / ".cache" / "huggingface" / "hub"
    hf_cache(hub, "deepseek-ai/DeepSeek-V3", {COMMIT_A: {"config.json": config(61)}}, {"main": COMMIT_A})
    draft = json.loads(
        (
            Path(__file__).parent.parent.parent
            / "shared/corpus/specforge/configs/deepseek-v3-671b-eagle3.json"
        ).read_text()
    )
    draft["eagle_config"].pop("eagle_aux_hidden_state_layer_ids")
    hf_cache(hub, "me/DeepSeek-V3-EAGLE3", {COMMIT_B: {"config.json": json.dumps(draft)}}, {})
    log = v3_log(tmp_path / "serve.log", "deepseek-ai/DeepSeek-V3", "me/DeepSeek-V3-EAGLE3")
    old = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(hub)
    try:
        found = analyze([log], training=TrainingInputs())
    finally:
        if old is None:
            del os.environ["HF_HUB_CACHE"]
        else:
            os.environ["HF_HUB_CACHE"] = old
    (read,) = [f for f in found.findings if f.code == "configs-read"]
    assert (
        f"target config from Hugging Face cache {hub}/models--deepseek-ai--DeepSeek-V3/snapshots/{COMMIT_A}"
        in read.message
    )
    assert "(61 layers)" in read.message and "(aux ids none)" in read.message
    # No refs/main for the draft: the newest snapshot. Its config lists no ids: the fallback is named.
    assert "draft-ids-fallback" in {f.code for f in found.findings}
    assert found.expectations.num_layers == 61 and found.expectations.expect_aux == 3


def test_modelscope_cache_with_its_escaped_dots(tmp_path: Path) -> None:
    folder = tmp_path / ".cache" / "modelscope" / "hub" / "models" / "Qwen" / "Qwen2___5-7B-Instruct"
    write_json(folder / "config.json", {"num_hidden_layers": 28})
    found = find_local("Qwen/Qwen2.5-7B-Instruct", env={}, home=tmp_path)
    assert found is not None and found.where.startswith("ModelScope cache ")


def test_untrusted_names_read_nothing_outside_the_named_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "x"}')
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").symlink_to(secret)
    assert find_local(str(model), env={}, home=tmp_path) is None  # a link out of the folder
    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text("{" + " " * MAX_BYTES + "}")
    assert find_local(str(big), env={}, home=tmp_path) is None  # over the size limit
    assert (
        find_local(str(tmp_path / "model/../model"), filename="../secret.json", env={}, home=tmp_path) is None
    )
    assert find_local("org/../../etc", env={}, home=tmp_path) is None
    assert find_local("None", env={}, home=tmp_path) is None
    # A hub cache whose refs file names something else than a commit is not followed.
    hub = tmp_path / "hub"
    hf_cache(hub, "a/b", {COMMIT_A: {"config.json": "{}"}}, {"main": "../../../secret"})
    assert find_local("a/b", "main", env={"HF_HUB_CACHE": str(hub)}, home=tmp_path) is None


@pytest.mark.timeout(120)
def test_configs_found_over_ssh_on_the_followed_host(sshd: dict, tmp_path: Path) -> None:  # noqa: F811
    target = RemoteTarget("127.0.0.1", "/var/log/x.log", getpass.getuser(), sshd["port"])
    # A folder name full of shell metacharacters: quoted, never run.
    odd = tmp_path / "m o'd;$(touch pwned)`touch pwned2`"
    write_json(odd / "config.json", {"num_hidden_layers": 61, "hidden_size": 7168})
    found = find_remote(target, str(odd), extra_options=sshd["options"])
    assert found is not None and json.loads(found.text)["num_hidden_layers"] == 61
    assert found.where == f"path 127.0.0.1:{odd}/config.json"
    assert not list(tmp_path.glob("pwned*")) and not list(Path.home().glob("pwned*"))
    # The same refusals as here: a link out of the folder, a file over the limit, nothing there.
    (tmp_path / "secret").write_text("{}")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "config.json").symlink_to(tmp_path / "secret")
    assert find_remote(target, str(linked), extra_options=sshd["options"]) is None
    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text("{" + " " * MAX_BYTES + "}")
    assert find_remote(target, str(big), extra_options=sshd["options"]) is None
    assert find_remote(target, str(tmp_path / "absent"), extra_options=sshd["options"]) is None
    # The hub cache of the remote user, through the remote's own HF_HUB_CACHE: not set here, so the
    # default under the remote $HOME, which holds no such repository.
    assert find_remote(target, "nobody-org/no-such-model", extra_options=sshd["options"]) is None


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_remote_script_reads_the_hub_cache_as_find_local_does(tmp_path: Path, shell: str) -> None:
    # The script ssh runs, run here by the shells a remote login may have, with the remote's variables.
    hub = tmp_path / "hub"
    hf_cache(
        hub,
        "deepseek-ai/DeepSeek-V3",
        {COMMIT_A: {"config.json": config(61)}, COMMIT_B: {"config.json": config(27)}},
        {"main": COMMIT_A, "lite": COMMIT_B},
    )
    write_json(
        tmp_path / ".cache/modelscope/hub/models/Qwen/Qwen2___5-7B/config.json", {"num_hidden_layers": 28}
    )

    def remote(name: str, revision: str | None = None) -> tuple[str, str] | None:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "HF_HUB_CACHE": str(hub)}
        done = subprocess.run(
            [shell, "-c", remote_script(name, revision)], capture_output=True, env=env, timeout=30
        )
        if done.returncode != 0:
            return None
        head, body = done.stdout.decode().split("\n", 1)
        return head, body

    main = remote("deepseek-ai/DeepSeek-V3")
    assert main is not None and json.loads(main[1])["num_hidden_layers"] == 61
    assert (
        main[0]
        == f"tracelens-found Hugging Face cache\t{hub.resolve()}/models--deepseek-ai--DeepSeek-V3/blobs/aaaaaaaa-config.json"
    )
    lite = remote("deepseek-ai/DeepSeek-V3", "lite")
    assert lite is not None and json.loads(lite[1])["num_hidden_layers"] == 27
    assert remote("deepseek-ai/DeepSeek-V3", "nope") is None
    scope = remote("Qwen/Qwen2.5-7B")
    assert scope is not None and scope[0].startswith("tracelens-found ModelScope cache\t")


@pytest.mark.timeout(180)
def test_a_log_followed_over_ssh_has_its_configs_read_on_that_host(sshd: dict, tmp_path: Path) -> None:  # noqa: F811
    from live_support import ssh_session, wait_for

    target = write_json(tmp_path / "models" / "DeepSeek-V3" / "config.json", DEEPSEEK_V3).parent
    draft = tmp_path / "models" / "draft"
    write_json(draft / "config.json", {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 7168})
    log = v3_log(tmp_path / "serve.log", str(target), str(draft))
    session = ssh_session(sshd, log, 0.2, Backoff(first=0.1, limit=0.5), training=TrainingInputs())
    session.start()
    try:

        def read() -> list[str]:
            return [f.message for f in session.findings if f.code == "configs-read"]

        assert wait_for(lambda: bool(read()), timeout=120), [f.code for f in session.findings]
        (message,) = read()
        assert f"target config from path 127.0.0.1:{target}/config.json (61 layers)" in message
        assert f"draft config from path 127.0.0.1:{draft}/config.json (aux ids none)" in message
    finally:
        session.stop()
