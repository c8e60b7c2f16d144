"""Find a model's `config.json` from the name a log gives it (`model_path`, `speculative_draft_model_path`),
on this machine or on the host a log was followed from, and read small files of a training run.

The name comes from log text, so it is untrusted: it only ever selects a directory in which one file
of a fixed name is read (`config.json`, or a training file the user named), size-limited, after
resolving symlinks, and only when the resolved file lies under the directory it was looked up in (for
the Hugging Face cache: under the repository's cache folder, where a snapshot's files are links to
its `blobs/`). Over ssh every argument that came from a log is quoted by `shlex.quote`; the rest of the
remote script is fixed text.

Where a name is looked up, in order:
- a directory of that name (a local path, `~/` expanded);
- the Hugging Face hub cache, for a repository id `ORG/NAME`: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
  `~/.cache/huggingface/hub`, folder `models--ORG--NAME/snapshots/<commit>/`, the commit named by
  `refs/<revision>` (the revision itself when it is a commit), `refs/main` without one, else the
  newest snapshot (huggingface_hub's cache layout, docs "Understand caching");
- the ModelScope cache: `$MODELSCOPE_CACHE`, else `~/.cache/modelscope/hub`, as `models/ORG/NAME` or
  `ORG/NAME` (older releases), with a `.` in the name also written `___` (ModelScope's file-system
  escape, as in `Qwen2___5-7B`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tracelens.sources.ssh import RemoteTarget, ssh_base_argv

# A config.json is a few KiB (a large one, with a quantization table, some hundreds); a recipe or an
# evaluation record less. Anything bigger is not what we look for.
MAX_BYTES = 1 << 20
REMOTE_TIMEOUT = 20.0
# What a repository id and a revision may look like before they become part of a path.
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_FOUND_MARK = "tracelens-found "


@dataclass(frozen=True)
class Found:
    """A file's text and where it was read, in words a verdict can show."""

    text: str
    where: str
    folder: Path | None = None  # the folder it was found in, on this machine (None: remote)
    file: str = ""  # the file, as a user names it to change it (`HOST:/m/config.json` when remote)


@dataclass(frozen=True)
class _Candidate:
    """A directory to read the file from, the directory the resolved file must stay under, and what
    kind of place it is."""

    folder: Path
    root: Path
    how: str


def read_limited(path: Path, root: Path, limit: int = MAX_BYTES) -> str | None:
    """The text of ``path`` when it resolves to a regular file under ``root`` (resolved) and is no
    bigger than ``limit``; None otherwise (missing, a link out of ``root``, too big, not UTF-8)."""
    try:
        real, top = path.resolve(strict=True), root.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if top not in real.parents or not real.is_file():
        return None
    try:
        with real.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _clean(name: str | None) -> str | None:
    """The name as a server printed it, None when it names nothing (unset, `None`, control bytes)."""
    if name is None:
        return None
    name = name.strip().strip("'\"")
    if not name or name == "None" or any(ord(c) < 32 for c in name):
        return None
    return name


def _hub_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    roots = []
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            roots.append(Path(env[key]).expanduser())
    if env.get("HF_HOME"):
        roots.append(Path(env["HF_HOME"]).expanduser() / "hub")
    roots.append(home / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(roots))


def _snapshot(repo: Path, revision: str | None) -> Path | None:
    """The snapshot folder of a cached repository for ``revision`` (see the module's docstring)."""
    snapshots = repo / "snapshots"
    if revision is not None:
        if not _REVISION.match(revision) or ".." in revision:
            return None
        ref = read_limited(repo / "refs" / revision, repo, 256)
        commit = ref.strip() if ref else revision
        return snapshots / commit if _COMMIT.match(commit) or ref is None else None
    main = read_limited(repo / "refs" / "main", repo, 256)
    if main and _COMMIT.match(main.strip()):
        return snapshots / main.strip()
    try:
        folders = [p for p in snapshots.iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(folders, key=lambda p: p.stat().st_mtime, default=None)


def _modelscope_names(repo_id: str) -> list[str]:
    org, name = repo_id.split("/", 1)
    return list(dict.fromkeys([f"{org}/{name}", f"{org}/{name.replace('.', '___')}"]))


def _candidates(
    name: str, revision: str | None, env: Mapping[str, str], home: Path, hubs: tuple[Path, ...] = ()
) -> list[_Candidate]:
    out = []
    local = Path(name).expanduser()
    if local.is_dir():
        out.append(_Candidate(local, local, "local path"))
    if _REPO_ID.match(name) and ".." not in name:
        org, repo_name = name.split("/", 1)
        for hub in [*hubs, *_hub_roots(env, home)]:
            repo = hub / f"models--{org}--{repo_name}"
            snapshot = _snapshot(repo, revision) if repo.is_dir() else None
            if snapshot is not None:
                out.append(_Candidate(snapshot, repo, "Hugging Face cache"))
        scope = Path(env["MODELSCOPE_CACHE"]).expanduser() if env.get("MODELSCOPE_CACHE") else None
        for base in [scope, home / ".cache" / "modelscope" / "hub"]:
            if base is None:
                continue
            for sub in ("models", ""):
                for escaped in _modelscope_names(name):
                    folder = base / sub / escaped if sub else base / escaped
                    if folder.is_dir():
                        out.append(_Candidate(folder, folder, "ModelScope cache"))
    return out


def find_local(
    name: str | None,
    revision: str | None = None,
    filename: str = "config.json",
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    hubs: tuple[str, ...] = (),
) -> Found | None:
    """``filename`` of the model a log calls ``name`` (at ``revision``), read on this machine;
    ``hubs``: more hub-cache folders to look in first (a server's `download_dir`, which SGLang hands
    huggingface_hub as its cache folder)."""
    name, revision = _clean(name), _clean(revision)
    if name is None or "/" in filename or filename.startswith("."):
        return None
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    extra = tuple(Path(h).expanduser() for h in (_clean(h) for h in hubs) if h is not None)
    for candidate in _candidates(name, revision, env, home, extra):
        text = read_limited(candidate.folder / filename, candidate.root)
        if text is not None:
            file = str(candidate.folder / filename)
            return Found(text, f"{candidate.how} {file}", candidate.folder, file)
    return None


def remote_script(name: str, revision: str | None, filename: str = "config.json") -> str:
    """The shell text that looks ``name`` up on a remote host the way `find_local` does here (local
    path, Hugging Face cache, ModelScope cache) and prints a found mark, the file's path, then at most
    `MAX_BYTES` of it. Every part taken from a log is quoted; the remote `$HOME` and cache variables
    are the remote user's."""
    q = shlex.quote
    file = q(filename)

    def attempt(folder: str, root: str, how: str) -> str:
        # The resolved file must lie under the resolved root, as `read_limited` checks here.
        found = q(_FOUND_MARK + how)
        return (
            f"if d=$(realpath -e -- {folder} 2>/dev/null) && r=$(realpath -e -- {root} 2>/dev/null) && "
            f'f=$(realpath -e -- "$d"/{file} 2>/dev/null) && [ -f "$f" ] && '
            'case "$f" in "$r"/*) true;; *) false;; esac; then '
            f'printf \'%s\\t%s\\n\' {found} "$f"; head -c {MAX_BYTES + 1} -- "$f"; exit 0; fi; '
        )

    local = '"$HOME"/' + q(name[2:]) if name.startswith("~/") else q(name)
    parts = [attempt(local, local, "local path")]
    if _REPO_ID.match(name) and ".." not in name:
        org, repo_name = name.split("/", 1)
        parts.insert(
            0,
            'hub="${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}"; '
            'ms="${MODELSCOPE_CACHE:-$HOME/.cache/modelscope/hub}"; ',
        )
        repo = '"$hub"/' + q(f"models--{org}--{repo_name}")
        if revision is not None and _REVISION.match(revision) and ".." not in revision:
            rev = q(revision)
            pick = f"c=$(head -c 256 -- {repo}/refs/{rev} 2>/dev/null || printf %s {rev}); "
        else:
            pick = (
                f"c=$(head -c 256 -- {repo}/refs/main 2>/dev/null || "
                f"ls -t -- {repo}/snapshots 2>/dev/null | head -n 1); "
            )
        # Only a commit's hash names a snapshot folder: the refs file's text is not trusted either.
        parts.append(
            pick
            + 'case "$c" in *[!0-9a-f]*|"") c=none;; esac; '
            + attempt(f'{repo}/snapshots/"$c"', repo, "Hugging Face cache")
        )
        for escaped in _modelscope_names(name):
            for sub in ("models/", ""):
                folder = '"$ms"/' + q(sub + escaped)
                parts.append(attempt(folder, folder, "ModelScope cache"))
    return "".join(parts) + "exit 3"


def find_remote(
    target: RemoteTarget,
    name: str | None,
    revision: str | None = None,
    filename: str = "config.json",
    ssh: str = "ssh",
    extra_options: tuple[str, ...] = (),
) -> Found | None:
    """`find_local` on the host of ``target`` (its path is not used), through the same ssh settings the
    follower uses; None when nothing is found, the host cannot be reached, or the file is too big."""
    name, revision = _clean(name), _clean(revision)
    if name is None or "/" in filename or filename.startswith("."):
        return None
    argv = [*ssh_base_argv(target, ssh, extra_options), remote_script(name, revision, filename)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=REMOTE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    # What a login script prints comes before the mark; the mark's line says where the file is.
    at = done.stdout.find(_FOUND_MARK.encode())
    if at < 0 or b"\n" not in done.stdout[at:]:
        return None
    head, data = done.stdout[at + len(_FOUND_MARK) :].split(b"\n", 1)
    how, _, path = head.decode("utf-8", "replace").partition("\t")
    if len(data) > MAX_BYTES:
        return None
    try:
        # `path HOST:/m/config.json`, `Hugging Face cache HOST:/...`: the host's, not this machine's
        file = f"{target.host}:{path}"
        return Found(data.decode("utf-8"), f"{how.replace('local path', 'path')} {file}", None, file)
    except UnicodeDecodeError:
        return None


# The weight names that carry an EAGLE-3 draft's vocabulary mapping (draft token -> target token and
# back): SGLang's llama_eagle3 loads `d2t` as the hot-token map; SpecForge and speculators save both.
VOCAB_MAP_NAMES = ("d2t", "t2d")


def weight_names(folder: Path) -> list[str] | None:
    """The tensor names of the safetensors weights in ``folder``: from `model.safetensors.index.json`,
    else from `model.safetensors`'s header (its first 8 bytes give the header's length, a JSON object
    read only when under `MAX_BYTES`); None when neither is readable. Nothing else of a weight file
    is read."""
    index = read_limited(folder / "model.safetensors.index.json", folder)
    if index is not None:
        try:
            mapping = json.loads(index).get("weight_map")
        except (ValueError, AttributeError):
            return None
        return list(mapping) if isinstance(mapping, dict) else None
    weights = folder / "model.safetensors"
    try:
        real, top = weights.resolve(strict=True), folder.resolve(strict=True)
        if top not in real.parents or not real.is_file():
            return None
        with real.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            if not 0 < size <= MAX_BYTES:
                return None
            header = json.loads(handle.read(size))
    except (OSError, RuntimeError, ValueError):
        return None
    return [name for name in header if name != "__metadata__"] if isinstance(header, dict) else None
