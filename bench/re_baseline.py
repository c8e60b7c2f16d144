"""The baseline tracelens is measured against: the obvious plain-Python parser, one `re` match per line.

It reads the same fields a user would want from an EAGLE-3 session (prefix: time and ranks; batch
statistics by key; debug tag, site, event and items; access lines; lifecycle events; tracebacks as
records) into Python lists, then counts them. No tables are written, so it is a generous baseline.

    python bench/re_baseline.py LOG
"""

from __future__ import annotations

import re
import sys
from collections import Counter

PREFIX = re.compile(
    r"^\[(?:(\d{4}-\d\d-\d\d) )?(\d\d:\d\d:\d\d)(?:[.,](\d{1,6}))?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)
TAG = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)")
BATCH = re.compile(r"^(Prefill|Decode) batch(?: \[(\d+)\])?[.,]? ?")
PAIR = re.compile(r"([#\w][\w\- #()/]*?): ([^,\s]+)")
DEBUG = re.compile(r"([A-Z][A-Z0-9_]*_DEBUG)\[([^\]\s]*)\]\s*([^:=]*?):?\s")
ITEM = re.compile(r"([\w.]+)=(torch\.Size\(\[[^\]]*\]\)|\[[^\]]*\]|[^\s,\[\]]+)")
ACCESS = re.compile(r'^INFO: +(\S+) - "([A-Z]+) (\S+) (HTTP/[\d.]+)" (\d{3})')
LIFECYCLE = re.compile(
    r"^(server_args=|Init torch distributed|Load weight|KV Cache is allocated|Memory pool end|Capture cuda graph|max_total_num_tokens=)"
)
FRAME = re.compile(r"^(?:\s+\S|Traceback|[\w.]+(?:Error|Exception)\b)")
NUMBER = re.compile(r"^-?[\d.]+%?$")


def parse(path: str) -> Counter[str]:
    kinds: Counter[str] = Counter()
    rows: list[tuple] = []
    in_traceback = False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = PREFIX.match(line)
            ranks = {}
            body = line
            if m:
                ranks = {k: int(v) for k, v in TAG.findall(m.group(4))}
                ts = f"{m.group(1)} {m.group(2)}"
                body = line[m.end() :]
            else:
                ts = None
            if not m and in_traceback and FRAME.match(line):
                kinds["fault"] += 1
                continue
            in_traceback = False
            if "_DEBUG[" in body:
                d = DEBUG.search(body)
                if d:
                    items = ITEM.findall(body, d.end())
                    rows.append(("debug", ts, ranks, d.group(1), d.group(2), d.group(3), items))
                    kinds["debug"] += 1
                    continue
            b = BATCH.match(body)
            if b:
                fields = {}
                for key, value in PAIR.findall(body, b.end()):
                    value = value.rstrip(".")
                    if NUMBER.match(value):
                        fields[key] = float(value.rstrip("%"))
                    elif value in ("True", "False"):
                        fields[key] = value == "True"
                rows.append(("batch", ts, ranks, b.group(1), fields))
                kinds["batch"] += 1
                continue
            a = ACCESS.match(body)
            if a:
                rows.append(("http", ts, a.groups()))
                kinds["http"] += 1
                continue
            if LIFECYCLE.match(body):
                kinds["lifecycle"] += 1
                continue
            if "Traceback (most recent call last)" in body:
                in_traceback = True
                kinds["fault"] += 1
                continue
            kinds["message" if m else "other"] += 1
    kinds["rows"] = len(rows)
    return kinds


if __name__ == "__main__":
    print(dict(parse(sys.argv[1])))
