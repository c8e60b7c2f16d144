"""`server_args=ServerArgs(k=v, ...)` and the newer dict form `server_args={'k': v, ...}` -> key/value rows.

There is one such record per server start, so this reads the joined record text with a small scanner
(quotes and brackets aware) rather than a regex: values hold commas, nested lists, dicts and quotes.
"""

from __future__ import annotations

import polars as pl

from tracelens.tables.schema import C, T, conform

_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are outside quotes and brackets."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_server_args_text(text: str) -> tuple[str, list[tuple[str, str]]]:
    """('repr' | 'dict', [(key, value)]) of the text after `server_args=`; unclosed text is read as far
    as it goes (a record cut off mid-way keeps the keys it has)."""
    text = text.strip()
    if text.startswith("ServerArgs("):
        form, inner, sep = "repr", text[len("ServerArgs(") :], "="
        inner = inner[:-1] if inner.endswith(")") else inner
    elif text.startswith("{"):
        form, inner, sep = "dict", text[1:-1] if text.endswith("}") else text[1:], ":"
    else:
        return "unknown", []
    pairs: list[tuple[str, str]] = []
    for item in _split_top_level(inner):
        key, found, value = item.partition(sep)
        if found:
            pairs.append((_unquote(key.strip()), _unquote(value.strip())))
    return form, pairs


def server_args_table(records: pl.DataFrame) -> pl.DataFrame:
    """records: source, run, line_no, text (the joined record, starting at `server_args=`)."""
    rows: dict[str, list] = {C.SOURCE: [], C.RUN: [], C.LINE_NO: [], C.FORM: [], C.KEY: [], C.VALUE: []}
    for source, run, line_no, text in records.select(C.SOURCE, C.RUN, C.LINE_NO, C.TEXT).iter_rows():
        form, pairs = parse_server_args_text(text.split("server_args=", 1)[-1])
        for key, value in pairs:
            for column, v in zip(rows, (source, run, line_no, form, key, value), strict=True):
                rows[column].append(v)
    return conform(T.SERVER_ARGS, pl.DataFrame(rows, schema_overrides={C.RUN: pl.Int32, C.LINE_NO: pl.Int64}))
