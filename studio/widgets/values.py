"""One-line previews of state values, for panes that must stay one row per item."""

from __future__ import annotations

import json
from typing import Any


def preview(value: Any, limit: int = 80) -> str:
    """JSON-ish text of `value`, cut to `limit` characters with an ellipsis."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"
