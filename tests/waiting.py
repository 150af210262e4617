"""Waiting for something another process does (a server up, a checkpoint written), with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], what: str, limit: float = 60.0) -> Any:
    """Poll `condition` until it is true (its value returned); a failure naming `what` after `limit` s.
    A deadline for something that never comes, not a measurement."""
    deadline = time.monotonic() + limit
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)
