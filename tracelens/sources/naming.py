"""A source's short name: the shortest end of its name that no other source of the same command shares.

Every host's log is called `server.log`, so a file name alone does not tell sources apart. Of the
sources a command reads, each is named by the fewest trailing path parts that only it ends with:

    /logs/a/server.log  /logs/b/server.log         a/server.log      b/server.log
    logs.tar.gz:host1/server.log  (:host2/...)     host1/server.log  host2/server.log
    gpu-07:/var/log/server.log  gpu-08:/var/...    gpu-07:server.log gpu-08:server.log
    one source                                     server.log

A remote source keeps its host in front (`gpu-07:`), and its user and port only when they are what
tells two sources apart; an archive member its path inside the archive, the archive's own name only
when two archives hold the same member. A name with nothing to cut (`stdin`, `cmd:...`) stays whole,
and so does any name whose every shorter form another source could also be called.

The names are those of the `source` column (`Input.source_name`, the live session's source labels),
read here as text: the live session and the batch commands name a source the same way, so a run has
one label in `check`, `compare`, the report, `follow` and the TUI (`run_label`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from urllib.parse import urlsplit

from tracelens.sources.inputs import ARCHIVE_SUFFIXES

_WHOLE = ("cmd:", "<")  # names with no path to cut: a command's output, parse_text's `<text>`
_REPLAY = "replay:"


def run_label(name: str, run: int) -> str:
    """A run's label: its source's short name and its number, `a/server.log#2`."""
    return f"{name}#{run}"


def _parts(path: str) -> list[str]:
    """The path's parts, last one last; `.` and empty parts dropped (`./a//b` is `a/b`)."""
    return [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]


def _suffixes(head: str, parts: list[str], joiners: list[str]) -> list[str]:
    """``head`` + the last 1, 2, ... of ``parts``, each joined to the next by its joiner."""
    out = []
    text = ""
    for i in range(len(parts) - 1, -1, -1):
        text = parts[i] + (joiners[i] if text else "") + text
        out.append(head + text)
    return out


def _archive_split(name: str) -> tuple[str, str] | None:
    """(archive, member) of `archive.tar.gz:member`: the first colon after an archive's suffix."""
    at = name.find(":")
    while at != -1:
        if name[:at].lower().endswith(ARCHIVE_SUFFIXES):
            return name[:at], name[at + 1 :]
        at = name.find(":", at + 1)
    return None


def _remote(name: str) -> tuple[str, str, str] | None:
    """(host, user@host or host, remote path) of `[user@]host:path` or `ssh://[user@]host[:port]/path`."""
    if name.startswith("ssh://"):
        try:
            url = urlsplit(name)
        except ValueError:
            return None
        if not url.hostname:
            return None
        who = f"{url.username}@{url.hostname}" if url.username else url.hostname
        return url.hostname, who, url.path
    host, sep, path = name.partition(":")
    if not sep or not host or not path or "/" in host:
        return None
    return host.rpartition("@")[2], host, path


def candidates(name: str) -> list[str]:
    """The names ``name`` may be shown by, shortest first, itself last."""
    if name.startswith(_WHOLE) or (":" not in name and "/" not in name):
        return [name]
    if name.startswith(_REPLAY):
        parts = _parts(name.removeprefix(_REPLAY))
        return [*_suffixes(_REPLAY, parts, ["/"] * len(parts)), name]
    archive = _archive_split(name)
    if archive is not None:
        outer, inner = _parts(archive[0]), _parts(archive[1])
        joiners = ["/"] * len(outer) + ["/"] * len(inner)
        if outer:
            joiners[len(outer) - 1] = ":"  # `logs.tar.gz:host1/server.log`
        return [*_suffixes("", outer + inner, joiners), name]
    remote = _remote(name) if not name.startswith("/") else None
    if remote is not None:
        host, who, path = remote
        parts = _parts(path)
        shown = _suffixes(f"{host}:", parts, ["/"] * len(parts))
        if who != host:
            shown += _suffixes(f"{who}:", parts, ["/"] * len(parts))
        return [*shown, name]
    parts = _parts(name)
    return [*_suffixes("", parts, ["/"] * len(parts)), name]


def short_names(sources: Iterable[str]) -> dict[str, str]:
    """source -> its short name: its shortest candidate that is no candidate of another source (so two
    short names never meet), else the name itself."""
    names = list(dict.fromkeys(sources))
    options = {name: candidates(name) for name in names}
    owners: dict[str, set[str]] = {}
    for name, shown in options.items():
        for text in shown:
            owners.setdefault(text, set()).add(name)
    return {name: next((t for t in shown if owners[t] == {name}), name) for name, shown in options.items()}


def as_typed(sources: Iterable[str], typed: Iterable[tuple[str, str]]) -> dict[str, str]:
    """source -> its name written from what the user typed: ``typed`` holds (as typed, resolved) pairs
    of the command's paths (`engine.cache.resolve_args`), and a source under a resolved path is shown
    under the typed one (`/home/me/logs/a/server.log` as `logs/a/server.log`), so a cited line can be
    pasted into `tracelens explain`. A source under none of them keeps its name."""
    pairs = sorted(((t, r.rstrip("/") or "/") for t, r in typed if t != r), key=lambda p: -len(p[1]))
    out = {}
    for source in sources:
        for shown, resolved in pairs:
            if source == resolved or source.startswith((resolved + "/", resolved + ":")):
                head, rest = shown.rstrip("/"), source[len(resolved) :]
                if head == "." and rest.startswith("/"):  # `check .`: `a/server.log`, not `./a/...`
                    head, rest = "", rest[1:]
                out[source] = head + rest if head or rest else source
                break
    return out
