"""`Log`: write a line to the Python log and, for the studio, to the event bus.

The message may be a `str.format` template over the node's namespace (`"rounds={rounds}"`)
or a function of that namespace's values; a bound input port fills the field of its name
(`Log(message="{n}").bind(inputs={"n": "rounds"})`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from py_trees.common import Status

from ..engine.behaviour import Behaviour
from ..engine.events import EventType

logger = logging.getLogger("jianmu.log")


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class Log(Behaviour):
    def __init__(self, name: str = "Log", message: str | Callable[[dict[str, Any]], str] = "",
                 level: str = "info", broadcast: bool = True, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        if not isinstance(logging.getLevelName(level.upper()), int):
            raise ValueError(f"Log {name!r}: unknown level {level!r} (debug, info, warning, error or critical)")
        self.message = message
        self.level = level.lower()
        self.broadcast = broadcast

    def update(self) -> Status:
        values = self._require_state().view(self.namespace)
        for port in self._input_bindings:
            values[port] = self.read_port(port)
        text = self.message(values) if callable(self.message) else self.message.format_map(_Missing(values))
        logger.log(logging.getLevelName(self.level.upper()), "%s: %s", self.path, text)
        if self.broadcast:
            self.emit(EventType.LOG, {"level": self.level, "message": text})
        return Status.SUCCESS


__all__ = ["Log"]
