"""Escaping for the three places log text ends up in the report.

Log text is untrusted: a line may hold `<script>`, `</script>`, `<img onerror=...>` or `javascript:`.
Every string that comes from a log (lines, messages, file names, run labels, server-arg values, model
paths) is escaped before it reaches the page:

- in HTML element content and attribute values by the page's templates themselves (Jinja2 with
  autoescape, `page.py`): a value is escaped unless it was marked safe on purpose, and only the page's
  own assets, its Content Security Policy and the figures' JSON (below) are; `text` is the same
  escaping for HTML written by hand (`None` shows as `-`, as the templates show it);
- `plot_text` for strings Plotly draws: Plotly reads a small HTML subset (`<b>`, `<br>`, `<a href>`) in
  trace names, tick labels and hover text, so `<` and `>` become entities, which Plotly shows as the
  characters themselves;
- `script_json` / `safe_json_text` for data embedded in `<script type="application/json">` blocks: `<`,
  `>` and `&` are written as JSON `\\u003c` escapes, so no `</script>` or `<!--` can end the block early.

The page never puts log text in a URL, an event-handler attribute or a `style`, and its Content
Security Policy only runs the page's own scripts (by hash), so even a missed escape would run nothing.
"""

from __future__ import annotations

import html
import json
from typing import Any

# JSON string escapes that keep a JSON text inert inside an HTML <script> element.
_SCRIPT_SAFE = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def text(value: Any) -> str:
    """HTML-escaped text for element content or a quoted attribute value; `None` shows as `-`."""
    return "-" if value is None else html.escape(str(value), quote=True)


def plot_text(value: Any) -> str:
    """A string for Plotly to draw as it is (its HTML subset neutralised)."""
    return "" if value is None else str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def script_json(value: Any) -> str:
    """JSON text that is safe inside `<script type="application/json">`."""
    return safe_json_text(json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")))


def safe_json_text(json_text: str) -> str:
    """Make an already encoded JSON text safe inside a `<script>` element (`<`, `>`, `&` can only occur
    inside JSON strings, where their `\\u` escapes mean the same)."""
    return json_text.translate(_SCRIPT_SAFE)


def clip(value: str, limit: int) -> str:
    """At most ``limit`` characters, with what was cut said at the end (a log line can be 10 MB)."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]} … ({len(value) - limit:,} more characters)"
