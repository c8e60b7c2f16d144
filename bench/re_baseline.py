"""The baseline tracelens is measured against: a plain, streaming Python `re` loop over the batch lines.

It types every `Decode batch` and `Prefill batch` line of the log with the same regexes as the lnav
format of the bench (bench/lnav-sglang-format.json, PCRE named groups spelt the Python way): time,
rank and every field, cast to int or float. Nothing is held: each line's values are folded into running
sums as it is read, so the loop costs what matching and casting cost, not what lists of rows cost (an
earlier version held every row and was about 5x slower, which flattered tracelens).

    python bench/re_baseline.py LOG
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

FORMAT = Path(__file__).resolve().parent / "lnav-sglang-format.json"
_INTS = {"tp", "running_req", "token", "queue_req", "new_seq", "new_token", "cached_token"}


def _pattern(name: str) -> re.Pattern[str]:
    spec = json.loads(FORMAT.read_text())["sglang_log"]["regex"][name]["pattern"]
    return re.compile(spec.replace("(?<", "(?P<"))


def parse(path: str) -> dict[str, float]:
    decode, prefill = _pattern("decode"), _pattern("prefill")
    sums: dict[str, float] = {"decode": 0, "prefill": 0}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if "Decode batch" in line:
                m, kind = decode.match(line), "decode"
            elif "Prefill batch" in line:
                m, kind = prefill.match(line), "prefill"
            else:
                continue
            if m is None:
                continue
            sums[kind] += 1
            sums["last_ts"] = dt.datetime.fromisoformat(m["timestamp"]).timestamp()
            for key, value in m.groupdict().items():
                if value is None or key in ("timestamp", "body", "cuda_graph"):
                    continue
                sums[key] = sums.get(key, 0) + (int(value) if key in _INTS else float(value))
    return sums


if __name__ == "__main__":
    print(parse(sys.argv[1]))
