"""One-line previews of state values, for panes that must stay one row per item."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_jsonable_python

from ..timeline import StoredList, whole


def preview(value: Any, limit: int = 80) -> str:
    """JSON text of `value` (models as their fields), cut to `limit` characters with an ellipsis."""
    text = json.dumps(to_jsonable_python(whole(value), fallback=repr), ensure_ascii=False)
    return fit(text.replace("\\n", "⏎"), limit)


def fit(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(value: Any, limit: int = 30) -> str:
    """A list or dict as its size (`[3 items]`: a stored list's is known unread), anything else as a
    short preview."""
    if isinstance(value, list | tuple | StoredList):
        return f"[{len(value)} item{'s' * (len(value) != 1)}]"
    if isinstance(value, dict):
        return f"{{{len(value)} key{'s' * (len(value) != 1)}}}"
    return preview(value, limit)
